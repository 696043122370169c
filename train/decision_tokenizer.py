"""Build the from-scratch decision model's starting point: our own tokenizer and a random body.

The tokenizer is a byte-level BPE trained with ``tokenizers`` on prompts rendered from the
``format`` partition and binding drills. Its pre-tokenizer (``WORD_SPLIT``) keeps whitespace out of
words, so an option's text and the same text in the state are the same tokens whatever precedes
them (under the Qwen split, ``"PENDING"`` in a JSON state and ``A) PENDING`` were different
tokens); " A" .. " Z" are asserted to be single tokens, and the state/question seam stays clean. The body is a small randomly initialised Qwen3 (head_dim passed
explicitly); the 26 letter rows start small and random. Both are written as an rlcd-decision-only-v1
export (HF config and tokenizer files inside), so every later stage loads it with verification.

    python -m train.decision_tokenizer --data runs/data/decision --out runs/decision/base --seed 0
"""

from dataclasses import dataclass, field

import torch

from core.decision.prompt import LETTERS, letter_token_ids, render_prompt
from core.decision.random_model import WORD_SPLIT, letter_tokenizer, random_body
from core.decision.data.drills import drill_rows
from core.decision.data.store import read_partition
from core.decision.export.published import export_decision, load_decider
from train.decision_run import parse_config


@dataclass(frozen=True)
class BaseConfig:
    """Tokenizer corpus and body shape."""

    data: str = field(default="runs/data/decision", metadata={"help": "dataset directory"})
    out: str = field(default="runs/decision/base", metadata={"help": "export directory (must not exist)"})
    corpus_rows: int = field(default=12000, metadata={"help": "format rows rendered for the BPE corpus"})
    corpus_drills: int = field(default=3000, metadata={"help": "binding drills rendered for the BPE corpus"})
    vocab_size: int = field(default=1024, metadata={"help": "BPE vocabulary target"})
    hidden: int = field(default=128, metadata={"help": "hidden size"})
    layers: int = field(default=4, metadata={"help": "transformer layers"})
    heads: int = field(default=4, metadata={"help": "attention heads (head_dim = hidden / heads)"})
    kv_heads: int = field(default=2, metadata={"help": "key/value heads"})
    seed: int = field(default=0, metadata={"help": "body and row init seed"})

    def __post_init__(self):
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not divisible by heads {self.heads}")


LETTER_LINES_PER_ROW = 2
"""Copies of "The answer is A B .. Z" per corpus row: each " A" .. " Z" then outnumbers any pair
inside the prompt's fixed words, so BPE merges every letter token whatever the vocabulary size."""


def corpus(data: str, n: int, drills: int = 0, seed: int = 0) -> list[str]:
    """Rendered prompts plus their answer letter (the text the model will read), and letter lines."""
    rows = read_partition(data, "format")[:n] + drill_rows(seed, drills)
    letters = "The answer is " + " ".join(LETTERS)
    prompts = [render_prompt(r.state, r.question, r.options) + " " + LETTERS[r.label] for r in rows]
    return prompts + [letters] * (LETTER_LINES_PER_ROW * len(prompts))


def main(config: BaseConfig):
    text = corpus(config.data, config.corpus_rows, config.corpus_drills, config.seed)
    tokenizer = letter_tokenizer(text, vocab_size=config.vocab_size, split=WORD_SPLIT)
    ids = letter_token_ids(tokenizer)  # raises unless " A" .. " Z" are single tokens
    body = random_body(len(tokenizer), seed=config.seed, hidden=config.hidden, layers=config.layers,
                       heads=config.heads, kv_heads=config.kv_heads, head_dim=config.hidden // config.heads,
                       intermediate=3 * config.hidden)
    g = torch.Generator().manual_seed(config.seed + 1)
    rows = torch.randn(26, config.hidden, generator=g) * 0.02
    training = {"stage": "random init", "tokenizer_corpus_rows": config.corpus_rows,
                "tokenizer_corpus_drills": config.corpus_drills, "pre_tokenizer": "WORD_SPLIT",
                "vocab_size": len(tokenizer), "seed": config.seed, "letter_ids": ids}
    out = export_decision(config.out, body, rows, tokenizer, base_model="none (random init)", training=training)
    load_decider(out)
    return out


if __name__ == "__main__":
    print(main(parse_config(BaseConfig)))
