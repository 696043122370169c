"""Bootstrap intervals for means and paired differences, optionally resampling whole clusters.

Episode scores are bounded and skewed (many exact zeros), so we report percentile bootstrap
intervals rather than normal ones. When rows share a context (K samples of one scenario, three
questions about one ticket) the resampling unit is the cluster, not the row.
"""

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np


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
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    rng = np.random.default_rng(seed)
    if clusters is None:
        idx = rng.integers(0, x.size, size=(resamples, x.size))
        stats = x[idx].mean(axis=1)
    else:
        if len(clusters) != x.size:
            raise ValueError(f"{len(clusters)} cluster ids for {x.size} values")
        _, inverse = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
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
