"""Decision models for the picker: local exports, shipped folders, published entries, load once."""

import time

import pytest
import torch

from core.decision.model import open_decider
from core.decision.option.decider import OptionDecider
from core.models import entries
from core.models.availability import REMOTE_CODE, check_decision, check_export, design, how_to_get
from core.models.cache import ModelCache, pick
from core.models.entries import LETTER_DESIGN, OPTION_DESIGN, POOLED_DESIGN, SHIPPED_DIR
from core.models.lists import all_entries, decision_entries, discover_local
from tests.fixtures.tiny_decision import export_models


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    torch.set_num_threads(1)
    root = export_models(tmp_path_factory.mktemp("models"), names=("tiny-a",))
    (root / "not-a-model").mkdir()
    (root / "not-a-model" / "config.json").write_text("{}")
    return root


def test_entries_local_first_then_shipped(models_dir, tmp_path):
    entries = decision_entries(models_dir, shipped_dir=tmp_path)
    pooled = ["decision-smollm2-pooled-rlcd", "decision-smollm2-pooled-warmup", "decision-smollm2-pooled-rlvr",
              "decision-smollm2-pooled-cued"]
    letters = ["decision-smollm2-rlcd", "decision-smollm2-warmup", "decision-smollm2-rlvr"]
    assert [e.key for e in entries[:12]] == ["tiny-a", *pooled, *letters, "decision-rlcd", "decision-warmup",
                                             "decision-rlvr", "decision-oracle"]
    assert check_decision(entries[0]).ok
    for entry in entries[1:9]:
        shipped = check_decision(entry)
        assert not shipped.ok and "not trained yet" in shipped.message
    assert "python -m train.decision_pooled --out" in check_decision(entries[1]).message
    assert "python -m train.decision_pooled_cued" in check_decision(entries[4]).message
    assert "ask-or-act agent's reader" in entries[4].note and "mean states" in entries[1].note
    assert "bash train/decision_graft.sh" in check_decision(entries[5]).message


@pytest.mark.parametrize("name, files", [
    ("decision-rlcd", {"decision.json": "{}", "adapter_config.json": '{"base_model_name_or_path": "no/such-base"}',
                      "adapter_model.safetensors": ""}),
    ("decision-smollm2-pooled-rlcd", {"pooled.json": '{"base_model": "no/such-base"}'})])
def test_a_shipped_folder_with_its_card_that_cannot_load_says_why_not_untrained(tmp_path, name, files):
    (tmp_path / name).mkdir()
    for file, text in files.items():
        (tmp_path / name / file).write_text(text)
    entry = next(e for e in decision_entries(tmp_path / "none", shipped_dir=tmp_path) if e.key == name)
    found = check_decision(entry)
    assert not found.ok and "not trained yet" not in found.message and "no/such-base" in found.message


def test_check_export_says_what_is_missing(models_dir):
    assert "no decision.json" in check_export(models_dir / "not-a-model").message
    assert "no folder" in check_export(models_dir / "absent").message


def test_cache_loads_each_folder_once_and_pick_names_fields(models_dir, monkeypatch, tmp_path):
    cache = ModelCache(open_decider=open_decider)
    entry = decision_entries(models_dir)[0]
    assert cache.decider(entry) is cache.decider(entry)
    deciders, errors = pick(cache, models_dir, {"model": "tiny-a", "model_b": "nope", "other": ""})
    assert list(deciders) == ["tiny-a"] and list(errors) == ["model_b"] and "unknown model" in errors["model_b"]
    monkeypatch.setattr(entries, "SHIPPED_DIR", tmp_path / "checkpoints")  # a checkout without trained models
    _, errors = pick(cache, models_dir, {"model": "decision-rlvr"})
    assert "not trained yet" in errors["model"]


def test_published_decision_models_come_from_the_one_list(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))  # an empty cache: no published model is here
    published = [e for e in decision_entries() if e.source == "hub"]
    assert published and published == entries.published_entries(kind="decision")
    for entry in published:
        start = time.perf_counter()
        found = check_decision(entry)  # offline: the cache read, never a download, and the reason
        assert time.perf_counter() - start < 2.0 and not found.ok
        assert found.message == (f"{entry.location} {REMOTE_CODE}" if entry.remote_code else how_to_get(entry.location))


def test_the_picker_lists_the_one_list(models_dir):
    picker = {e.key for e in decision_entries(models_dir)}
    assert picker == {e.key for e in all_entries(models_dir, kind="decision")}
    assert {"tiny-a", "decision-rlcd"} <= picker and "not-a-model" not in picker
    every = all_entries(models_dir)
    assert len({e.key for e in every}) == len(every)  # one key convention, no collisions across kinds


SHIPPED_SCORER = SHIPPED_DIR / "option-scorer"


def test_the_shipped_option_scorer_is_a_shipped_entry_with_its_design(tmp_path):
    entry = next(e for e in decision_entries() if e.key == "option-scorer")
    assert entry.source == "shipped" and entry.kind == "decision" and entry.location == str(SHIPPED_SCORER)
    assert design(entry) == OPTION_DESIGN and design(decision_entries()[0]) == POOLED_DESIGN
    assert design(next(e for e in decision_entries() if e.key == "decision-rlcd")) == LETTER_DESIGN
    assert check_decision(entry).ok and check_decision(entry).path == SHIPPED_SCORER
    absent = next(e for e in decision_entries(shipped_dir=tmp_path) if e.key == "option-scorer")
    found = check_decision(absent)  # a checkout without it: says how to make it
    assert not found.ok and "train/option_pipeline.sh" in found.message


def test_an_option_scorer_folder_loads_strictly_and_is_asked_as_an_option_decider(tmp_path):
    import shutil

    from core.decision.option.model import OptionModelError

    copy = tmp_path / "models" / "my-scorer"
    shutil.copytree(SHIPPED_SCORER, copy)
    local = next(e for e in decision_entries(copy.parent) if e.key == "my-scorer")  # discovered in a models folder
    assert "option scorer" in local.note and design(local, check_decision(local)) == OPTION_DESIGN
    decider = ModelCache(open_decider=open_decider).decider(local)
    assert isinstance(decider, OptionDecider) and decider.max_options == 255 and decider.max_tokens == 8192
    out = decider.score("Ticket 9: charged twice", {"t": {"type": "choice", "instructions": "Which team?",
                                                          "criteria": {"BIL": "billing", "SEC": "security"}}})
    ans = out["answers"]["t"]
    assert {"confidence", "max_p", "entropy_confidence"} <= set(ans) and out["usage"]["path"] == "one pass"
    assert not 0 <= ans["max_p"] - ans["confidence"] < 1e-12  # the head's confidence, not max p again
    with open(copy / "heads.safetensors", "r+b") as f:  # one flipped byte: refused by the hash check
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 1]))
    with pytest.raises(OptionModelError, match="sha256"):
        open_decider(local, copy)
    assert "my-scorer" not in {e.key for e in discover_local(copy.parent, "policy")}  # not a policy


def test_a_damaged_export_says_so_in_plain_words(models_dir, tmp_path):
    """An export without its card is not offered as a chat model (the pipeline would give it a random language
    head and its template refuses), and a malformed card is named field by field, not in pydantic's own text."""
    import shutil

    from core.decision.export.published import load_decider
    from core.models.availability import check_export

    no_card = tmp_path / "no-card"
    shutil.copytree(models_dir / "tiny-a", no_card)
    (no_card / "decision.json").unlink()
    found = check_export(no_card, pipeline_ok=True)
    assert not found.ok and "holds an export's decision_head.safetensors but no decision.json" in found.message
    bad_card = tmp_path / "bad-card"
    shutil.copytree(models_dir / "tiny-a", bad_card)
    (bad_card / "decision.json").write_text("[1, 2]")
    with pytest.raises(ValueError) as err:
        load_decider(bad_card)
    assert "decision.json is malformed: field (record): Input should be a valid dictionary" in str(err.value)
    assert "pydantic" not in str(err.value) and "input_value" not in str(err.value)
