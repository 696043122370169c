"""Agents that play the clarify environment: scripted baselines, and ``make_policy`` for any name.

A policy drives one env until it is done: ``policy.play(env, rng)``. The scripted ones need no
model and bound what a model can reach: ``oracle`` (knows the hidden profile, asks one revealing
question per field), ``guess`` (asks nothing), ``ask-required`` (one plain question per required
key), ``random``. ``model:PATH`` loads a chat model through ``core.clarify.chat_policy`` (imported lazily,
so importing this module never pulls in torch); ``openai:BASE_URL#MODEL`` plays through an
OpenAI-compatible endpoint (``core.clarify.endpoint_policy``).
"""

import random
from functools import lru_cache
from typing import Protocol, runtime_checkable

from core.clarify.cued import map_value, posterior
from core.clarify.environment import ClarifyEnv, render_call
from core.clarify.families import FAMILIES, FIELDS
from core.records import Generation, ToolCall, Turn, trusted
from core.clarify.rubrics import normalise_value
from core.clarify.user_sim import match_field, normalise_question

UNKNOWN = "unknown"
NATURAL_QUESTIONS = {
    "stack": "Which tech stack should I use?", "scale": "How many users do you expect?",
    "auth": "What authentication do you need?", "datastore": "Which database should it use?",
    "deployment_target": "Where should I deploy it?", "language_version": "Which runtime version do you want?",
    "test_coverage": "What test coverage do you want?", "primary_symptom": "What symptom are you having?",
    "duration": "How long have you had it?", "severity": "How bad is it?", "age_band": "How old are you?",
    "prior_conditions": "Any medical history I should know about?", "medications": "Are you taking any medication?",
    "order_id": "What is your order number?", "item_issue": "What happened with the item?",
    "refund_or_replace": "Would you like a refund or a replacement?", "urgency": "How soon do you need it?",
    "channel_preferred": "How should we contact you?", "participants": "Who will attend?",
    "date": "What date works?", "time": "What time works best?", "duration_minutes": "How long should it be?",
    "platform": "Which platform should we use?", "event_type": "What kind of event is it?",
    "guest_count": "How many guests are coming?", "venue": "Where should it be held?",
    "budget_band": "What is your budget?", "theme": "What theme or vibe do you want?",
    "dietary_constraints": "Any dietary restrictions?",
}
"""The oracle's first choice per field; used only when the simulator maps it to that field."""
QUESTION_TEMPLATES = ("Could you tell me about the {kw}?", "{kw}?")
"""Fallback: a keyword wrapped in a template (longest keyword first)."""


@runtime_checkable
class Policy(Protocol):
    """Anything with a name that can play an episode to its end."""

    name: str

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        """Step ``env`` until ``env.done``."""


def act(env: ClarifyEnv, name: str, **arguments) -> Turn:
    """Make one tool call; the raw text is the call's plain-text form."""
    call = trusted(ToolCall, name=name, arguments=arguments)
    return env.step(call, render_call(call))


@lru_cache(maxsize=None)
def revealing_question(field: str, profile_fields: tuple[str, ...], version: str) -> str | None:
    """A question the simulator maps to ``field`` among ``profile_fields``, or None if none does."""
    natural = NATURAL_QUESTIONS.get(field)
    if natural and match_field(normalise_question(natural), profile_fields, version) == field:
        return natural
    for kw in sorted(FIELDS[field].keywords, key=len, reverse=True):
        for template in QUESTION_TEMPLATES:
            question = template.format(kw=kw)
            if match_field(normalise_question(question), profile_fields, version) == field:
                return question
    return None


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


def read_value(field: str, answer: str):
    """The vocabulary value of ``field`` stated in an answer (longest one), or None."""
    text = " " + normalise_value(answer).rstrip(".!?") + " "
    found = [v for v in FIELDS[field].values if f" {normalise_value(v)} " in text]
    return max(found, key=lambda v: len(str(v))) if found else None


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
CUED_NAMES = ("bayes", "ask-all")
"""Ask-or-act baselines for the cued scenarios (``core.clarify.cued_policies``); ``decision:MODEL`` too."""


def make_policy(name: str, generation: Generation | None = None, **endpoint_options) -> Policy:
    """A scripted policy by name, ``model:PATH`` for a chat model, ``openai:BASE_URL#MODEL`` for an endpoint.

    ``model:PATH`` calls ``core.clarify.chat_policy.load_chat_policy(PATH, generation=...)``; scripted
    policies ignore ``generation`` (they sample nothing); ``endpoint_options`` go to
    ``core.clarify.endpoint_policy.EndpointPolicy`` (timeout_s, retries, backoff_s, concurrency).
    """
    if name in SCRIPTED:
        return SCRIPTED[name]
    if name in CUED_NAMES or name.startswith("decision:"):
        from core.clarify.calibrated_agent import make_cued_policy  # lazy: decision models need torch

        return make_cued_policy(name)
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
