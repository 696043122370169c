"""train.decision_vocab: whole-word field tokens added to a decision export, nothing else moved."""

import torch

from core.decision.export.published import load_decider
from core.decision.prompt import letter_token_ids
from tests.fixtures.tiny_decision import export_tiny
from train.decision_run import load_model
from train.decision_vocab import VocabConfig, extend, field_words, main


def test_field_words_hold_every_value_and_noun_once():
    words = field_words()
    assert len(words) == len(set(words))
    assert {"leadership", "next week", "just me and X", "attendees", "budget"} <= set(words)


def test_extend_adds_whole_words_with_mean_embeddings(tmp_path):
    body, rows, tok = load_model(export_tiny(tmp_path / "m"))
    letters = letter_token_ids(tok)
    pieces = tok("leadership", add_special_tokens=False)["input_ids"]
    before = body.get_input_embeddings().weight.detach().clone()
    other = "The leaderships were flexible-ish."
    other_ids = tok(other, add_special_tokens=False)["input_ids"]
    added = extend(body, tok, ["leadership", "A"])
    assert added == ["leadership"]  # "A" is a single token already
    (new,) = tok("leadership", add_special_tokens=False)["input_ids"]
    weight = body.get_input_embeddings().weight
    assert torch.equal(weight[new], before[pieces].mean(0))
    assert torch.equal(weight[: before.shape[0]], before)
    assert letter_token_ids(tok) == letters
    assert tok(other, add_special_tokens=False)["input_ids"] == other_ids  # a whole word only


def test_main_writes_a_verified_export(tmp_path):
    init = export_tiny(tmp_path / "m")
    added = main(VocabConfig(init=str(init), out=str(tmp_path / "base")))
    decider = load_decider(tmp_path / "base")
    assert decider.body.get_input_embeddings().weight.shape[0] == len(decider.tokenizer)
    assert decider.tokenizer.convert_tokens_to_ids(added[0]) >= len(load_decider(init).tokenizer)
