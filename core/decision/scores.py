"""Scores of one decision model on labelled rows and on the known-posterior probe, as records.

``score_rows`` keeps each row's probabilities over its own options plus the facts metrics slice by
(context, source, NOTA position); ``arm_report`` and ``paired_report`` summarise them with
``core.calibration``, whose intervals resample whole contexts (the three questions about one
ticket are not independent). Used by ``python -m train.decision_eval``.
"""

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from core import calibration as cal
from core.decision.data.rows import NOTA, DecisionRow
from core.stats import bootstrap_mean

HEADLINE = ("accuracy", "ece", "brier", "mean_confidence")
PROBE_GROUPS = {"probe_one_cue_max_p": ("one_cue", "department"),
                "probe_two_cue_max_p": ("two_cue", "department"),
                "probe_escalate_confidence": ("escalate", "escalate")}
"""Probe metric -> (ticket tag, question tag); the value is the mean top probability (ideal 1.0, 0.5, 0.9)."""


@dataclass(frozen=True)
class ArmScores:
    """Per-row facts of one model on the test rows and the probe rows."""

    probs: list[list[float]]
    """Each test row's probabilities over its own options."""
    labels: list[int]
    contexts: list[str]
    sources: list[str]
    nota: list[int | None]
    """NOTA's option index in each row, or None when not offered."""
    probe_probs: list[list[float]]
    probe_tags: list[list[str]]
    probe_contexts: list[str]
    kinds: Sequence[str] = ()
    """Each test row's primitive (choice, score, noul), for per-kind slices."""

    @property
    def predictions(self) -> list[int]:
        return [int(np.argmax(p)) for p in self.probs]

    def probe_rows(self, group: str) -> list[int]:
        """Indices of probe rows in a ``PROBE_GROUPS`` group."""
        ticket, question = PROBE_GROUPS[group]
        return [i for i, t in enumerate(self.probe_tags) if ticket in t and question in t]


def score_rows(rows: Sequence[DecisionRow], probs: np.ndarray, probe: Sequence[DecisionRow],
               probe_probs: np.ndarray) -> ArmScores:
    """Collect per-row facts from [N, 26] probability arrays (columns beyond each option count drop)."""
    if len(rows) != len(probs) or len(probe) != len(probe_probs):
        raise ValueError(f"rows and probabilities differ in length: {len(rows)}/{len(probs)}, "
                         f"{len(probe)}/{len(probe_probs)}")

    def cut(rs, ps):
        return [[float(x) for x in p[: len(r.options)]] for r, p in zip(rs, ps)]

    return ArmScores(
        probs=cut(rows, probs), labels=[r.label for r in rows], contexts=[r.context_id for r in rows],
        sources=[r.source for r in rows], nota=[r.options.index(NOTA) if NOTA in r.options else None for r in rows],
        probe_probs=cut(probe, probe_probs), probe_tags=[list(r.tags) for r in probe],
        probe_contexts=[r.context_id for r in probe], kinds=[r.kind for r in rows],
    )


def arm_report(s: ArmScores, resamples: int = 1000, seed: int = 0) -> dict:
    """Headline metrics with clustered 95% intervals, NOTA rates, AURC, per-source slices, probe means."""
    report = cal.calibration_report(s.probs, s.labels, s.contexts, resamples=resamples, seed=seed)
    out = {k: getattr(report, k).mean for k in HEADLINE}
    intervals = {k: getattr(report, k).as_dict() for k in HEADLINE}
    for group in PROBE_GROUPS:
        idx = s.probe_rows(group)
        iv = bootstrap_mean([max(s.probe_probs[i]) for i in idx], [s.probe_contexts[i] for i in idx],
                            resamples=resamples, seed=seed)
        out[group], intervals[group] = iv.mean, iv.as_dict()
    rates = cal.nota_rates(s.predictions, s.labels, s.nota)
    out.update(nota_recall=rates.recall, nota_false_alarm=rates.false_alarm,
               aurc=cal.selective_curve(s.probs, s.labels).aurc, intervals=intervals,
               reliability=[asdict(b) for b in cal.reliability_bins(s.probs, s.labels)],
               by_source=slices(s, s.sources), by_kind=slices(s, s.kinds))
    return out


def slices(s: ArmScores, keys: Sequence[str]) -> dict:
    """Headline metrics of the rows sharing each value of ``keys`` (one key per test row)."""
    out = {}
    for key in sorted(set(keys)):
        idx = [i for i, x in enumerate(keys) if x == key]
        p, y = [s.probs[i] for i in idx], [s.labels[i] for i in idx]
        out[key] = {"rows": len(idx), "accuracy": cal.accuracy(p, y), "ece": cal.ece(p, y),
                    "brier": cal.brier(p, y), "mean_confidence": cal.mean_confidence(p)}
    return out


def paired_report(a: ArmScores, b: ArmScores, resamples: int = 1000, seed: int = 0) -> dict:
    """a minus b on the same rows for each headline metric, with paired clustered intervals."""
    if a.contexts != b.contexts or a.labels != b.labels:
        raise ValueError("paired differences need both arms scored on the same rows")
    return {k: cal.paired_metric_difference(k, a.probs, b.probs, a.labels, a.contexts, resamples=resamples,
                                            seed=seed).as_dict() for k in HEADLINE}
