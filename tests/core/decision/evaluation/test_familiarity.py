"""The out-of-distribution signal: fires on natural-language tickets, quiet on our test rows."""

import json
from pathlib import Path

import pytest

from core.decision.evaluation.familiarity import THRESHOLD, familiarity, warning

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
    (("",), 0.0, False),                                        # nothing to judge: no warning
    (("the card", "was refunded twice"), 0.4, True),            # questions count with the state
])
def test_rate_table(texts, rate, fires):
    tok = WordTokenizer({"the", "card", "payment", "was", "declined", "Ticket"})
    found = familiarity(tok, *texts)
    assert found.rate == pytest.approx(rate) and found.out_of_distribution is fires
    assert ("Out of distribution" in warning(found, "m")) is fires


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
