"""Decision models for the picker: local exports, shipped folders, published entries, load once."""

import pytest
import torch

from core.decision import models as dm
from tests.fixtures.tiny_decision import export_models


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    torch.set_num_threads(1)
    root = export_models(tmp_path_factory.mktemp("models"), names=("tiny-a",))
    (root / "not-a-model").mkdir()
    (root / "not-a-model" / "config.json").write_text("{}")
    return root


def test_entries_local_first_then_shipped(models_dir, tmp_path):
    entries = dm.entries(models_dir, shipped_dir=tmp_path)
    assert [e.key for e in entries[:5]] == ["tiny-a", "decision-rlcd", "decision-warmup", "decision-rlvr", "decision-oracle"]
    assert dm.check(entries[0]).ok
    shipped = dm.check(entries[1])
    assert not shipped.ok and "not trained yet" in shipped.message


def test_check_export_says_what_is_missing(models_dir):
    assert "no decision.json" in dm.check_export(models_dir / "not-a-model").message
    assert "no folder" in dm.check_export(models_dir / "absent").message


def test_cache_loads_each_folder_once_and_pick_names_fields(models_dir, monkeypatch, tmp_path):
    cache = dm.DeciderCache()
    entry = dm.entries(models_dir)[0]
    assert cache.get(entry) is cache.get(entry)
    deciders, errors = dm.pick(cache, models_dir, {"model": "tiny-a", "model_b": "nope", "other": ""})
    assert list(deciders) == ["tiny-a"] and list(errors) == ["model_b"] and "unknown model" in errors["model_b"]
    monkeypatch.setattr(dm, "SHIPPED_DIR", tmp_path / "checkpoints")  # a checkout without trained models
    _, errors = dm.pick(cache, models_dir, {"model": "decision-rlvr"})
    assert "not trained yet" in errors["model"]


def test_published_decision_models_come_from_the_registry():
    pytest.importorskip("core.registry")
    published = [e for e in dm.entries() if e.source == "hub"]
    assert published and all(e.source == "hub" for e in published)
    for entry in published:
        found = dm.check(entry)  # offline: never a download, always a reason
        assert found.ok or found.message
        if entry.remote_code:
            assert not found.ok and "remote code" in found.message


def test_the_picker_lists_the_registrys_one_list(models_dir):
    from core import registry

    picker = {e.key for e in dm.entries(models_dir)}
    assert picker == {e.key for e in registry.all_entries(models_dir, kind="decision")}
    assert {"tiny-a", "decision-rlcd"} <= picker and "not-a-model" not in picker
    every = registry.all_entries(models_dir)
    assert len({e.key for e in every}) == len(every)  # one key convention, no collisions across kinds
