"""Scores of one decision model on labelled rows and on the known-posterior probe, as records.

``score_rows`` turns option probabilities into per-row facts (confidence, hit, Brier term, NOTA
flags, context); ``arm_report`` and ``paired_report`` summarise them with ``core.calibration`` and
bootstrap intervals that resample whole contexts (the three questions about one ticket are not
independent). Used by ``python -m train.decision_eval``.
"""

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from core import calibration as cal
from core.decision_data.rows import NOTA, DecisionRow
from core.stats import bootstrap_mean, paired_difference


@dataclass(frozen=True)
class ArmScores:
    """Per-row facts of one model on the test rows and the probe rows."""

    probs: list[list[float]]
    """Each test row's probabilities over its own options."""
    labels: list[int]
    contexts: list[str]
    sources: list[str]
    nota_answer: list[bool]
    """The row's answer is the injected NOTA option."""
    nota_offered: list[bool]
    """NOTA is offered as a distractor."""
    probe_probs: list[list[float]]
    probe_tags: list[list[str]]
    probe_contexts: list[str]

    @property
    def confidence(self) -> list[float]:
        return [max(p) for p in self.probs]

    @property
    def hits(self) -> list[float]:
        return [float(int(np.argmax(p)) == y) for p, y in zip(self.probs, self.labels)]


def score_rows(rows: Sequence[DecisionRow], probs: np.ndarray, probe: Sequence[DecisionRow],
               probe_probs: np.ndarray) -> ArmScores:
    """Collect per-row facts from [N, 26] probability arrays (columns beyond each option count drop)."""
    if len(rows) != len(probs) or len(probe) != len(probe_probs):
        raise ValueError(f"rows and probabilities differ in length: {len(rows)}/{len(probs)}, "
                         f"{len(probe)}/{len(probe_probs)}")
    cut = lambda rs, ps: [list(map(float, p[: len(r.options)])) for r, p in zip(rs, ps)]
    return ArmScores(
        probs=cut(rows, probs), labels=[r.label for r in rows], contexts=[r.context_id for r in rows],
        sources=[r.source for r in rows],
        nota_answer=[r.options[r.label] == NOTA for r in rows],
        nota_offered=[NOTA in r.options and r.options[r.label] != NOTA for r in rows],
        probe_probs=cut(probe, probe_probs), probe_tags=[list(r.tags) for r in probe],
        probe_contexts=[r.context_id for r in probe],
    )


def _probe_mean(s: ArmScores, tag: str, kind: str, resamples: int, seed: int) -> dict:
    """Mean max p over probe rows carrying ``tag`` whose question is ``kind``."""
    pick = [i for i, t in enumerate(s.probe_tags) if tag in t and (kind in t)]
    vals = [max(s.probe_probs[i]) for i in pick]
    return bootstrap_mean(vals, [s.probe_contexts[i] for i in pick], resamples=resamples, seed=seed).as_dict()


def arm_report(s: ArmScores, resamples: int = 2000, seed: int = 0) -> dict:
    """Headline metrics with clustered 95% intervals, per-source slices and probe means."""
    conf, hits = s.confidence, s.hits
    brier_rows = [cal.brier_terms(p, y) for p, y in zip(s.probs, s.labels)]
    pred_last = [int(np.argmax(p)) == len(p) - 1 for p in s.probs]
    boot = dict(resamples=resamples, seed=seed)
    two = _probe_mean(s, "two_cue", "department", resamples, seed)
    esc = _probe_mean(s, "escalate", "escalate", resamples, seed)
    report = {
        "accuracy": cal.accuracy(hits), "ece": cal.expected_calibration_error(conf, hits),
        "brier": float(np.mean(brier_rows)), "mean_confidence": float(np.mean(conf)),
        "probe_two_cue_max_p": two["mean"], "probe_escalate_confidence": esc["mean"],
        "probe_one_cue_max_p": _probe_mean(s, "one_cue", "department", resamples, seed)["mean"],
        "nota_recall": cal.nota_recall([p for p, a in zip(pred_last, s.nota_answer) if a]),
        "nota_false_alarm": cal.nota_false_alarm([p for p, o in zip(pred_last, s.nota_offered) if o]),
        "aurc": cal.aurc(conf, hits),
        "intervals": {
            "accuracy": bootstrap_mean(hits, s.contexts, **boot).as_dict(),
            "brier": bootstrap_mean(brier_rows, s.contexts, **boot).as_dict(),
            "mean_confidence": bootstrap_mean(conf, s.contexts, **boot).as_dict(),
            "ece": cal.bootstrap_metric(cal.expected_calibration_error, conf, hits, s.contexts, **boot),
            "probe_two_cue_max_p": two, "probe_escalate_confidence": esc,
        },
        "reliability": cal.reliability_bins(conf, hits),
        "by_source": {},
    }
    for source in sorted(set(s.sources)):
        idx = [i for i, x in enumerate(s.sources) if x == source]
        c, h = [conf[i] for i in idx], [hits[i] for i in idx]
        report["by_source"][source] = {"rows": len(idx), "accuracy": cal.accuracy(h),
                                       "ece": cal.expected_calibration_error(c, h), "mean_confidence": float(np.mean(c))}
    return report


def paired_report(a: ArmScores, b: ArmScores, resamples: int = 2000, seed: int = 0) -> dict:
    """a minus b on the same rows: accuracy, Brier, confidence and ECE, with clustered intervals."""
    if a.contexts != b.contexts or a.labels != b.labels:
        raise ValueError("paired differences need both arms scored on the same rows")
    boot = dict(resamples=resamples, seed=seed)
    brier = lambda s: [cal.brier_terms(p, y) for p, y in zip(s.probs, s.labels)]
    return {
        "accuracy": paired_difference(a.hits, b.hits, a.contexts, **boot).as_dict(),
        "brier": paired_difference(brier(a), brier(b), a.contexts, **boot).as_dict(),
        "mean_confidence": paired_difference(a.confidence, b.confidence, a.contexts, **boot).as_dict(),
        "ece": cal.bootstrap_paired_metric(cal.expected_calibration_error, (a.confidence, a.hits),
                                           (b.confidence, b.hits), a.contexts, **boot),
    }
