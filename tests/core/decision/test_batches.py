"""Decision batches: where each option ends in the tokenized prompt, for the format stage's aux losses."""

import pytest

from core.decision.random_model import WORD_SPLIT, letter_tokenizer
from core.decision.batches import Prompt, option_ends, tokenize_prompts

PROMPTS = [
    Prompt('{"status": "ON_HOLD"}', "Which status?", ("ON_HOLD", " CANCELLED ", "None of the above")),
    Prompt("Ticket 7\nMessage: hi", "Paged?", ("true", "false")),
]


@pytest.fixture(scope="module", params=["qwen", "word"])
def tok(request):
    return letter_tokenizer() if request.param == "qwen" else letter_tokenizer(split=WORD_SPLIT)


def test_option_ends_mark_the_last_token_of_each_option(tok):
    ids = tokenize_prompts(tok, PROMPTS)
    for row, marks, prompt in zip(ids, option_ends(tok, PROMPTS), PROMPTS):
        assert len(marks) == len(prompt.options) and marks == sorted(marks)
        for mark, option in zip(marks, prompt.options):
            assert tok.decode(row[: mark + 1]).endswith(option.strip())
            assert tok.decode(row[mark + 1 : mark + 2]) == "\n"


def test_word_split_gives_state_and_option_the_same_tokens():
    tok = letter_tokenizer(split=WORD_SPLIT)
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    value = enc("PENDING")
    for context in ['"status": "PENDING"', "A) PENDING", "status PENDING now"]:
        ids = enc(context)
        assert any(ids[i : i + len(value)] == value for i in range(len(ids))), context
    assert all(len(enc(" " + c)) == 1 for c in "ABCXYZ")
