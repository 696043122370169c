"""The published prompt text, the prefix/suffix split, the seam check and the letter tokens."""

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from core.decision.prompt import (
    encode, encode_prefix,
    LETTERS, SeamError, check_seam, letter_token_ids, render_prompt, split_prompt,
)


def test_prompt_is_the_published_text():
    text = render_prompt("  The printer is on fire.\n", " Which team? ", ["facilities", " security "])
    assert text == (
        "User: Context:\nThe printer is on fire.\n\nQuestion: Which team?\nOptions:\nA) facilities\n"
        "B) security\nAnswer with the letter only.\nAssistant: The answer is"
    )


def test_split_joins_back_and_cuts_after_the_blank_line():
    prefix, suffix = split_prompt("state", "q?", ["a", "b", "c"])
    assert prefix == "User: Context:\nstate\n\n" and prefix + suffix == render_prompt("state", "q?", ["a", "b", "c"])
    assert suffix.startswith("Question: q?\nOptions:\nA) a\nB) b\nC) c\n")


def test_letter_ids_are_26_distinct_single_tokens(letter_tok):
    ids = letter_token_ids(letter_tok)
    assert len(set(ids)) == 26
    assert [letter_tok.decode([i]) for i in ids] == [" " + c for c in LETTERS]


def test_seam_check_passes_on_a_qwen_style_tokenizer(letter_tok):
    for state in ["plain words", "ends with punctuation!", "numbers 12 34", "a\n\nparagraph break."]:
        p, s = check_seam(letter_tok, *split_prompt(state, "Which?", ["x", "y"]))
        assert p + s == letter_tok(render_prompt(state, "Which?", ["x", "y"]), add_special_tokens=False)["input_ids"]


def _gpt2_style_tokenizer() -> PreTrainedTokenizerFast:
    """GPT-2 byte-level split with a learned "\\n\\n" token: "\\n\\n" at the end of the prefix alone is
    one token, but "\\n\\nQuestion" splits as "\\n", "\\n", "Question" (SmolLM2's tokenizer does this)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(["some state\n\n"] * 50 + [f"The answer is {c}" for c in LETTERS for _ in range(30)], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok)


def test_the_prefix_is_tokenized_as_the_whole_prompt_holds_it():
    tok = _gpt2_style_tokenizer()
    prefix, suffix = split_prompt("some state", "Which?", ["x", "y"])
    assert encode_prefix(tok, prefix) != encode(tok, prefix)  # alone, "\n\n" is one token
    p, s = check_seam(tok, prefix, suffix)
    assert p + s == encode(tok, prefix + suffix)
    assert tok.decode(p) == prefix


def test_seam_check_refuses_a_merging_tokenizer():
    """No pre-tokenizer: BPE learns "\\n\\nQuestion" as one token, so no prefix is shared exactly."""
    tok = Tokenizer(models.BPE())
    tok.decoder = decoders.ByteLevel()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(["state\n\nQuestion: Which?"] * 200, trainer)
    with pytest.raises(SeamError, match="merges tokens across"):
        check_seam(PreTrainedTokenizerFast(tokenizer_object=tok), *split_prompt("state", "Which?", ["x", "y"]))


def test_letter_ids_refuse_multi_token_letters():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=260, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(["hello"], trainer)
    with pytest.raises(ValueError, match="' A' is 2 tokens"):
        letter_token_ids(PreTrainedTokenizerFast(tokenizer_object=tok))
