"""Calibration metrics: pure functions from option probabilities and labels to numbers or records.

``probs`` is one probability row per item (rows may have different option counts unless a metric
needs fixed classes), ``labels`` the index of the correct option. Every function says what it
returns on empty input and why. Intervals come from ``core.stats`` (context-clustered bootstrap).

    report = calibration_report(probs, labels, clusters=ticket_ids)
    report.ece.mean, report.ece.lo, report.ece.hi
"""

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from core.stats import Interval, bootstrap_statistic, paired_statistic_difference

N_BINS = 15
"""Published ECE bins: 15 equal-width bins on the top probability."""


def _rows(probs: Sequence[Sequence[float]]) -> list[np.ndarray]:
    return [np.asarray(p, dtype=np.float64) for p in probs]


def _check(probs, labels) -> None:
    if len(probs) != len(labels):
        raise ValueError(f"{len(probs)} probability rows for {len(labels)} labels")
    for i, (p, y) in enumerate(zip(probs, labels)):
        if not 0 <= int(y) < len(p):
            raise ValueError(f"row {i}: label {y} is outside its {len(p)} options")


def top_label(probs: Sequence[Sequence[float]], labels: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(confidence = max p, correct = argmax == label) per row; ties go to the earlier option."""
    _check(probs, labels)
    rows = _rows(probs)
    conf = np.array([r.max() for r in rows], dtype=np.float64)
    correct = np.array([int(np.argmax(r)) == int(y) for r, y in zip(rows, labels)], dtype=np.float64)
    return conf, correct


def accuracy(probs: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    """Fraction of rows whose most probable option is the label. Empty: NaN (no rows, no rate)."""
    if len(probs) == 0:
        return float("nan")
    return float(top_label(probs, labels)[1].mean())


def mean_confidence(probs: Sequence[Sequence[float]]) -> float:
    """Mean of the top probability. Empty: NaN (nothing to average)."""
    if len(probs) == 0:
        return float("nan")
    return float(np.mean([np.max(r) for r in _rows(probs)]))


def brier(probs: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    """Multi-class Brier: mean over rows of sum_k (p_k - 1[k = y])^2, in [0, 2]. Empty: NaN."""
    if len(probs) == 0:
        return float("nan")
    _check(probs, labels)
    total = 0.0
    for r, y in zip(_rows(probs), labels):
        onehot = np.zeros_like(r)
        onehot[int(y)] = 1.0
        total += float(((r - onehot) ** 2).sum())
    return total / len(probs)


def bin_index(conf: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Published bin rule: floor(conf * n_bins + 1e-9), clipped to 0 .. n_bins - 1."""
    return np.clip(np.floor(np.asarray(conf, dtype=np.float64) * n_bins + 1e-9), 0, n_bins - 1).astype(int)


def _binned_gap(conf: np.ndarray, hit: np.ndarray, bins: np.ndarray) -> float:
    """sum_b (n_b / N) |mean(hit in b) - mean(conf in b)| = sum_b |sum hit_b - sum conf_b| / N."""
    counts = np.bincount(bins)
    gap = np.abs(np.bincount(bins, weights=hit) - np.bincount(bins, weights=conf))
    return float(gap[counts > 0].sum() / len(conf))


def ece_from(conf: Sequence[float], correct: Sequence[float], n_bins: int = N_BINS) -> float:
    """Top-label ECE with equal-width bins: sum_b (n_b / N) |acc_b - conf_b|. Empty: NaN."""
    conf, correct = np.asarray(conf, dtype=np.float64), np.asarray(correct, dtype=np.float64)
    if conf.size == 0:
        return float("nan")
    return _binned_gap(conf, correct, bin_index(conf, n_bins))


def ece(probs: Sequence[Sequence[float]], labels: Sequence[int], n_bins: int = N_BINS) -> float:
    """Top-label ECE with the published 15 equal-width bins. Empty: NaN (no rows, no error)."""
    if len(probs) == 0:
        return float("nan")
    return ece_from(*top_label(probs, labels), n_bins)


def equal_mass_ece(probs: Sequence[Sequence[float]], labels: Sequence[int], n_bins: int = N_BINS) -> float:
    """Top-label ECE with bins of (nearly) equal row counts, rows sorted by confidence.

    Rows are split in confidence order into ``min(n_bins, N)`` groups whose sizes differ by at most
    one (``np.array_split``); ties may straddle a bin edge. Empty: NaN.
    """
    if len(probs) == 0:
        return float("nan")
    conf, correct = top_label(probs, labels)
    order = np.argsort(conf, kind="stable")
    bins = np.empty(conf.size, dtype=int)
    for b, idx in enumerate(np.array_split(order, min(n_bins, conf.size))):
        bins[idx] = b
    return _binned_gap(conf, correct, bins)


def classwise_ece(probs: Sequence[Sequence[float]], labels: Sequence[int], n_bins: int = N_BINS) -> float:
    """Mean over classes k of the equal-width-binned gap between p_k and 1[y = k] (all rows).

    Needs every row to have the same option count K. Empty: NaN.
    """
    if len(probs) == 0:
        return float("nan")
    _check(probs, labels)
    widths = {len(p) for p in probs}
    if len(widths) != 1:
        raise ValueError(f"classwise ECE needs one option count for all rows, got {sorted(widths)}")
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels, dtype=int)
    return float(np.mean([_binned_gap(p[:, k], (y == k).astype(np.float64), bin_index(p[:, k], n_bins))
                          for k in range(p.shape[1])]))


@dataclass(frozen=True)
class NotaRates:
    """How a model handles a "none of the above" option."""

    recall: float
    """Of rows whose answer is NOTA, the fraction predicted NOTA (NaN if none)."""
    false_alarm: float
    """Of rows offering NOTA as a distractor, the fraction predicted NOTA (NaN if none)."""
    n_answer: int
    n_distractor: int


def nota_rates(predictions: Sequence[int], labels: Sequence[int], nota: Sequence[int | None]) -> NotaRates:
    """NOTA recall and false alarm; ``nota[i]`` is NOTA's option index in row i, or None.

    Empty (or no row offering NOTA): NaN rates with zero counts; a rate over no rows is undefined.
    """
    if not len(predictions) == len(labels) == len(nota):
        raise ValueError(f"lengths differ: {len(predictions)} predictions, {len(labels)} labels, {len(nota)} nota")
    answer = [p == n for p, y, n in zip(predictions, labels, nota) if n is not None and y == n]
    distractor = [p == n for p, y, n in zip(predictions, labels, nota) if n is not None and y != n]
    rate = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    return NotaRates(rate(answer), rate(distractor), len(answer), len(distractor))


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial rate. n = 0: (0, 1), the whole range, since nothing is known."""
    if n == 0:
        return 0.0, 1.0
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class ReliabilityBin:
    """One bar of a reliability diagram."""

    lo: float
    hi: float
    count: int
    accuracy: float
    """Fraction correct in the bin (NaN when empty)."""
    confidence: float
    """Mean top probability in the bin (NaN when empty)."""
    acc_lo: float
    acc_hi: float
    """Wilson interval of the accuracy ((0, 1) when empty)."""


def reliability_bins(probs: Sequence[Sequence[float]], labels: Sequence[int], n_bins: int = N_BINS,
                     level: float = 0.95) -> list[ReliabilityBin]:
    """All ``n_bins`` equal-width bins (empty ones included, so plots keep their axis). Empty input:
    every bin empty."""
    conf, correct = top_label(probs, labels) if len(probs) else (np.zeros(0), np.zeros(0))
    bins = bin_index(conf, n_bins)
    out = []
    for b in range(n_bins):
        sel = bins == b
        n, hits = int(sel.sum()), int(correct[sel].sum())
        lo, hi = wilson_interval(hits, n, level)
        out.append(ReliabilityBin(b / n_bins, (b + 1) / n_bins, n, hits / n if n else float("nan"),
                                  float(conf[sel].mean()) if n else float("nan"), lo, hi))
    return out


@dataclass(frozen=True)
class SelectiveCurve:
    """Error rate among the answered rows when only the most confident fraction is answered."""

    coverage: list[float]
    risk: list[float]
    aurc: float
    """Area under the risk-coverage curve: the mean over rows of the risk at that row's threshold."""


def selective_curve(probs: Sequence[Sequence[float]], labels: Sequence[int]) -> SelectiveCurve:
    """Risk vs coverage, answering rows by decreasing confidence; tied confidences enter together.

    Row i's risk is the error rate among rows with confidence >= conf_i, so AURC does not depend
    on the order of ties. Empty: an empty curve and NaN AURC (nothing was answered).
    """
    if len(probs) == 0:
        return SelectiveCurve([], [], float("nan"))
    return selective_from(*top_label(probs, labels))


def selective_from(conf: Sequence[float], correct: Sequence[float]) -> SelectiveCurve:
    """``selective_curve`` for any confidence score (e.g. a confidence head) and 0/1 correctness."""
    conf, correct = np.asarray(conf, dtype=np.float64), np.asarray(correct, dtype=np.float64)
    if conf.size == 0:
        return SelectiveCurve([], [], float("nan"))
    order = np.argsort(-conf, kind="stable")
    c, err = conf[order], 1.0 - correct[order]
    cum = np.cumsum(err)
    last = np.searchsorted(-c, -c, side="right") - 1  # end of each row's tie group
    risk_row = cum[last] / (last + 1)
    ends = np.unique(last)
    return SelectiveCurve([float((e + 1) / len(c)) for e in ends], [float(cum[e] / (e + 1)) for e in ends],
                          float(risk_row.mean()))


@dataclass(frozen=True)
class CalibrationReport:
    """Metrics with 95% context-clustered bootstrap intervals."""

    n: int
    accuracy: Interval
    ece: Interval
    brier: Interval
    mean_confidence: Interval


def _row_terms(probs, labels) -> dict[str, np.ndarray]:
    """Per-row confidence, correctness and Brier term: every report metric is a function of these."""
    conf, correct = top_label(probs, labels)
    terms = np.array([brier([p], [y]) for p, y in zip(probs, labels)], dtype=np.float64)
    return {"conf": conf, "correct": correct, "brier": terms}


METRICS = {
    "accuracy": lambda t, idx: float(t["correct"][idx].mean()),
    "ece": lambda t, idx: ece_from(t["conf"][idx], t["correct"][idx]),
    "brier": lambda t, idx: float(t["brier"][idx].mean()),
    "mean_confidence": lambda t, idx: float(t["conf"][idx].mean()),
}
"""Report metrics as functions of the per-row terms and a row-index array (a bootstrap draw)."""


def calibration_report(probs: Sequence[Sequence[float]], labels: Sequence[int],
                       clusters: Sequence[Hashable] | None = None, *, resamples: int = 1000,
                       seed: int = 0) -> CalibrationReport:
    """Accuracy, ECE, Brier and mean confidence, each with a bootstrap interval resampling clusters."""
    terms = _row_terms(probs, labels)
    ivs = {k: bootstrap_statistic(lambda idx, m=m: m(terms, idx), len(probs), clusters, resamples=resamples,
                                  seed=seed) for k, m in METRICS.items()}
    return CalibrationReport(n=len(probs), **ivs)


def paired_metric_difference(metric: str, probs_a, probs_b, labels: Sequence[int],
                             clusters: Sequence[Hashable] | None = None, *, resamples: int = 1000,
                             seed: int = 0) -> Interval:
    """metric(model A) - metric(model B) on the same rows, with a paired clustered bootstrap interval."""
    if len(probs_a) != len(probs_b):
        raise ValueError(f"paired models answered different row counts: {len(probs_a)} vs {len(probs_b)}")
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {sorted(METRICS)}")
    fn, ta, tb = METRICS[metric], _row_terms(probs_a, labels), _row_terms(probs_b, labels)
    return paired_statistic_difference(lambda idx: fn(ta, idx), lambda idx: fn(tb, idx), len(labels),
                                       clusters, resamples=resamples, seed=seed)
