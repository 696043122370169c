"""Agents that play the clarify environment: scripted baselines, and ``make_policy`` for any name.

A policy drives one env until it is done: ``policy.play(env, rng)``. The scripted ones need no
model and bound what a model can reach: ``oracle`` (knows the hidden profile, asks one revealing
question per field), ``guess`` (asks nothing), ``ask-required`` (one plain question per required
key), ``random``; for the cued scenarios ``bayes`` and ``ask-all`` (``core.clarify.cued_policies``) and
``decision:MODEL`` (``core.clarify.calibrated_agent``, lazily). ``model:PATH`` loads a chat model through
``core.clarify.chat_policy`` (imported lazily, so importing this module never pulls in torch);
``openai:BASE_URL#MODEL`` plays through an
OpenAI-compatible endpoint (``core.clarify.endpoint_policy``).
"""

import random
from typing import Protocol, runtime_checkable

from core.clarify.asking import act, read_value, revealing_question  # noqa: F401 (callers import them from here)
from core.clarify.cued import map_value, posterior
from core.clarify.cued_policies import CUED_POLICIES
from core.clarify.environment import ClarifyEnv
from core.clarify.families import FAMILIES, FIELDS
from core.records import Generation

UNKNOWN = "unknown"


@runtime_checkable
class Policy(Protocol):
    """Anything with a name that can play an episode to its end."""

    name: str

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        """Step ``env`` until ``env.done``."""


def _ask_order(env: ClarifyEnv) -> list[str]:
    """Profile fields, critical ones first, as many as budget and steps allow (one step for the plan)."""
    s = env.scenario
    fields = [f for f in s.hidden_profile if f in s.critical_fields] + [f for f in s.hidden_profile if f not in s.critical_fields]
    room = min(s.max_questions - env.questions_asked, s.max_steps - env.steps - 1)
    return fields[:max(room, 0)]


class Oracle:
    """Knows the hidden profile: one revealing question per field, then the profile as the plan."""

    name = "oracle"

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        s = env.scenario
        act(env, "get_task_info")
        profile_fields = tuple(s.hidden_profile)
        for field in _ask_order(env):
            question = revealing_question(field, profile_fields, env.rubric)
            if question is not None and not env.done:
                act(env, "ask_question", question=question)
        plan = dict(s.hidden_profile)
        for key in s.required_keys:
            plan.setdefault(key, UNKNOWN)
        if not env.done:
            act(env, "propose_plan", plan=plan)


class Guess:
    """Asks nothing: every required key filled with its most probable value given the request's cues
    (ties to the earlier value, so without cues: the first value of its vocabulary)."""

    name = "guess"

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        act(env, "get_task_info")
        s = env.scenario
        act(env, "propose_plan", plan={k: map_value(k, posterior(s, k)) for k in s.required_keys})


class AskRequired:
    """One plain question per required key ("What is the guest count?"), then what it read.

    Keys whose answer states no value of that key's vocabulary are submitted as "unknown".
    """

    name = "ask-required"

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        act(env, "get_task_info")
        plan = {}
        for key in env.scenario.required_keys:
            if env.done or env.questions_asked >= env.scenario.max_questions or env.steps >= env.scenario.max_steps - 1:
                break
            turn = act(env, "ask_question", question=f"What is the {key.replace('_', ' ')}?")
            value = read_value(key, turn.result.get("answer", ""))
            plan[key] = UNKNOWN if value is None else value
        for key in env.scenario.required_keys:
            plan.setdefault(key, UNKNOWN)
        if not env.done:
            act(env, "propose_plan", plan=plan)


class RandomPolicy:
    """Uniform-ish random play: task info 10%, a question 65% (about a random family field or
    nothing), a plan 25% (random vocabulary values, each required key dropped with p=0.2)."""

    name = "random"

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        family = FAMILIES[env.scenario.family]
        while not env.done:
            r = rng.random()
            if r < 0.10:
                act(env, "get_task_info")
            elif r < 0.75:
                field = FIELDS[rng.choice(family.fields)]
                question = rng.choice([f"What about the {rng.choice(field.keywords)}?", "Anything else I should know?"])
                act(env, "ask_question", question=question)
            else:
                plan = {k: rng.choice(FIELDS[k].values) for k in family.required if rng.random() >= 0.2}
                act(env, "propose_plan", plan=plan)


SCRIPTED = {p.name: p for p in (Oracle(), Guess(), AskRequired(), RandomPolicy())}
CUED_NAMES = tuple(CUED_POLICIES)
"""Ask-or-act baselines for the cued scenarios (``core.clarify.cued_policies``); ``decision:MODEL`` too."""


def make_policy(name: str, generation: Generation | None = None, **endpoint_options) -> Policy:
    """A scripted policy by name, ``model:PATH`` for a chat model, ``openai:BASE_URL#MODEL`` for an endpoint.

    ``model:PATH`` calls ``core.clarify.chat_policy.load_chat_policy(PATH, generation=...)``; scripted
    policies ignore ``generation`` (they sample nothing); ``endpoint_options`` go to
    ``core.clarify.endpoint_policy.EndpointPolicy`` (timeout_s, retries, backoff_s, concurrency).
    """
    if name in SCRIPTED:
        return SCRIPTED[name]
    if name in CUED_POLICIES:
        return CUED_POLICIES[name]
    if name.startswith("decision:"):
        from core.clarify.calibrated_agent import make_calibrated_agent  # lazy: decision models need torch

        return make_calibrated_agent(name)
    if name.startswith("openai:"):
        from core.clarify.endpoint_policy import make_endpoint_policy

        return make_endpoint_policy(name, generation, **endpoint_options)
    if name.startswith("model:"):
        path = name[len("model:"):]
        if not path:
            raise ValueError("model:PATH needs a checkpoint path after 'model:'")
        from core.clarify.chat_policy import load_chat_policy  # lazy: scripted policies need no torch

        return load_chat_policy(path, generation=generation)
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join([*SCRIPTED, *CUED_NAMES])}, model:PATH, "
                     "openai:BASE_URL#MODEL or decision:MODEL")
