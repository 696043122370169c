"""Cued clarify requests as decision rows: the calibrated agent's own questions, with known posteriors.

One context per v3 scenario drawn from the TRAINING seeds (``core.clarify.scenarios.generate_cued``): the state is the
request text, one choice question per required field (``field_question``: options = the field's
values, in vocabulary order, no NOTA, as the agent asks them), the label is the hidden value (drawn
by the generator from the known posterior) and the posterior is kept for evaluation. Each training
partition takes its own block of seeds (``CUED_SEED_BLOCKS``), so no scenario lands in two.
"""

from typing import Iterable

from core.clarify.cued import KINDS, field_question
from core.clarify.families import DIFFICULTIES, FIELDS
from core.clarify.scenarios import CUED_TRAIN_SEEDS, generate_cued
from core.decision.data.rows import DecisionRow
from core.records import Scenario

CUED_SEED_BLOCKS = {"format": range(0, 1000), "warmup": range(1000, 1200), "rl": range(1200, 2000)}
"""Training seeds per partition; each seed gives its easy, medium and hard scenario (3 contexts)."""
assert all(b.start >= CUED_TRAIN_SEEDS.start and b.stop <= CUED_TRAIN_SEEDS.stop for b in CUED_SEED_BLOCKS.values())


def scenario_rows(scenario: Scenario, kinds: Iterable[str] = KINDS) -> list[DecisionRow]:
    """One row per required field of a cued scenario whose cue is of one of ``kinds``."""
    if scenario.cues is None:
        raise ValueError(f"{scenario.id} carries no cues (not a clarifylab-cued-v3 scenario)")
    rows = []
    for field in scenario.required_keys:
        cue = scenario.cues.fields[field]
        if cue.kind not in kinds:
            continue
        text, options = field_question(field)
        rows.append(DecisionRow(
            context_id=f"cued-{scenario.id}", source="cued", state=scenario.request, question=text,
            options=options, kind="choice", label=list(FIELDS[field].values).index(scenario.hidden_profile[field]),
            posterior=list(cue.posterior), tags=[f"cue_{cue.kind}", field]))
    return rows


def cued_contexts(partition: str, n: int, kinds: Iterable[str] = KINDS) -> list[list[DecisionRow]]:
    """The first ``n`` cued contexts of ``partition``'s seed block (seed-major, easy/medium/hard).

    ``kinds`` keeps only the questions whose cue is of those kinds (a context may then be empty):
    ``("clear",)`` gives the noise-free rows a body first learns to read a cue from (docs/decision_models.md).
    """
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown cue kinds {sorted(unknown)}; expected some of {KINDS}")
    if n == 0:
        return []
    block = CUED_SEED_BLOCKS.get(partition)
    if block is None:
        raise ValueError(f"cued rows go only to the training partitions {sorted(CUED_SEED_BLOCKS)}, not {partition!r}")
    if n > len(block) * len(DIFFICULTIES):
        raise ValueError(f"{partition}: {n} cued contexts asked, its seed block holds {len(block) * len(DIFFICULTIES)}")
    pairs = [(seed, d) for seed in block for d in DIFFICULTIES][:n]
    return [scenario_rows(generate_cued(seed, d), kinds) for seed, d in pairs]


def interleave(contexts: list[list[DecisionRow]], extra: list[list[DecisionRow]]) -> list[DecisionRow]:
    """Spread ``extra`` contexts evenly among ``contexts`` (whose rows and order stay as they are)."""
    out: list[DecisionRow] = []
    j = 0
    for i, rows in enumerate(contexts):
        out.extend(rows)
        while j < len(extra) and (j + 1) * len(contexts) <= (i + 1) * len(extra):
            out.extend(extra[j])
            j += 1
    for rows in extra[j:]:
        out.extend(rows)
    return out
