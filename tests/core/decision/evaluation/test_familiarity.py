"""The out-of-distribution signal: fires on natural-language tickets, quiet on our test rows."""

import json
from pathlib import Path

import pytest

from core.decision.evaluation.familiarity import (NO_SIGNAL, THRESHOLD, EmbeddingFamiliarity, by_vocabulary, familiarity,
                                                  set_note, warning)

ROOT = Path(__file__).parents[4]
SHIPPED_TOKENIZER = ROOT / "checkpoints" / "decision-rlcd" / "tokenizer.json"
NATURAL = ROOT / "tests" / "fixtures" / "natural_tickets.jsonl"


class WordTokenizer:
    """One token per known word, one per character otherwise (a tiny stand-in for BPE)."""

    def __init__(self, words):
        self.words = set(words)

    def encode(self, text, add_special_tokens=False):
        return [0] if text in self.words else list(text)


@pytest.mark.parametrize("texts, rate, fires", [
    (("the card payment was declined",), 0.0, False),          # every word known
    (("The card payment bounced",), 0.25, True),                # "bounced" unknown; "The" known lower-cased
    (("Ticket 42: ###",), 0.0, False),                          # numbers and symbols are not words
    (("",), 0.0, True),                                         # no words at all: unlike every worded training state
    (("🙂 🙂 42 %%",), 0.0, True),                              # emoji and digits only: the same
    (("the card", "was refunded twice"), 0.4, True),            # questions count with the state
])
def test_rate_table(texts, rate, fires):
    tok = WordTokenizer({"the", "card", "payment", "was", "declined", "Ticket"})
    found = familiarity(tok, *texts, known_pairs=None)  # words only here; pairs below
    assert found.rate == pytest.approx(rate) and found.out_of_distribution is fires
    assert ("Out of distribution" in warning(found, "m")) is fires


KNOWN = ("the", "card", "payment", "was", "declined", "servers", "invite", "teammate")


@pytest.mark.parametrize("text, pair_rate, fires, why", [
    ("the card payment was declined", 0.0, False, ""),                      # every pair seen in training
    ("payment the declined card was", 1.0, True, "word pairs"),             # known words, never in this order
    ("the servers invite the teammate", 0.75, True, "servers invite"),      # three of four pairs are new
    ("the card payment was declined the servers", 1 / 6, True, "the servers"),  # one new pair in six: over 0.15
])
def test_known_words_in_an_unknown_order_fire(text, pair_rate, fires, why):
    pairs = {("the", "card"), ("card", "payment"), ("payment", "was"), ("was", "declined"),
             ("declined", "the"), ("the", "teammate")}
    found = familiarity(WordTokenizer(KNOWN), text, known_pairs=pairs)
    assert found.rate == 0.0 and found.pair_rate == pytest.approx(pair_rate) and found.out_of_distribution is fires
    assert why in warning(found, "m") and found.record()["unknown_pair_rate"] == round(pair_rate, 4)


def test_a_model_without_the_signal_says_so():
    assert warning(None, "SmolLM2") == f"SmolLM2: {NO_SIGNAL}."
    assert set_note(None, "SmolLM2") == f"SmolLM2: {NO_SIGNAL}."
    assert by_vocabulary(None, "a ticket") is None


def test_a_set_note_counts_the_states_out_of_distribution():
    tok = WordTokenizer(KNOWN)
    found = [by_vocabulary(tok, t) for t in ("the card", "42 🙂")]
    assert found[0] == familiarity(tok, "the card")
    assert "all 1 states are like" in set_note(found[:1], "m")
    assert "⚠ m: 1 of 2 states" in set_note(found, "m") and "unknown words or word pairs above 15%" in set_note(found, "m")


@pytest.mark.parametrize("share, fires", [(0.5, False), (0.09, False), (0.05, True), (0.0, True)])
def test_the_embedding_signal_fires_below_its_threshold(share, fires):
    found = EmbeddingFamiliarity(share, 0.09)
    assert found.out_of_distribution is fires and found.record() == {
        "signal": "embedding", "familiarity": share, "out_of_distribution": fires, "threshold": 0.09}
    assert found.cell().startswith("⚠ unlike it") is fires and f"familiarity {share:.0%}" in found.cell()
    assert ("Out of distribution" in warning(found, "m")) is fires and "warns below 9%" in warning(found, "m")
    assert ("1 of 1 states" in set_note([found], "m")) is fires


@pytest.fixture(scope="module")
def shipped():
    if not SHIPPED_TOKENIZER.is_file():
        pytest.skip("the shipped decision tokenizer is not in this checkout")
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=str(SHIPPED_TOKENIZER))


def test_fires_on_natural_tickets(shipped):
    rows = [json.loads(line) for line in NATURAL.read_text().splitlines()]
    found = [familiarity(shipped, r["state"]) for r in rows]
    assert len(rows) == 120 and sum(f.out_of_distribution for f in found) / len(found) >= 0.95
    assert min(f.rate for f in found) > THRESHOLD


def test_quiet_on_our_test_rows(shipped):
    from core.decision.evaluation.evalsets import split_items
    from core.decision.questions import render_state

    by_context: dict[str, list] = {}
    for item in split_items(300):
        by_context.setdefault(item.context_id, []).append(item)
    found = [familiarity(shipped, render_state(items[0].state)) for items in by_context.values()]
    assert len(found) >= 300 and sum(f.out_of_distribution for f in found) / len(found) <= 0.01


def test_a_training_shaped_ticket_with_a_meaning_unlike_its_data_fires(shipped):
    def ticket(message):
        return f"Ticket 1\nCustomer tier: STARTER\nMessage: {message}\nNote: urgent please."

    usual = familiarity(shipped, ticket("how do I invite a teammate; the servers are unreachable."))
    odd = familiarity(shipped, ticket("the teammate is unreachable; invite the servers please."))  # every word a token
    assert usual.rate == odd.rate == 0.0 and not usual.out_of_distribution
    assert odd.pair_rate > THRESHOLD and odd.out_of_distribution and "invite the" in odd.unknown_pairs
