"""Context-grouped partitions of the decision dataset, and the known-posterior probe.

Each partition draws its own contexts from a ``random.Random`` keyed by (seed, partition), with
ids from disjoint ranges, so every question about one state lands in exactly one partition and a
partition never changes when another one's size does. Partitions: ``format`` (the from-scratch
reading stage), ``warmup`` (the labelled SFT slice), ``rl`` (disjoint rows for the RL, oracle and
supervised-continuation arms), ``val`` (stop rule), ``test`` (reported numbers). The three training
partitions also hold cued clarify requests (``core.decision.data.cued``), spread among their own
contexts, which keep their rows and order; ``val`` and ``test`` hold none, so reported numbers
stay comparable with runs before the cued rows.
"""

import random
from dataclasses import dataclass, field

from core.clarify.cued import KINDS
from core.decision.data.access import access_rows
from core.decision.data.cued import CUED_SEED_BLOCKS, cued_contexts, interleave
from core.decision.data.orders import order_rows
from core.decision.data.rows import DecisionRow
from core.decision.data.triage import draw_ticket, ticket_rows

PARTITIONS = ("format", "warmup", "rl", "val", "test")
SOURCES = ("triage", "orders", "access")
ID_STRIDE = 1_000_000
"""Context ids of partition i start at (i + 1) * ID_STRIDE, so partitions never share one."""


@dataclass(frozen=True)
class DataSpec:
    """How many contexts (three questions each) each partition holds, and the source mix."""

    contexts: dict[str, int] = field(default_factory=lambda: {
        "format": 14000, "warmup": 2134, "rl": 8000, "val": 400, "test": 2667})
    source_weights: tuple[float, float, float] = (0.5, 0.25, 0.25)
    """Share of triage, orders and access contexts."""
    cued: dict[str, int] = field(default_factory=lambda: {"format": 3000, "warmup": 600, "rl": 2400})
    """Cued clarify-request contexts (one per v3 training scenario) added to each training partition."""
    cued_kinds: tuple[str, ...] = KINDS
    """Cue kinds whose questions the cued contexts keep (all by default)."""

    def __post_init__(self):
        unknown = set(self.contexts) - set(PARTITIONS)
        if unknown:
            raise ValueError(f"unknown partitions {sorted(unknown)}; expected some of {PARTITIONS}")
        if any(n < 0 for n in self.contexts.values()):
            raise ValueError(f"context counts must be >= 0, got {self.contexts}")
        if set(self.cued) - set(CUED_SEED_BLOCKS) or any(n < 0 for n in self.cued.values()):
            raise ValueError(f"cued contexts go to {sorted(CUED_SEED_BLOCKS)} only, as counts >= 0; got {self.cued}")
        if len(self.source_weights) != 3 or min(self.source_weights) < 0 or sum(self.source_weights) <= 0:
            raise ValueError(f"source_weights needs three non-negative shares, got {self.source_weights}")


def context_rows(source: str, rng: random.Random, context_number: int) -> list[DecisionRow]:
    """The three rows of one freshly drawn context of ``source``."""
    cid = str(context_number)
    if source == "triage":
        return ticket_rows(draw_ticket(rng, cid), rng)
    if source == "orders":
        return order_rows(rng, cid)
    if source == "access":
        return access_rows(rng, cid)
    raise ValueError(f"unknown source {source!r}; expected one of {SOURCES}")


def build_partition(name: str, n_contexts: int, seed: int, spec: DataSpec) -> list[DecisionRow]:
    """Draw ``n_contexts`` contexts for partition ``name`` (deterministic in seed and name)."""
    if name not in PARTITIONS:
        raise ValueError(f"unknown partition {name!r}; expected one of {PARTITIONS}")
    rng = random.Random(f"decision-data/{seed}/{name}")
    base = (PARTITIONS.index(name) + 1) * ID_STRIDE
    contexts = []
    for i in range(n_contexts):
        source = rng.choices(SOURCES, weights=spec.source_weights)[0]
        contexts.append(context_rows(source, rng, base + i))
    return interleave(contexts, cued_contexts(name, spec.cued.get(name, 0), spec.cued_kinds))


def build_dataset(seed: int, spec: DataSpec) -> dict[str, list[DecisionRow]]:
    """Every partition in ``spec``, keyed by name."""
    return {name: build_partition(name, n, seed, spec) for name, n in spec.contexts.items()}


def probe_rows(seed: int, n_per_kind: int = 500) -> list[DecisionRow]:
    """Fresh tickets with a known posterior: one-cue (department certain), two-cue (0.5/0.5).

    All four departments are shown (no NOTA injection) so the ideal probabilities are exactly
    1.0 and 0.5/0.5; every ticket also contributes its escalation question (ideal confidence 0.90).
    """
    rng = random.Random(f"decision-probe/{seed}")
    rows: list[DecisionRow] = []
    for i in range(2 * n_per_kind):
        ticket = draw_ticket(rng, f"p{i}", two_cue=i >= n_per_kind)
        dept, _, page = ticket_rows(ticket, rng, inject=False)
        rows.extend([dept, page])
    return rows
