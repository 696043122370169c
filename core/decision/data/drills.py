"""Binding drills for the from-scratch format stage: the state names one option's text verbatim.

A choice answer needs two skills: knowing which option text the state supports, and reading the
letter printed in front of that option. The real sources mix both (a triage choice first maps a
cue phrase to a department), and a body trained from random weights learned neither from them:
its choice accuracy stayed at chance. A drill isolates the second skill: a short record whose one
matching line holds an option's text exactly, shuffled options (with the sources' NOTA injection),
and the label. Values come from the sources' own option vocabularies plus made-up words, so the
model learns "find the option that matches, answer its letter" rather than a fixed lookup table.
Drills are generated on the fly from a ``random.Random`` and never enter the evaluated partitions.
"""

import json
import random

from core.decision.data.access import LEVELS, ROLES, SYSTEMS
from core.decision.data.nota import choice_options, injection_tags
from core.decision.data.orders import CARRIERS, PAYMENTS, STATUSES
from core.decision.data.rows import DecisionRow, determined_row
from core.decision.data.triage import DEPARTMENTS, PRIORITIES, TIERS

SOURCE = "drill"
KNOWN_VALUES = sorted(set(SYSTEMS + LEVELS + ROLES + STATUSES + CARRIERS + PAYMENTS + DEPARTMENTS
                          + PRIORITIES + TIERS))
"""Every option text the real choice questions use, and the other enum values of their states."""
FIELDS = ["status", "system", "team", "code", "owner", "region", "plan", "label", "stage", "queue"]
QUESTIONS = ["Which of these values appears in the record?", "Which option does the record name?",
             "What value is recorded here?"]
_SYLLABLES = ["KA", "LO", "MI", "TRE", "VAN", "SO", "RU", "PEL", "DOR", "NIX", "BA", "ZU", "GRO", "FEN"]


def made_up_value(rng: random.Random) -> str:
    """An upper-case pseudo-word (sometimes two joined by ``_``) that no source uses."""
    word = lambda: "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))  # noqa: E731
    return word() + ("_" + word() if rng.random() < 0.25 else "")


def draw_values(rng: random.Random, n: int) -> list[str]:
    """``n`` values, each from the known vocabulary or made up with even odds.

    No value is part of another (``DORFEN`` and ``DORFENTRE`` never meet), so exactly one option
    text appears in the state, even as a prefix.
    """
    out: list[str] = []
    while len(out) < n:
        v = rng.choice(KNOWN_VALUES) if rng.random() < 0.5 else made_up_value(rng)
        if not any(v in u or u in v for u in out):
            out.append(v)
    return out


def render_record(pairs: list[tuple[str, str]], rng: random.Random) -> str:
    """The drill's state: ``field: VALUE`` lines or a JSON object, like the real sources."""
    if rng.random() < 0.5:
        return json.dumps(dict(pairs))
    return "\n".join(f"{k.capitalize()}: {v}" for k, v in pairs)


def drill_row(rng: random.Random, context_number: int, easy: bool = False) -> DecisionRow:
    """One drill: a record naming the answer among 0-3 unrelated values, and 2..6 options.

    ``easy``: one line, 2 or 3 options, known values, no NOTA, the first rung of the curriculum
    (a random body finds the binding there within a few hundred steps; see ``drill_rows``).
    """
    k = rng.randint(2, 3) if easy else rng.randint(2, 6)
    if easy:
        answer, *distractors = rng.sample(KNOWN_VALUES, k)
        while any(a in b for a in [answer, *distractors] for b in [answer, *distractors] if a != b):
            answer, *distractors = rng.sample(KNOWN_VALUES, k)
        options = [answer, *distractors]
        rng.shuffle(options)
        return determined_row(f"drill-{context_number}", SOURCE, render_record([(rng.choice(FIELDS), answer)], rng),
                              rng.choice(QUESTIONS), options, "choice", options.index(answer), ["drill", "easy"])
    answer, *rest = draw_values(rng, k + 3)
    distractors, noise = rest[: k - 1], rest[k - 1 : k - 1 + rng.randint(0, 3)]
    names = rng.sample(FIELDS, 1 + len(noise))
    pairs = list(zip(names, [answer, *noise]))
    rng.shuffle(pairs)
    opts = choice_options(answer, distractors, rng)
    return determined_row(f"drill-{context_number}", SOURCE, render_record(pairs, rng), rng.choice(QUESTIONS),
                          opts.options, "choice", opts.label, injection_tags(opts.injection, "drill"))


def drill_rows(seed: int, n: int, easy_share: float = 0.0) -> list[DecisionRow]:
    """``n`` drills, deterministic in ``seed``; the first ``easy_share`` of them are easy.

    A curriculum: a loop that takes drills in order sees the easy rung first.
    """
    if n < 0:
        raise ValueError(f"drill count must be >= 0, got {n}")
    if not 0.0 <= easy_share <= 1.0:
        raise ValueError(f"easy_share is a fraction in [0, 1], got {easy_share}")
    rng = random.Random(f"decision-drills/{seed}")
    n_easy = round(easy_share * n)
    return [drill_row(rng, i, easy=i < n_easy) for i in range(n)]
