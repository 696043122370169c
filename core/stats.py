"""Bootstrap intervals for means and paired differences, optionally resampling whole clusters.

Episode scores are bounded and skewed (many exact zeros), so we report percentile bootstrap
intervals rather than normal ones. When rows share a context (K samples of one scenario, three
questions about one ticket) the resampling unit is the cluster, not the row.
"""

from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

import numpy as np

MIN_UNITS = 2
"""Fewer resampling units (rows, or clusters when given) than this get no interval: one scenario resampled is itself,
and its zero-width interval read as certainty (a Compare verdict from one shared scenario). ``lo`` and ``hi`` are
NaN, which readers show as no interval."""
NAN = float("nan")

@dataclass(frozen=True)
class Interval:
    """A point estimate with its percentile bootstrap interval."""

    mean: float
    lo: float
    hi: float
    n: int
    """Number of rows behind the estimate."""

    def as_dict(self) -> dict:
        return {"mean": self.mean, "lo": self.lo, "hi": self.hi, "n": self.n}


def bootstrap_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Mean of ``values`` with a percentile bootstrap interval.

    With ``clusters``, whole clusters are resampled and the statistic is the mean over all rows of
    the drawn clusters (so clusters of unequal size keep their weight). Empty input gives NaNs:
    there is no mean to report, and a number would be a lie.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return Interval(NAN, NAN, NAN, 0)
    inverse = _cluster_index(x.size, clusters)
    if (x.size if inverse is None else inverse.max() + 1) < MIN_UNITS:
        return Interval(float(x.mean()), NAN, NAN, int(x.size))
    rng = np.random.default_rng(seed)
    if inverse is None:
        idx = rng.integers(0, x.size, size=(resamples, x.size))
        stats = x[idx].mean(axis=1)
    else:
        sums = np.bincount(inverse, weights=x)
        counts = np.bincount(inverse).astype(np.float64)
        draw = rng.integers(0, sums.size, size=(resamples, sums.size))
        stats = sums[draw].sum(axis=1) / counts[draw].sum(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return Interval(float(x.mean()), float(lo), float(hi), int(x.size))


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    **kwargs,
) -> Interval:
    """Mean of ``a - b`` over paired rows (same scenario, same item) with its bootstrap interval."""
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape:
        raise ValueError(f"paired samples differ in length: {xa.size} vs {xb.size}")
    return bootstrap_mean(xa - xb, clusters, **kwargs)


def bootstrap_statistic(
    statistic: Callable[[np.ndarray], float],
    n: int,
    clusters: Sequence[Hashable] | None = None,
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> Interval:
    """Any statistic of ``n`` rows (ECE, Brier, ...) with a percentile bootstrap interval.

    ``statistic(idx)`` computes the value on the rows ``idx`` (an int array, repeats allowed). With
    ``clusters`` whole clusters are drawn and all their rows kept. Empty input gives NaNs, as in
    ``bootstrap_mean``. A draw where the statistic is undefined (NaN: a NOTA rate on a draw without a NOTA row) is
    left out of the quantiles, so such an interval speaks for the draws that define it.
    """
    if n == 0:
        return Interval(NAN, NAN, NAN, 0)
    inverse = _cluster_index(n, clusters)
    if (n if inverse is None else inverse.max() + 1) < MIN_UNITS:
        return Interval(float(statistic(np.arange(n))), NAN, NAN, n)
    draws = _resample_indices(n, inverse, resamples, np.random.default_rng(seed))
    stats = np.array([statistic(idx) for idx in draws])
    alpha = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(stats, [alpha, 1.0 - alpha])
    return Interval(float(statistic(np.arange(n))), float(lo), float(hi), n)


def paired_statistic_difference(
    statistic_a: Callable[[np.ndarray], float],
    statistic_b: Callable[[np.ndarray], float],
    n: int,
    clusters: Sequence[Hashable] | None = None,
    **kwargs,
) -> Interval:
    """``statistic_a - statistic_b`` on the same rows, each resample shared by both (paired)."""
    return bootstrap_statistic(lambda idx: statistic_a(idx) - statistic_b(idx), n, clusters, **kwargs)


def _cluster_index(n: int, clusters: Sequence[Hashable] | None) -> np.ndarray | None:
    """Each row's cluster number, 0..units - 1 (ids compared as text), read once; None without clusters."""
    if clusters is None:
        return None
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster ids for {n} rows")
    return np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)[1]


def _resample_indices(n: int, inverse: np.ndarray | None, resamples: int, rng) -> list[np.ndarray]:
    """Row-index arrays for each resample: rows drawn with replacement, or whole clusters (``_cluster_index``)."""
    if inverse is None:
        return list(rng.integers(0, n, size=(resamples, n)))
    members = [np.flatnonzero(inverse == c) for c in range(inverse.max() + 1)]
    draws = rng.integers(0, len(members), size=(resamples, len(members)))
    return [np.concatenate([members[c] for c in row]) for row in draws]
