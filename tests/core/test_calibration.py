"""Calibration metrics: hand-computed cases, agreement with torchmetrics and scikit-learn, empties."""

import math

import numpy as np
import pytest
import torch
from sklearn.calibration import calibration_curve
from sklearn.metrics import accuracy_score, brier_score_loss
from torchmetrics.functional.classification import binary_calibration_error, multiclass_calibration_error

from core.calibration import (
    accuracy, bin_index, brier, calibration_report, classwise_ece, ece, ece_from, equal_mass_ece,
    mean_confidence, nota_rates, paired_metric_difference, reliability_bins, selective_curve, selective_from, wilson_interval,
)

# Hand case: four rows, K = 2; confidences 0.9, 0.6, 0.8, 0.55; the first three are correct.
P = [[0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.55, 0.45]]
Y = [0, 1, 1, 1]


@pytest.mark.parametrize("fn, expected", [
    (lambda: accuracy(P, Y), 0.75),  # three of four argmaxes are right
    (lambda: mean_confidence(P), (0.9 + 0.6 + 0.8 + 0.55) / 4),
    # Brier: (0.01+0.01) + (0.16+0.16) + (0.04+0.04) + (0.3025+0.3025), over 4
    (lambda: brier(P, Y), (0.02 + 0.32 + 0.08 + 0.605) / 4),
    # bins (x15): 0.9 -> 13, 0.6 -> 9, 0.8 -> 12, 0.55 -> 8; each alone: mean |acc - conf|
    (lambda: ece(P, Y), (0.1 + 0.4 + 0.2 + 0.55) / 4),
    # equal mass, 2 bins: {0.55 wrong, 0.6 right} -> |0.5 - 0.575|; {0.8, 0.9 right} -> |1 - 0.85|
    (lambda: equal_mass_ece(P, Y, n_bins=2), (2 * 0.075 + 2 * 0.15) / 4),
    # one bin holding all: |0.75 - 0.7125|
    (lambda: ece(P, Y, n_bins=1), abs(0.75 - 0.7125)),
])
def test_hand_computed(fn, expected):
    assert fn() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("conf, expected", [
    (0.0, 0), (1.0, 14),  # the top edge is clipped into the last bin
    (2 / 15, 2),  # 2/15*15 = 1.9999999999999998 in floats: the 1e-9 puts it in bin 2
    (0.0666, 0), (0.0667, 1),
])
def test_published_bin_rule(conf, expected):
    assert bin_index(np.array([conf]))[0] == expected


@pytest.mark.parametrize("fn", [accuracy, brier, ece, equal_mass_ece, classwise_ece])
def test_empty_input_is_nan(fn):
    assert math.isnan(fn([], []))


def test_empty_helpers():
    assert math.isnan(mean_confidence([])) and math.isnan(ece_from([], []))
    assert math.isnan(selective_curve([], []).aurc)
    assert all(b.count == 0 for b in reliability_bins([], []))
    assert math.isnan(nota_rates([], [], []).recall)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert math.isnan(calibration_report([], []).ece.mean)


def _random(n=400, k=4, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=row) if rng.random() < 0.7 else rng.integers(k) for row in p])
    return p, y


def test_agrees_with_torchmetrics_and_sklearn():
    p, y = _random()
    assert p.max(1).max() < 1.0  # torchmetrics puts conf = 1.0 in a 16th bin; keep away from it
    tm = multiclass_calibration_error(torch.tensor(p), torch.tensor(y), num_classes=4, n_bins=15, norm="l1")
    assert ece(p.tolist(), y.tolist()) == pytest.approx(tm.item(), abs=1e-6)
    assert accuracy(p.tolist(), y.tolist()) == pytest.approx(accuracy_score(y, p.argmax(1)))
    assert brier(p.tolist(), y.tolist()) == pytest.approx(brier_score_loss(y, p, scale_by_half=False), abs=1e-12)
    # classwise ECE = mean over classes of the binary calibration error of p_k vs 1[y = k]
    per_class = [binary_calibration_error(torch.tensor(p[:, k]), torch.tensor((y == k).astype(int)), n_bins=15).item()
                 for k in range(4)]
    assert classwise_ece(p.tolist(), y.tolist()) == pytest.approx(np.mean(per_class), abs=1e-6)


def test_reliability_bins_agree_with_sklearn_calibration_curve():
    p, y = _random(seed=1)
    conf, correct = p.max(1), (p.argmax(1) == y).astype(int)
    frac, mean_pred = calibration_curve(correct, conf, n_bins=15, strategy="uniform")
    ours = [b for b in reliability_bins(p.tolist(), y.tolist()) if b.count]
    assert sum(b.count for b in reliability_bins(p.tolist(), y.tolist())) == len(y)
    assert np.allclose([b.accuracy for b in ours], frac) and np.allclose([b.confidence for b in ours], mean_pred)
    assert all(b.acc_lo <= b.accuracy <= b.acc_hi for b in ours)


@pytest.mark.parametrize("k, n, lo, hi", [
    (8, 10, 0.4902, 0.9433),  # textbook Wilson 95% values for 8/10
    (0, 5, 0.0, 0.4345),
])
def test_wilson(k, n, lo, hi):
    got = wilson_interval(k, n)
    assert got[0] == pytest.approx(lo, abs=1e-4) and got[1] == pytest.approx(hi, abs=1e-4)


def test_selective_curve_by_hand_and_tie_invariance():
    # confidences 0.9 (right), 0.8 (wrong), 0.7 (right), 0.6 (wrong)
    p = [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4]]
    y = [0, 0, 0, 1]
    curve = selective_curve(p, y)
    assert curve.coverage == [0.25, 0.5, 0.75, 1.0]
    assert curve.risk == pytest.approx([0.0, 0.5, 1 / 3, 0.5])
    assert curve.aurc == pytest.approx((0 + 0.5 + 1 / 3 + 0.5) / 4)
    tied = selective_curve([[0.5, 0.5]] * 2 + [[0.9, 0.1]], [0, 1, 0])  # two tied rows, one right
    swapped = selective_curve([[0.5, 0.5]] * 2 + [[0.9, 0.1]], [1, 0, 0])
    assert tied == swapped and tied.coverage == [1 / 3, 1.0]


def test_nota_rates():
    # rows: NOTA at index 3 is the answer (2 rows), a distractor (2 rows), absent (1 row)
    preds, labels, nota = [3, 0, 3, 1, 2], [3, 3, 0, 1, 2], [3, 3, 3, 3, None]
    r = nota_rates(preds, labels, nota)
    assert (r.recall, r.false_alarm, r.n_answer, r.n_distractor) == (0.5, 0.5, 2, 2)


def test_bad_labels_are_refused():
    with pytest.raises(ValueError, match="row 1: label 2 is outside its 2 options"):
        accuracy([[0.5, 0.5], [0.5, 0.5]], [0, 2])
    with pytest.raises(ValueError, match="one option count"):
        classwise_ece([[0.5, 0.5], [0.2, 0.3, 0.5]], [0, 1])


def test_report_intervals_and_clustered_width():
    p, y = _random(n=300, seed=2)
    rep = calibration_report(p.tolist(), y.tolist(), resamples=300)
    assert rep.ece.lo <= rep.ece.mean <= rep.ece.hi and rep.accuracy.mean == pytest.approx(accuracy(p, y))
    # the same rows copied 3 times per context: clustered intervals must be wider than row-level ones
    p3, y3 = np.repeat(p, 3, axis=0), np.repeat(y, 3)
    ctx = np.repeat(np.arange(300), 3)
    rows = calibration_report(p3.tolist(), y3.tolist(), resamples=300)
    clustered = calibration_report(p3.tolist(), y3.tolist(), ctx, resamples=300)
    assert (clustered.brier.hi - clustered.brier.lo) > 1.4 * (rows.brier.hi - rows.brier.lo)


def test_paired_difference_of_a_model_with_itself_is_zero_and_detects_a_worse_one():
    p, y = _random(n=200, seed=3)
    same = paired_metric_difference("brier", p.tolist(), p.tolist(), y.tolist(), resamples=200)
    assert same.mean == 0 and same.lo == 0 and same.hi == 0
    flat = np.full_like(p, 0.25)
    worse = paired_metric_difference("ece", flat.tolist(), p.tolist(), y.tolist(), resamples=200)
    assert worse.mean == pytest.approx(ece(flat, y) - ece(p, y))
    with pytest.raises(ValueError, match="unknown metric"):
        paired_metric_difference("auc", p.tolist(), p.tolist(), y.tolist())


def test_selective_from_takes_any_confidence_score():
    # a score that ranks the one error last gives AURC 0; max p here ranks it first
    conf, correct = [0.9, 0.8, 0.1], [1.0, 1.0, 0.0]
    assert selective_from(conf, correct).aurc == pytest.approx((0 + 0 + 1 / 3) / 3)
    probs, labels = [[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]], [0, 1, 1]
    assert selective_from([0.9, 0.6, 0.8], [1.0, 0.0, 1.0]).aurc == selective_curve(probs, labels).aurc
    assert math.isnan(selective_from([], []).aurc)
