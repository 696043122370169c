"""The option model: the soft-target loss by hand, save/load with hashes, and what loading refuses."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file, save_file

from core.decision.option.model import (
    BODY_FILE,
    CARD_FILE,
    HEADS_FILE,
    OptionModel,
    OptionModelError,
    Settings,
    load_option_model,
    save_option_model,
    soft_target_loss,
    state_hash,
)
from core.decision.option.scorer import OptionScorer
from core.decision.random_model import random_body

QS = {"team": {"type": "choice", "instructions": "Which team?", "criteria": {"x": "billing", "y": "security"}},
      "page": {"type": "noul", "instructions": "Page now?"}}


def test_soft_target_loss_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0), 0.0], [0.0, 0.0, 0.0]])
    valid = torch.tensor([[True, True, False], [True, True, True]])
    target = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    # row 1: p = (1/4, 3/4) -> -(0.5 ln 1/4 + 0.5 ln 3/4); row 2: p uniform over 3 -> ln 3
    row1, row2 = 0.5 * (math.log(4) + math.log(4 / 3)), math.log(3)
    assert soft_target_loss(logits, valid, target).item() == pytest.approx((row1 + row2) / 2, abs=1e-6)
    weight = torch.tensor([0.25, 0.75])
    assert soft_target_loss(logits, valid, target, weight).item() == pytest.approx(0.25 * row1 + 0.75 * row2, abs=1e-6)
    # no weight at all: nothing to fit, a zero (not NaN) loss
    assert soft_target_loss(logits, valid, target, torch.zeros(2)).item() == 0.0


def test_soft_target_gradient_is_p_minus_t():
    logits = torch.tensor([[1.0, -0.5]], requires_grad=True)
    target = torch.tensor([[0.3, 0.7]])
    soft_target_loss(logits, torch.ones(1, 2, dtype=torch.bool), target).backward()
    p = torch.softmax(logits.detach(), -1)
    assert torch.allclose(logits.grad, p - target, atol=1e-6)


@pytest.fixture
def saved(tmp_path, letter_tok):
    model = OptionModel(random_body(len(letter_tok), seed=1, hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8),
                        head_hidden=16)
    settings = Settings(temperature={"choice": 1.5, "score": 1.0, "noul": 0.8}, confidence_mode="max_p")
    root = save_option_model(tmp_path / "m", model, letter_tok, training={"steps": 0}, settings=settings)
    return root, OptionScorer(model, letter_tok, settings)


def test_round_trip_keeps_answers_and_settings(saved):
    root, scorer = saved
    loaded = OptionScorer.load(root)
    assert loaded.settings.temperature["choice"] == 1.5 and loaded.settings.confidence_mode == "max_p"
    assert state_hash(loaded.model) == state_hash(scorer.model)
    assert loaded.score("I was charged twice", QS) == scorer.score("I was charged twice", QS)
    card = json.loads((root / CARD_FILE).read_text())
    assert set(card["sha256"]) == {BODY_FILE, HEADS_FILE}


def test_a_changed_weight_file_is_refused(saved):
    root, _ = saved
    heads = load_file(root / HEADS_FILE)
    heads["option_head.bias"] = heads["option_head.bias"] + 1
    save_file(heads, root / HEADS_FILE)
    with pytest.raises(OptionModelError, match="heads.safetensors: sha256 does not match"):
        load_option_model(root)


def test_extra_weights_and_remote_code_are_refused(saved):
    root, _ = saved
    save_file({"w": torch.zeros(1)}, root / "lm_head.safetensors")
    with pytest.raises(OptionModelError, match="extra weight files"):
        load_option_model(root)
    (root / "lm_head.safetensors").unlink()
    cfg = json.loads((root / "config.json").read_text())
    (root / "config.json").write_text(json.dumps({**cfg, "auto_map": {"AutoModel": "evil.Model"}}))
    with pytest.raises(OptionModelError, match="only a plain qwen3 body loads"):
        load_option_model(root)


def test_bad_settings_and_non_empty_target_are_refused(saved, letter_tok):
    root, scorer = saved
    with pytest.raises(OptionModelError, match="not empty"):
        save_option_model(root, scorer.model, letter_tok, training={})
    card = json.loads((root / CARD_FILE).read_text())
    card["settings"]["temperature"]["noul"] = 0.0
    (root / CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(OptionModelError, match="temperatures must be positive"):
        load_option_model(root)
