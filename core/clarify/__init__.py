"""The clarify task: a vague request, a simulated user who knows the answers, a scored plan.

Modules, in the order a reader meets them: ``families`` (the five task families as data),
``scenarios`` (the generator, the published file format, named sets; ``data/`` holds our frozen
held-out set), ``user_sim`` (the rule-based simulated user), ``rubrics`` (v1 published scoring, v2
corrected), ``environment`` (``ClarifyEnv``), ``toolcalls`` (a turn's text as a ``ToolCall``),
``agent`` (what a chat model sees), ``asking`` (a scripted question and reading its answer),
``policies`` (scripted baselines, ``make_policy``), ``cued`` (scenario set v3's cues and their known
posteriors), ``cued_policies`` (ask while the expected gain beats the cost: ``bayes``, ``ask-all``),
``calibrated_agent`` (``decision:MODEL``, that loop on a decision model's beliefs),
``chat_policy`` (any Hugging Face chat model as a policy), ``kv_cache`` (its keys and values reused
across turns), ``model_slots`` (one generation at a time per loaded model, a bounded queue),
``endpoint_policy`` (any OpenAI-compatible chat endpoint as a policy), and the
environment as a service: ``service`` (one session: reset, calls, the episode), ``serve`` (``python
-m core.clarify.serve`` over openenv-core) and ``remote`` (any policy playing a served episode).
Submodules are imported by name, so importing the package costs nothing (``chat_policy`` pulls in
torch).
"""

__all__ = ["agent", "asking", "calibrated_agent", "chat_policy", "cued", "cued_policies", "endpoint_policy",
           "environment", "families", "kv_cache", "model_slots", "policies", "remote", "rubrics", "scenarios",
           "serve", "service", "toolcalls", "user_sim"]
