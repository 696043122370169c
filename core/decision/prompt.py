"""The published letter-readout prompt, its prefix/suffix seam, and the letter tokens.

The prompt is plain text (no chat template, no BOS for Qwen3). It splits after the blank line that
ends the state: the prefix ``"User: Context:\\n<state>\\n\\n"`` is shared by every question about
that state, the suffix holds one question and its lettered options. Sharing the prefix is only
exact if the tokenizer never merges tokens across that seam, so ``check_seam`` refuses one that does.

    from core.decision.prompt import render_prompt, split_prompt, letter_token_ids
    text = render_prompt("ticket text", "Which team?", ["billing", "security"])
"""

from string import ascii_uppercase
from typing import Sequence

LETTERS: tuple[str, ...] = tuple(ascii_uppercase)
"""The 26 option letters; option i is shown as ``LETTERS[i] + ")"``."""
LETTER_TOKENS: tuple[str, ...] = tuple(" " + c for c in LETTERS)
"""The readout tokens " A" .. " Z" (leading space); each must be ONE token."""
PROMPT_TEMPLATE = (
    "User: Context:\n{state}\n\nQuestion: {question}\nOptions:\n{options}\n"
    "Answer with the letter only.\nAssistant: The answer is"
)
"""The published template; ``{options}`` is one ``A) option`` line per option."""


class SeamError(ValueError):
    """The tokenizer merges tokens across the prefix/suffix seam, so sharing is not exact."""


def render_prefix(state: str) -> str:
    """The shared part of every prompt about ``state``: it ends with the blank line."""
    return "User: Context:\n" + state.strip() + "\n\n"


def header_tokens(tokenizer) -> int:
    """Tokens of the prefix's header (``User: Context:``): what a state's mean state leaves out."""
    return len(encode(tokenizer, render_prefix("x").split("x")[0].rstrip("\n")))


def render_suffix(question: str, options: Sequence[str]) -> str:
    """One question's part: the question, its lettered options and the answer cue."""
    lines = "\n".join(f"{LETTERS[i]}) {opt.strip()}" for i, opt in enumerate(options))
    return (
        f"Question: {question.strip()}\nOptions:\n{lines}\n"
        "Answer with the letter only.\nAssistant: The answer is"
    )


def split_prompt(state: str, question: str, options: Sequence[str]) -> tuple[str, str]:
    """(prefix, suffix) of the published prompt; ``prefix + suffix == render_prompt(...)``."""
    return render_prefix(state), render_suffix(question, options)


def render_prompt(state: str, question: str, options: Sequence[str]) -> str:
    """The full published prompt for one question about ``state``."""
    prefix, suffix = split_prompt(state, question, options)
    return prefix + suffix


def encode(tokenizer, text: str) -> list[int]:
    """Token ids of ``text`` with no special tokens added (BOS is the caller's decision)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


SUFFIX_HEAD = "Question:"
"""How every suffix begins; the prefix is tokenized as it reads before it."""


def encode_prefix(tokenizer, prefix: str) -> list[int]:
    """Token ids of ``prefix`` as every full prompt holds them: tokenized with the suffix's head after
    it, which is then dropped. A tokenizer that splits whitespace before a word (GPT-2's rule:
    "\n\nQuestion" is "\n", "\n", "Question", but "\n\n" alone one token) gets the prefix it
    sees in the whole prompt; one that does not gets ``encode(prefix)``."""
    head = encode(tokenizer, SUFFIX_HEAD)
    ids = encode(tokenizer, prefix + SUFFIX_HEAD)
    if ids[len(ids) - len(head):] != head:
        return encode(tokenizer, prefix)  # the head merges into the prefix: check_seam refuses it
    return ids[: len(ids) - len(head)]


def check_seam(tokenizer, prefix: str, suffix: str) -> tuple[list[int], list[int]]:
    """Token ids of prefix (``encode_prefix``) and suffix, after checking that they concatenate to the whole.

    Raises:
        SeamError: when ``encode_prefix(prefix) + encode(suffix) != encode(prefix + suffix)``.
    """
    p, s = encode_prefix(tokenizer, prefix), encode(tokenizer, suffix)
    whole = encode(tokenizer, prefix + suffix)
    if p + s != whole:
        at = next((i for i, (x, y) in enumerate(zip(p + s, whole)) if x != y), min(len(whole), len(p + s)))
        raise SeamError(
            f"tokenizer merges tokens across the state/question seam (first difference at token {at}: "
            f"separately {len(p)}+{len(s)} tokens, together {len(whole)}); shared-prefix scoring "
            "would not equal one full prompt per question, so this tokenizer is refused"
        )
    return p, s


def longest_token(tokenizer) -> int:
    """Characters in the tokenizer's longest token: no token covers more of a text (so a text of n
    characters is at least n / this many tokens, known without tokenizing)."""
    return max(map(len, tokenizer.get_vocab()), default=1)


def letter_token_ids(tokenizer) -> list[int]:
    """The ids of " A" .. " Z"; refuses a tokenizer where any of them is not a single token."""
    ids = []
    for tok in LETTER_TOKENS:
        enc = encode(tokenizer, tok)
        if len(enc) != 1:
            raise ValueError(f"letter token {tok!r} is {len(enc)} tokens {enc} in this tokenizer; it must be one")
        ids.append(enc[0])
    if len(set(ids)) != len(ids):
        raise ValueError(f"letter tokens share ids: {ids}")
    return ids
