"""Bootstrap intervals: exact means, degenerate cases, cluster resampling, pairing."""

import math

import numpy as np
import pytest

from core.stats import bootstrap_mean, paired_difference


def test_mean_is_exact_and_interval_brackets_it():
    iv = bootstrap_mean([0.0, 1.0, 0.5, 0.25], seed=1)
    assert iv.mean == pytest.approx(0.4375)
    assert iv.lo <= iv.mean <= iv.hi
    assert iv.n == 4


def test_constant_values_have_zero_width():
    iv = bootstrap_mean([0.3] * 10)
    assert iv.lo == pytest.approx(0.3) and iv.hi == pytest.approx(0.3)


def test_empty_is_nan():
    iv = bootstrap_mean([])
    assert math.isnan(iv.mean) and iv.n == 0


def test_clusters_widen_interval_for_correlated_rows():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=20)
    values = np.repeat(centers, 10)  # ten identical rows per cluster
    clusters = np.repeat(np.arange(20), 10)
    naive = bootstrap_mean(values, seed=0)
    clustered = bootstrap_mean(values, clusters, seed=0)
    assert (clustered.hi - clustered.lo) > 2 * (naive.hi - naive.lo)


def test_one_unit_has_its_mean_and_no_interval():
    """One cluster (or one row) resampled is itself: a zero-width interval would read as certainty."""
    from core.stats import bootstrap_statistic

    for iv, mean in ((bootstrap_mean([1.0, 3.0], ["a", "a"]), 2.0), (bootstrap_mean([2.0]), 2.0),
                     (paired_difference([0.6], [0.4]), 0.2), (bootstrap_statistic(lambda idx: 2.0, 2, ["a", "a"]), 2.0),
                     (bootstrap_statistic(lambda idx: 2.0, 1), 2.0)):
        assert iv.mean == pytest.approx(mean) and math.isnan(iv.lo) and math.isnan(iv.hi)
    two = bootstrap_mean([1.0, 3.0], ["a", "b"])
    assert two.lo < two.mean < two.hi


def test_paired_difference():
    iv = paired_difference([1.0, 0.5, 0.75], [0.5, 0.5, 0.25])
    assert iv.mean == pytest.approx(1.0 / 3.0)
    with pytest.raises(ValueError):
        paired_difference([1.0], [1.0, 2.0])


def test_bootstrap_statistic_matches_bootstrap_mean_and_handles_empty():
    from core.stats import bootstrap_mean, bootstrap_statistic

    values, clusters = np.array([0.0, 1.0, 0.5, 0.25, 0.9]), ["a", "a", "b", "c", "c"]
    iv = bootstrap_statistic(lambda idx: float(values[idx].mean()), 5, clusters, seed=3, resamples=1000)
    same = bootstrap_mean(values, clusters, seed=3, resamples=1000)  # the mean as a statistic: the same draws
    assert iv.mean == pytest.approx(values.mean()) and iv.n == 5
    assert (iv.lo, iv.hi) == pytest.approx((same.lo, same.hi)) and iv.lo < iv.mean < iv.hi
    assert math.isnan(bootstrap_statistic(lambda idx: 0.0, 0).mean)
    with pytest.raises(ValueError, match="2 cluster ids for 3 rows"):
        bootstrap_statistic(lambda idx: 0.0, 3, ["a", "b"])
