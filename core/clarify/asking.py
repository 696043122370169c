"""How a scripted agent asks: one tool call, a question the simulated user maps to a field, reading a value back.

Shared by the scripted baselines (``core.clarify.policies``) and the ask-or-act loop
(``core.clarify.cued_policies``); it imports neither, so both can build on it.
"""

from functools import lru_cache

from core.clarify.environment import ClarifyEnv, render_call
from core.clarify.families import FIELDS
from core.clarify.rubrics import normalise_value
from core.clarify.user_sim import match_field, normalise_question
from core.records import ToolCall, Turn, trusted

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


def read_value(field: str, answer: str):
    """The vocabulary value of ``field`` stated in an answer (longest one), or None."""
    text = " " + normalise_value(answer).rstrip(".!?") + " "
    found = [v for v in FIELDS[field].values if f" {normalise_value(v)} " in text]
    return max(found, key=lambda v: len(str(v))) if found else None
