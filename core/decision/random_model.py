"""Random Qwen3-architecture decision models and a letter-safe tokenizer, built locally.

Tests and benchmarks need a real causal-LM body and a tokenizer in which " A" .. " Z" are single
tokens, without any download. ``letter_tokenizer`` trains a byte-level BPE with the Qwen2/3
pre-tokenizer split (so "\\n\\n" is its own piece and the prompt seam is clean) on the caller's text
plus lines that guarantee the 26 letter tokens; ``random_body`` builds a randomly initialised
``Qwen3Model`` from a seed. ``letter_tokenizer`` is also usable on real training text.

    tok = letter_tokenizer()
    body, rows = random_body(len(tok), hidden=64, layers=2, seed=0), random_rows(64, seed=1)
"""

import random
from typing import Iterable

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3Model

from core.decision.prompt import LETTERS

QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
"""The Qwen2/Qwen3 pre-tokenizer pattern: newline runs are their own piece."""
WORD_SPLIT = r" [A-Z](?![\p{L}\p{N}])|\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+|\s+"
"""Words never carry a leading space (whitespace is its own piece), except the letters " A".." Z".

Under QWEN_SPLIT a value reads " PENDING" after "A) " but "PENDING" after a quote, so an option
and the same text in the state are different tokens; here they are always the same tokens.
"""
END = "<|endoftext|>"
_WORDS = (
    "the a an is are was of to in for on with by from at as and or not this that it ticket order "
    "customer billing security infrastructure support product priority critical high normal low "
    "meeting room date time team page engineer invoice refund login outage server error payment "
    "question options answer letter only assistant user context true false which who when how many "
    "should be paged immediately none above account password urgent late delivery item price"
).split()


def default_corpus(lines: int = 400, seed: int = 0) -> list[str]:
    """Deterministic filler text over a small vocabulary, in the prompt's layout."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 14)))
        out.append(f"User: Context:\n{words.capitalize()}.\n\nQuestion: {rng.choice(_WORDS)}?\nOptions:\n"
                   f"A) {rng.choice(_WORDS)}\nB) {rng.choice(_WORDS)}\nAnswer with the letter only.\n"
                   f"Assistant: The answer is {rng.choice(LETTERS)}")
    return out


def letter_tokenizer(texts: Iterable[str] | None = None, vocab_size: int = 1024,
                     split: str = QWEN_SPLIT) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on ``texts`` (default: ``default_corpus()``) with " A".." Z" single tokens.

    ``split`` is the pre-tokenizer regex (QWEN_SPLIT, or WORD_SPLIT for trained decision models).
    """
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(split), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[END], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    letters = [f"The answer is {c}" for c in LETTERS for _ in range(60)]
    tok.train_from_iterator(list(texts if texts is not None else default_corpus()) + letters, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=END, pad_token=END)
    for c in LETTERS:
        if len(fast(" " + c, add_special_tokens=False)["input_ids"]) != 1:
            raise ValueError(f"' {c}' did not become a single token; raise vocab_size ({vocab_size})")
    return fast


def body_config(vocab_size: int, hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2,
                head_dim: int | None = None, intermediate: int | None = None,
                attn_implementation: str = "sdpa") -> Qwen3Config:
    """A Qwen3 config of the given shape (head_dim passed explicitly: Qwen3 defaults it to 128)."""
    cfg = Qwen3Config(
        vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=head_dim or hidden // heads,
        intermediate_size=intermediate or 3 * hidden, max_position_embeddings=8192,
        tie_word_embeddings=False, pad_token_id=None,
    )
    cfg._attn_implementation = attn_implementation
    return cfg


def random_body(vocab_size: int, *, seed: int, attn_implementation: str = "sdpa", **shape) -> Qwen3Model:
    """A randomly initialised Qwen3Model (fp32, eval mode); ``shape`` goes to ``body_config``."""
    cfg = body_config(vocab_size, attn_implementation=attn_implementation, **shape)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        body = Qwen3Model(cfg)
    return body.eval()


def random_rows(hidden: int, *, seed: int, scale: float = 2.0) -> torch.Tensor:
    """26 random letter rows [26, hidden] (std ``scale / sqrt(hidden)``, so logits are O(1))."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(26, hidden, generator=g) * (scale / hidden**0.5)
