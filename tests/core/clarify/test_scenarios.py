"""Scenario generator, published format and scenario-set specs."""

import hashlib
import json

import pytest

from core.clarify.families import FAMILIES
from core.clarify.scenarios import (
    CLARIFYLAB_HELDOUT_FILE, CLARIFYLAB_HELDOUT_PER_CELL, CLARIFYLAB_HELDOUT_SEEDS, PUBLISHED_HELDOUT_SEEDS,
    TRAIN_SEEDS, build_clarifylab_heldout, generate_scenario, load_scenarios, read_published,
    scenario_from_published, scenario_to_published,
)

PUBLISHED_SHA256 = "ec9f89e305ccccfdc15704a87f36b6ac60276521c42386ff474199658368371d"
"""sha256 of the published eval_held_out.json, loaded and re-dumped compactly (insertion order kept)."""


def canonical_sha(objs) -> str:
    return hashlib.sha256(json.dumps(objs, separators=(",", ":")).encode()).hexdigest()


def test_regenerates_all_300_published_scenarios(reference_dir):
    published = json.loads((reference_dir / "clarifyrl" / "eval_held_out.json").read_text())
    ours = [scenario_to_published(s) for s in load_scenarios("clarifyrl-heldout")]
    assert len(ours) == len(published) == 300
    for mine, theirs in zip(ours, published):
        # exact equality including key order of every dict (hidden_profile order is draw order)
        assert json.dumps(mine) == json.dumps(theirs)
    assert canonical_sha(published) == PUBLISHED_SHA256


def test_regenerated_heldout_hash_without_reference():
    # the same check as above, runnable on CI without ../shared
    ours = [scenario_to_published(s) for s in load_scenarios("clarifyrl-heldout")]
    assert canonical_sha(ours) == PUBLISHED_SHA256


def test_published_file_reads_back_through_from_published(reference_dir):
    path = reference_dir / "clarifyrl" / "eval_held_out.json"
    assert read_published(path) == load_scenarios("clarifyrl-heldout")
    assert load_scenarios(str(path), limit=50) == load_scenarios("clarifyrl-heldout", limit=50)


def test_generator_is_deterministic_and_ids_read_as_published():
    a, b = generate_scenario(10000, "hard"), generate_scenario(10000, "hard")
    assert a == b and list(a.hidden_profile) == list(b.hidden_profile)
    assert a.id == "seed10000_event_planning_hard"


@pytest.mark.parametrize("difficulty,lo,hi,min_crit", [("easy", 2, 3, 2), ("medium", 4, 5, 3), ("hard", 6, 7, 4)])
def test_generated_invariants(difficulty, lo, hi, min_crit):
    for seed in range(300):
        s = generate_scenario(seed, difficulty)
        family = FAMILIES[s.family]
        assert min(lo, len(family.fields)) <= len(s.hidden_profile) <= min(hi, len(family.fields))
        assert len(s.critical_fields) >= min(min_crit, len(family.critical))
        assert s.field_keys == sorted(s.hidden_profile)
        if difficulty == "easy":  # easy profiles are drawn from critical fields only
            assert set(s.hidden_profile) <= set(family.critical)
        else:  # medium/hard profiles start with the required keys, in order
            assert list(s.hidden_profile)[: len(family.required)] == list(family.required)


def test_unknown_difficulty_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown difficulty 'extreme'"):
        generate_scenario(1, "extreme")


def test_clarifylab_heldout_file_is_balanced_and_regenerates():
    stored = load_scenarios("clarifylab-heldout")
    assert stored == build_clarifylab_heldout()
    cells = {}
    for s in stored:
        cells[(s.family, s.difficulty)] = cells.get((s.family, s.difficulty), 0) + 1
        assert s.seed in CLARIFYLAB_HELDOUT_SEEDS
    assert len(cells) == 15 and set(cells.values()) == {CLARIFYLAB_HELDOUT_PER_CELL}
    assert len({s.id for s in stored}) == len(stored)
    assert json.loads(CLARIFYLAB_HELDOUT_FILE.read_text())[0]["task_id"] == "easy"


def test_seed_ranges_are_disjoint():
    train, pub, lab = set(TRAIN_SEEDS), set(PUBLISHED_HELDOUT_SEEDS), set(CLARIFYLAB_HELDOUT_SEEDS)
    assert not train & pub and not train & lab and not pub & lab


@pytest.mark.parametrize("spec,count", [
    ("generated:0-9", 30),                  # 10 seeds x 3 difficulties
    ("generated:5-5:hard", 1),              # one seed, one difficulty
    ("generated:0-9:easy,medium", 20),
    ("clarifyrl-heldout", 300),
    ("clarifylab-heldout", 150),
])
def test_spec_sizes(spec, count):
    assert len(load_scenarios(spec)) == count


def test_generated_family_filter_and_limit():
    out = load_scenarios("generated:0-49:all:support_triage,medical_intake")
    assert out and {s.family for s in out} <= {"support_triage", "medical_intake"}
    assert len(load_scenarios("generated:0-49", limit=7)) == 7
    assert [s.difficulty for s in load_scenarios("clarifyrl-heldout", limit=3)] == ["easy", "medium", "hard"]


@pytest.mark.parametrize("spec,message", [
    ("generated:9-1", "HI is below LO"),
    ("generated:a-b", "bad seed range"),
    ("generated:0-3:nightmare", "unknown difficulty"),
    ("generated:0-3:easy:cooking", "unknown family"),
    ("no-such-set", "unknown scenario spec"),
    ("/nonexistent/file.json", "does not exist"),
])
def test_bad_specs_name_the_problem(spec, message):
    with pytest.raises(ValueError, match=message):
        load_scenarios(spec)


def test_published_round_trip_and_bad_entries(tmp_path):
    s = generate_scenario(3, "medium")
    obj = scenario_to_published(s)
    assert list(obj)[:3] == ["family", "task_id", "task_title"]
    assert scenario_from_published(obj) == s
    with pytest.raises(ValueError, match="unknown scenario key"):
        scenario_from_published({**obj, "difficulty": "easy"})
    with pytest.raises(ValueError, match="unknown family"):
        scenario_from_published({**obj, "family": "cooking"})
    with pytest.raises(ValueError, match="not fields of family"):
        scenario_from_published({**obj, "hidden_profile": {"pizza": "yes"}})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([obj, {**obj, "task_id": "extreme"}]))
    with pytest.raises(ValueError, match="bad.json entry 1"):
        read_published(bad)
    bad.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_published(bad)


def test_minimal_hand_written_scenario_fills_defaults():
    s = scenario_from_published({"family": "meeting_scheduling", "task_id": "easy", "request": "Meet?",
                                 "hidden_profile": {"time": "morning", "date": "today"}})
    assert s.title == "Mild Ambiguity" and s.max_steps == 8 and s.field_keys == ["date", "time"]
    assert s.critical_fields == ["date", "time"] and s.required_keys == ["participants", "date", "time"]


def test_generated_records_equal_validated_ones():
    # generate_scenario skips validation for speed; what it builds must validate to itself
    from core.records import Scenario

    for seed in range(30):
        for difficulty in ("easy", "medium", "hard"):
            s = generate_scenario(seed, difficulty)
            assert Scenario.model_validate(s.model_dump()) == s


def test_published_table_slice_families_match_our_first_50(reference_dir):
    table = json.loads((reference_dir / "clarifyrl" / "runs_summary.json").read_text())
    first50 = load_scenarios("clarifyrl-heldout", limit=50)
    assert sorted({s.family for s in first50}) == sorted(table["families"])
    assert {row["n"] for row in table["rows"]} == {50}
