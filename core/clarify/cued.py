"""Scenario set v3 (``clarifylab-cued-v3``): requests that carry cues with a KNOWN posterior.

Each scenario reuses a family and request template from ``core.clarify.scenarios`` and adds one
sentence per required field of a drawn cue kind: ``none`` (no sentence; the posterior is the uniform
prior), ``clear`` (names one value; certain), ``two`` (names two values; 0.5/0.5) or ``weak`` (names one
value with a hedge; ``WEAK_P`` on it, the rest shared evenly). The hidden value is drawn from that
posterior, so the generator's posterior is exact by symmetry; it is stored in ``Scenario.cues``. The
simulated user answers as in v2. ``field_question`` is the one choice question per field that the
decision data trains on and the calibrated agent asks. ``core.clarify.scenarios.generate_cued`` draws
the scenarios with these cues (docs/environment.md, "Ask or act").
"""

import random
from typing import Sequence

from core.clarify.families import FIELDS
from core.records import CueKind, FieldCue, Scenario, Value

KINDS: tuple[CueKind, ...] = ("none", "clear", "two", "weak")
CUE_MIX = {"easy": (0.2, 0.4, 0.2, 0.2), "medium": (0.3, 0.25, 0.2, 0.25), "hard": (0.4, 0.1, 0.25, 0.25)}
"""P(cue kind) per required field, in ``KINDS`` order: harder scenarios say less for sure."""
WEAK_P = 0.7
"""Posterior of the value a weak cue names."""

INFORMATIVE_REQUESTS = frozenset({"Plan a birthday party.", "Organize a team event.", "My order is wrong."})
"""Family request templates that hint a field's value; v3 swaps them for a neutral one so every
field's posterior is exactly its cue's."""
NOUNS = {
    "refund_or_replace": "resolution", "duration_minutes": "length in minutes", "budget_band": "budget",
    "age_band": "age group", "order_id": "order number", "item_issue": "problem with the item",
    "channel_preferred": "contact channel", "primary_symptom": "main symptom", "language_version": "runtime version",
    "event_type": "kind of event", "participants": "attendees",
}
"""How the request and the decision question name a field (default: its name with spaces)."""
TEMPLATES: dict[str, tuple[str, ...]] = {
    "clear": ("The {noun} is {a}.", "{Noun}: {a}.", "For the {noun}, definitely {a}."),
    "two": ("The {noun} is {a} or {b}, I can't decide.", "{Noun}: either {a} or {b}.",
            "For the {noun}, {a} and {b} are both possible."),
    "weak": ("The {noun} is probably {a}, but I'm not sure.", "{Noun}: I think {a}, not certain.",
             "For the {noun}, perhaps {a}."),
}


def noun(field: str) -> str:
    return NOUNS.get(field, field.replace("_", " "))


def field_question(field: str) -> tuple[str, list[str]]:
    """The choice question about ``field``: (text, options = its vocabulary as text, in order)."""
    return f"What should the {noun(field)} be?", [str(v) for v in FIELDS[field].values]


def draw_cue(field: str, kind: CueKind, rng: random.Random) -> tuple[FieldCue, Value, str]:
    """One field's cue, its hidden value (drawn from the posterior) and its sentence ('' for none)."""
    values = list(FIELDS[field].values)
    if kind == "none":
        return FieldCue(kind=kind, hinted=[], posterior=cue_posterior(field, kind, [])), rng.choice(values), ""
    if kind == "two":
        hinted = rng.sample(values, 2)
        value = rng.choice(hinted)
    else:
        hinted = [rng.choice(values)]
        if kind == "clear" or rng.random() < WEAK_P:
            value = hinted[0]
        else:
            value = rng.choice([v for v in values if v != hinted[0]])
    template = rng.choice(TEMPLATES[kind])
    text = cue_sentence(template, field, hinted)
    return FieldCue(kind=kind, hinted=hinted, posterior=cue_posterior(field, kind, hinted)), value, text


def cue_sentence(template: str, field: str, hinted: Sequence[Value]) -> str:
    """One of ``TEMPLATES``' sentences about ``field`` naming the ``hinted`` values."""
    return template.format(noun=noun(field), Noun=noun(field).capitalize(), a=hinted[0], b=hinted[-1])


def cue_posterior(field: str, kind: CueKind, hinted: Sequence[Value]) -> list[float]:
    """P(value | a cue of ``kind`` naming ``hinted``), in the field's vocabulary order: the uniform prior (none),
    certain (clear), 0.5/0.5 (two), ``WEAK_P`` on the named value and the rest shared evenly (weak)."""
    values = list(FIELDS[field].values)
    k = len(values)
    if kind == "none":
        return [1.0 / k] * k
    if kind == "two":
        return [0.5 if v in hinted else 0.0 for v in values]
    p = 1.0 if kind == "clear" else WEAK_P
    return [p if v == hinted[0] else (1.0 - p) / (k - 1) for v in values]


def posterior(scenario: Scenario, field: str) -> list[float]:
    """The generator's posterior of ``field`` (the uniform prior for a scenario without cues)."""
    if scenario.cues is not None and field in scenario.cues.fields:
        return list(scenario.cues.fields[field].posterior)
    k = len(FIELDS[field].values)
    return [1.0 / k] * k


def map_value(field: str, probs: Sequence[float]) -> Value:
    """The most probable value of ``field`` (ties: the earlier vocabulary value)."""
    values = FIELDS[field].values
    if len(probs) != len(values):
        raise ValueError(f"{field}: {len(probs)} probabilities for {len(values)} values")
    return values[max(range(len(values)), key=lambda i: (probs[i], -i))]
