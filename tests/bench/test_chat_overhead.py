"""The streaming-overhead bench compares like with like on the shipped policy (no timing asserted)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_bench():
    spec = importlib.util.spec_from_file_location("chat_overhead", ROOT / "bench" / "chat_overhead.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (ROOT / "checkpoints" / "clarify-grpo" / "config.json").is_file(), reason="no shipped policy")
def test_both_paths_generate_the_same_tokens_on_the_shipped_policy():
    """A trained policy closes its call ~10 tokens in; our path's call stop once ended its turn there while
    bare generate went on to N, and the bench stopped with an error instead of a measurement."""
    bench = load_bench()
    label, model, tokenizer = bench.shipped_policy(ROOT / "checkpoints" / "clarify-grpo")
    row = bench.measure(label, model, tokenizer, tokens=24, rounds=1)
    assert row["new_tokens"] == 24 and row["overhead_ratio"] > 0 and row["ours_tokens_per_s"] > 0
