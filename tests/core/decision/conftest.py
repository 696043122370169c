"""Tiny local decision models for the decision tests (reusable: see ``core.decision.random_model``).

``letter_tok`` is a byte-level BPE with the Qwen pre-tokenizer split in which " A".." Z" are single
tokens; ``make_decider(attn, seed)`` builds a random Qwen3 body (hidden 32, 2 layers, explicit
head_dim) with random letter rows. Session-scoped: building the tokenizer takes about a second.
"""

import pytest
import torch

from core.decision import Decider
from core.decision.random_model import letter_tokenizer, random_body, random_rows

HIDDEN = 32


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def letter_tok():
    return letter_tokenizer()


@pytest.fixture(scope="session")
def make_decider(letter_tok):
    cache: dict = {}

    def build(attn: str = "sdpa", seed: int = 0, **kwargs) -> Decider:
        key = (attn, seed, tuple(sorted(kwargs.items())))
        if key not in cache:
            body = random_body(len(letter_tok), seed=seed, attn_implementation=attn, hidden=HIDDEN, layers=2,
                               heads=4, kv_heads=2, head_dim=8)
            cache[key] = Decider(body, random_rows(HIDDEN, seed=seed + 100), letter_tok, **kwargs)
        return cache[key]

    return build
