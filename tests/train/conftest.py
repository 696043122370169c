"""Tiny tokenizer and checkpoints for the train/ tests (built locally, no downloads)."""

import pytest
import torch

from train.clarify_sft import SFTConfig, build_model
from train.clarify_tokenizer import corpus, train_tokenizer

TINY = dict(hidden_size=16, layers=2, heads=2, kv_heads=1, intermediate_size=32, vocab_size=600)
"""A model of a few thousand parameters: every test step runs in milliseconds."""


@pytest.fixture(scope="session")
def tiny_tokenizer():
    return train_tokenizer(corpus(demos=30), TINY["vocab_size"])


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tiny_tokenizer):
    """A random tiny Qwen3 with our tokenizer, saved in Hugging Face layout."""
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("tiny")
    build_model(SFTConfig(**TINY), len(tiny_tokenizer)).save_pretrained(out)
    tiny_tokenizer.save_pretrained(out)
    return out
