"""The tiny model shape of the train/ tests (its tokenizer and checkpoint fixtures live in tests/conftest.py,
shared with the core tests that load adapters over it), and the pooled readout's tiny base and data."""

import subprocess
import sys
from pathlib import Path

import pytest

TINY = dict(hidden_size=16, layers=2, heads=2, kv_heads=1, intermediate_size=32, vocab_size=600)
"""A model of a few thousand parameters: every test step runs in milliseconds."""


@pytest.fixture(scope="session")
def pooled_data(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(a tiny random Llama base, a natural-ticket dataset, a synthetic dataset), small enough for seconds."""
    from tests.fixtures.tiny_adapter_arm import build_tiny_llama
    from train.decision_natural_data import NaturalDataConfig, main as build

    root = tmp_path_factory.mktemp("pooled")
    build(NaturalDataConfig(out=root / "natural", tickets={"train": 30, "val": 6, "test": 6}, seed=0))
    subprocess.run([sys.executable, "-m", "train.decision_data", "--out", str(root / "synthetic"), "--format", "2",
                    "--warmup", "2", "--rl", "2", "--val", "2", "--test", "4", "--cued-format", "0", "--cued-warmup", "0",
                    "--cued-rl", "0", "--probe-per-kind", "3"], check=True, capture_output=True)
    return build_tiny_llama(root / "base"), root / "natural", root / "synthetic"
