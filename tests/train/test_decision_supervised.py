"""train.decision_supervised's targets: drawn labels, or a row's known posterior where asked."""

import math

import pytest
import torch

from core.decision.training import nll_loss
from train.decision_supervised import SupervisedConfig, letter_targets


def test_labels_alone_stay_class_ids():
    assert torch.equal(letter_targets([2, 0]), torch.tensor([2, 0]))
    assert torch.equal(letter_targets([2, 0], [None, None]), torch.tensor([2, 0]))


def test_a_posterior_replaces_its_rows_label_only():
    y = letter_targets([2, 0], [None, [0.7, 0.1, 0.1, 0.1]])
    assert y.shape == (2, 26)
    assert y[0].tolist() == [0.0, 0.0, 1.0] + [0.0] * 23
    assert y[1, :4].tolist() == pytest.approx([0.7, 0.1, 0.1, 0.1]) and y[1, 4:].sum() == 0


def test_the_loss_is_the_cross_entropy_to_the_posterior():
    logits = torch.tensor([[math.log(0.5), math.log(0.25), math.log(0.25)] + [-1e4] * 23])
    got = nll_loss(logits, letter_targets([0], [[0.5, 0.5, 0.0]]))
    assert got.item() == pytest.approx(-(0.5 * math.log(0.5) + 0.5 * math.log(0.25)), rel=1e-5)


def test_soft_sources_default_to_none():
    assert SupervisedConfig().soft_sources == ""
