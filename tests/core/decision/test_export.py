"""rlcd-decision-only-v1: round trip, and every tampering the loader must refuse."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from core.decision import Choice, Noul, Score
from core.decision.export.published import (
    CARD_FILE, FORMAT, HEAD_FILE, MODEL_FILE, DecisionExportError, export_causal_lm, export_decision,
    load_decider,
)
from core.decision.data.store import sha256_file

BODY_FILE, ROWS_FILE = MODEL_FILE, HEAD_FILE

from .test_readout import _causal_lm

QS = [Choice("Which team?", ["billing", "security", "infra"]), Score("How urgent?", ["low", "mid", "high"]),
      Noul("Page now?")]


@pytest.fixture
def exported(tmp_path, make_decider):
    decider = make_decider()
    return export_decision(tmp_path / "m", decider.body, decider.rows, decider.tokenizer,
                           base_model="random-qwen3-h32", training={"recipe": "none", "steps": 0}), decider


def _probs(decider, path="shared"):
    req = decider.tokenize("The invoice was charged twice and login fails.", QS)
    return decider.probabilities(req, path=path)


def test_round_trip_is_exact_and_layout_is_complete(exported):
    root, decider = exported
    loaded = load_decider(root)
    assert (_probs(loaded) - _probs(decider)).abs().max().item() <= 1e-6
    card = json.loads((root / CARD_FILE).read_text())
    assert card["format"] == FORMAT and card["letter_ids"] == decider.letter_ids
    assert set(card["sha256"]) == {BODY_FILE, ROWS_FILE} and card["prepend_bos"] is False
    assert {"config.json", "tokenizer.json"} <= {p.name for p in root.iterdir()}
    assert not any(k.startswith("lm_head") for k in load_file(root / BODY_FILE))


def test_export_of_a_causal_lm_reads_its_letter_rows(tmp_path, letter_tok):
    model = _causal_lm(letter_tok)
    root = export_causal_lm(tmp_path / "lm", model, letter_tok, base_model="tiny", training={})
    rows = load_file(root / ROWS_FILE)["weight"]
    ids = json.loads((root / CARD_FILE).read_text())["letter_ids"]
    assert torch.equal(rows, model.lm_head.weight[ids].detach())


@pytest.mark.parametrize("name", [BODY_FILE, ROWS_FILE])
def test_a_flipped_byte_is_refused(exported, name):
    root, _ = exported
    data = bytearray((root / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (root / name).write_bytes(bytes(data))
    with pytest.raises(DecisionExportError, match=f"{name}: sha256 does not match"):
        load_decider(root)


def _rewrite_card(root, **changes):
    card = json.loads((root / CARD_FILE).read_text())
    card.update(changes)
    (root / CARD_FILE).write_text(json.dumps(card))


def test_a_changed_letter_id_is_refused(exported):
    root, decider = exported
    ids = list(decider.letter_ids)
    ids[3] += 1
    _rewrite_card(root, letter_ids=ids)
    with pytest.raises(DecisionExportError, match="letter ids differ"):
        load_decider(root)


def test_an_extra_output_head_file_is_refused(exported):
    root, _ = exported
    save_file({"lm_head.weight": torch.zeros(4, 32)}, str(root / "lm_head.safetensors"))
    with pytest.raises(DecisionExportError, match="extra weight files"):
        load_decider(root)


def _rewrite_body(root, change):
    state = load_file(root / BODY_FILE)
    change(state)
    save_file(state, str(root / BODY_FILE))
    card = json.loads((root / CARD_FILE).read_text())
    card["sha256"][BODY_FILE] = sha256_file(root / BODY_FILE)
    (root / CARD_FILE).write_text(json.dumps(card))


def test_an_output_head_inside_the_body_is_refused(exported):
    root, _ = exported
    _rewrite_body(root, lambda s: s.update({"lm_head.weight": torch.zeros(4, 32)}))
    with pytest.raises(DecisionExportError, match="carries an output head"):
        load_decider(root)


@pytest.mark.parametrize("change, fragment", [
    (lambda s: s.pop("norm.weight"), "missing ['norm.weight']"),
    (lambda s: s.update({"extra.weight": torch.zeros(2)}), "unexpected ['extra.weight']"),
])
def test_missing_or_unexpected_tensors_are_refused(exported, change, fragment):
    root, _ = exported
    _rewrite_body(root, change)
    with pytest.raises(DecisionExportError) as err:
        load_decider(root)
    assert fragment in str(err.value)


def test_other_directories_are_refused(tmp_path, exported):
    with pytest.raises(DecisionExportError, match="no decision.json"):
        load_decider(tmp_path)
    root, decider = exported
    with pytest.raises(DecisionExportError, match="not empty"):
        export_decision(root, decider.body, decider.rows, decider.tokenizer, base_model="x", training={})
    _rewrite_card(root, format="other-v2")
    with pytest.raises(DecisionExportError, match="format 'other-v2'"):
        load_decider(root)
