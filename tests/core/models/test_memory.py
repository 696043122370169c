"""The memory bound on loaded models: bytes counted once, least recently used dropped, across caches."""

import pytest

from core.models.cache import ModelCache
from core.models.entries import local_entry
from core.models.memory import DEFAULT_MB, MEMORY_ENV, LoadedSet, memory_bound, model_bytes
from tests.fixtures.tiny_chat import build_tiny_chat


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory")
    return [build_tiny_chat(root / f"m{i}", seed=i, hidden=64) for i in range(3)]  # about 0.4 MB each


def test_bytes_count_each_tensor_once(folders):
    loaded = ModelCache(loaded_set=LoadedSet()).get(local_entry(folders[0]))
    params = sum(p.numel() * p.element_size() for p in loaded.model.parameters())
    assert params <= model_bytes(loaded) == model_bytes(loaded.model) < 2 * params


def test_the_least_recently_used_model_leaves_past_the_bound(folders, monkeypatch):
    shared = LoadedSet()
    live, decisions = ModelCache(loaded_set=shared), ModelCache(loaded_set=shared)
    one = model_bytes(live.get(local_entry(folders[0])))
    monkeypatch.setenv(MEMORY_ENV, "1")  # 1 MB: two tiny models fit, three do not
    assert 2 * one < 2**20 < 3 * one, f"the fixture model is {one} bytes: the 1 MB bound no longer tells two from three"
    decisions.get(local_entry(folders[1]))
    live.get(local_entry(folders[0]))  # a hit: m0 becomes the most recent
    live.get(local_entry(folders[2]))  # over the bound: m1 (the other cache's) leaves
    assert [label.rsplit("/", 1)[-1] for label in shared.labels()] == ["m0", "m2"]
    assert decisions.loaded() == [] and len(live.loaded()) == 2 and shared.total() <= memory_bound()


@pytest.mark.parametrize("raw, bound", [("", DEFAULT_MB * 2**20), ("512", 512 * 2**20)])  # unset: 2 GB
def test_memory_bound_reads_the_operators_setting(monkeypatch, raw, bound):
    monkeypatch.setenv(MEMORY_ENV, raw)
    assert memory_bound() == bound


@pytest.mark.parametrize("raw", ["0", "2GB", "-1"])
def test_a_bad_memory_bound_is_named(monkeypatch, raw):
    monkeypatch.setenv(MEMORY_ENV, raw)
    with pytest.raises(ValueError, match=f"{MEMORY_ENV} must be a whole number >= 1"):
        memory_bound()
