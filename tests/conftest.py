"""Shared fixtures: where the published reference facts live (skip cleanly when absent), a
headless Chromium for the browser tests, scripted chat endpoints, and the tiny tokenizer and
checkpoint (built once per session) that the train/ tests and the adapter-loading tests share."""

import os
from pathlib import Path

import pytest

from tests.app.harness import chromium

ROOT = Path(__file__).resolve().parents[1]


def shared_reference() -> Path | None:
    """The ``../shared/reference`` folder beside the checkout, or $CLARIFYLAB_SHARED/reference."""
    base = Path(os.environ.get("CLARIFYLAB_SHARED", ROOT.parent / "shared"))
    ref = base / "reference"
    return ref if ref.is_dir() else None


@pytest.fixture
def reference_dir() -> Path:
    ref = shared_reference()
    if ref is None:
        pytest.skip("../shared/reference is not present on this machine")
    return ref


@pytest.fixture(scope="module")
def browser():
    """Debian Chromium through Playwright, one per test module; skips when it is not installed."""
    with chromium() as b:
        yield b


@pytest.fixture
def chat_server():
    """Scripted chat endpoints on 127.0.0.1 (``chat_server(*replies)``), closed after the test."""
    from tests.fixtures.chat_stream_server import ChatStreamServer

    made = []

    def make(*replies):
        made.append(ChatStreamServer(list(replies)))
        return made[-1]
    yield make
    for s in made:
        s.close()


@pytest.fixture(scope="session")
def tiny_tokenizer():
    """Our byte-level BPE trained on a few demos (built locally, no downloads)."""
    from tests.train.conftest import TINY
    from train.clarify_tokenizer import corpus, train_tokenizer

    return train_tokenizer(corpus(demos=30), TINY["vocab_size"])


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tiny_tokenizer):
    """A random tiny Qwen3 with our tokenizer, saved in Hugging Face layout."""
    import torch

    from tests.train.conftest import TINY
    from train.clarify_sft import SFTConfig, build_model

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("tiny")
    build_model(SFTConfig(**TINY), len(tiny_tokenizer)).save_pretrained(out)
    tiny_tokenizer.save_pretrained(out)
    return out
