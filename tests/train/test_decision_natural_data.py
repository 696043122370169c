"""The natural-ticket CLI: small splits on disk, hash-checked through the store, byte-identical reruns."""

import json

import pytest

from core.decision.data.natural import natural_contexts, split_profile
from core.decision.data.store import read_manifest, read_partition
from train import decision_natural_data
from train.decision_natural_data import NaturalDataConfig, main, parse_args, word_baseline


def test_writes_three_splits_readable_through_the_store(tmp_path):
    manifest = main(parse_args(["--out", str(tmp_path / "a"), "--train", "12", "--val", "4", "--test", "8"]))
    assert manifest.contexts == {"train": 12, "val": 4, "test": 8}
    assert read_manifest(tmp_path / "a") == manifest
    for split, n in manifest.contexts.items():
        rows = read_partition(tmp_path / "a", split)  # verifies the sha256 in the manifest
        assert len(rows) == 3 * n and manifest.files[f"{split}.jsonl"].sources == {"natural": 3 * n}
        assert rows == [r for context in natural_contexts(split, n, 0) for r in context]


def test_profile_is_written_when_asked(tmp_path):
    main(NaturalDataConfig(out=tmp_path / "a", tickets={"train": 8, "val": 4, "test": 4}, profile=tmp_path / "p.json"))
    profile = json.loads((tmp_path / "p.json").read_text())
    assert profile["seed"] == 0 and list(profile["splits"]) == ["train", "val", "test"]
    assert profile["splits"]["train"] == split_profile(natural_contexts("train", 8, 0))
    baseline = profile["word_baseline"]
    assert set(baseline) == {"val", "test", "train_families_fresh"}
    assert all(set(b) == {"department", "priority", "page"} for b in baseline.values())
    assert baseline["test"]["page"]["n"] == 4 and 0.0 <= baseline["test"]["page"]["mean"] <= 1.0
    main(NaturalDataConfig(out=tmp_path / "b", tickets={"train": 1, "val": 1, "test": 1}))
    assert not (tmp_path / "b" / "p.json").exists() and sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "manifest.json", "test.jsonl", "train.jsonl", "val.jsonl"]


def test_word_baseline_memorises_seen_families_and_fails_held_out_ones():
    train = natural_contexts("train", 200, 0)
    result = word_baseline(train, {"seen": natural_contexts("train", 100, 1), "test": natural_contexts("test", 100, 0)})
    # priority is fixed by the urgency phrase: memorised phrases give it (typos aside), new ones do not
    assert result["seen"]["priority"]["mean"] > 0.9
    assert result["test"]["priority"]["mean"] < 0.7
    assert result["seen"]["department"]["mean"] > result["test"]["department"]["mean"] + 0.2


def test_same_config_gives_byte_identical_files(tmp_path):
    tickets = {"train": 6, "val": 2, "test": 3}
    main(NaturalDataConfig(out=tmp_path / "a", seed=4, tickets=tickets))
    main(NaturalDataConfig(out=tmp_path / "b", seed=4, tickets=tickets))
    for name in ("train.jsonl", "val.jsonl", "test.jsonl", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_defaults_and_refusals():
    config = parse_args([])
    assert config.tickets == {"train": 2000, "val": 200, "test": 400} and config.seed == 0
    assert str(config.out) == "runs/data/natural"
    with pytest.raises(ValueError, match="each of"):
        NaturalDataConfig(tickets={"train": 1, "val": 1})
    with pytest.raises(ValueError, match=">= 0"):
        NaturalDataConfig(tickets={"train": 1, "val": -1, "test": 1})
    with pytest.raises(ValueError, match=">= 4 train tickets"):
        NaturalDataConfig(tickets={"train": 3, "val": 1, "test": 1}, profile="p.json")
    assert decision_natural_data.__doc__.count("python -m train.decision_natural_data") == 1


def test_phrasebook_v2_changes_train_only_and_the_manifest_says_so(tmp_path):
    counts = ["--train", "12", "--val", "4", "--test", "8"]
    v1 = main(parse_args(["--out", str(tmp_path / "v1"), *counts]))
    v2 = main(parse_args(["--out", str(tmp_path / "v2"), "--phrasebook", "v2", *counts]))
    assert v1.phrasebook is None and "phrasebook" not in json.loads((tmp_path / "v1" / "manifest.json").read_text())
    assert v2.phrasebook == "v2" and read_manifest(tmp_path / "v2") == v2
    assert v2.files["val.jsonl"] == v1.files["val.jsonl"] and v2.files["test.jsonl"] == v1.files["test.jsonl"]
    assert v2.files["train.jsonl"].sha256 != v1.files["train.jsonl"].sha256
    assert read_partition(tmp_path / "v2", "train") == [r for c in natural_contexts("train", 12, 0, "v2") for r in c]
    with pytest.raises(SystemExit):
        parse_args(["--phrasebook", "v3"])
    with pytest.raises(ValueError, match="unknown phrasebook 'v3'"):
        NaturalDataConfig(phrasebook="v3")
