"""Option-set construction shared by the sources: shuffling and "none of the above" injection.

The injection keeps the option count: with p 0.15 the true option is removed and NOTA becomes
the answer, with p 0.35 one distractor is removed and NOTA is offered as a distractor. NOTA is
always last; the other options of an unordered (choice) question are shuffled. Because injection
depends on the label, the displayed set carries information; ``choice_posterior`` accounts for it.
"""

import random
from dataclasses import dataclass
from typing import Mapping, Sequence

from core.decision.data.rows import NOTA

P_NOTA_ANSWER = 0.15
P_NOTA_DISTRACTOR = 0.35


@dataclass(frozen=True)
class OptionSet:
    """Displayed options of a choice question and the index of the answer."""

    options: list[str]
    label: int
    injection: str
    """``none``, ``nota_answer`` or ``nota_distractor``."""


def choice_options(answer: str, distractors: Sequence[str], rng: random.Random) -> OptionSet:
    """Build a shuffled option list with NOTA injection from the answer and its distractors."""
    if answer in distractors:
        raise ValueError(f"answer {answer!r} is also a distractor")
    if not distractors:
        raise ValueError("a choice question needs at least one distractor")
    u = rng.random()
    shown = [answer, *distractors]
    injection = "none"
    if u < P_NOTA_ANSWER:
        shown, injection = list(distractors), "nota_answer"
    elif u < P_NOTA_ANSWER + P_NOTA_DISTRACTOR:
        dropped = rng.choice(list(distractors))
        shown, injection = [o for o in shown if o != dropped], "nota_distractor"
    rng.shuffle(shown)
    if injection == "none":
        return OptionSet(shown, shown.index(answer), injection)
    options = [*shown, NOTA]
    label = len(options) - 1 if injection == "nota_answer" else options.index(answer)
    return OptionSet(options, label, injection)


def choice_posterior(options: Sequence[str], universe: Sequence[str], prior: Mapping[str, float]) -> list[float]:
    """Exact posterior over displayed options when ``universe`` was the full candidate set.

    Applies only when every candidate not chosen as the answer was a distractor (the full
    universe was offered before injection). Bayes over the hidden label ``l`` with prior
    ``prior[l]``: likelihood of the displayed set is 0.15 when ``l`` is missing and NOTA is shown
    (then NOTA is the answer), 0.35 / (n_distractors) when ``l`` is shown beside NOTA, and 0.5 when
    nothing was injected.
    """
    shown = set(options)
    has_nota = NOTA in shown
    weights = [0.0] * len(options)
    for label, p in prior.items():
        if p == 0.0:
            continue
        if label not in shown:
            if has_nota and shown == (set(universe) - {label}) | {NOTA}:
                weights[options.index(NOTA)] += p * P_NOTA_ANSWER
        elif has_nota:
            weights[options.index(label)] += p * P_NOTA_DISTRACTOR / (len(universe) - 1)
        elif shown == set(universe):
            weights[options.index(label)] += p * (1.0 - P_NOTA_ANSWER - P_NOTA_DISTRACTOR)
    total = sum(weights)
    if total == 0.0:
        raise ValueError(f"options {list(options)} are impossible under the prior {dict(prior)}")
    return [w / total for w in weights]


def injection_tags(injection: str, *names: str) -> list[str]:
    """Row tags for an option set: the injection (unless ``none``) then ``names``."""
    return ([] if injection == "none" else [injection]) + list(names)
