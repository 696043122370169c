"""The family tables in core/clarify/families.py equal the published environment_tables.json, value for value."""

import json

import pytest

from core.clarify import families as fam


@pytest.fixture
def tables(reference_dir):
    return json.loads((reference_dir / "clarifyrl" / "environment_tables.json").read_text())


def test_families_fields_critical_required_requests(tables):
    assert list(fam.FAMILIES) == tables["families"]
    for name, family in fam.FAMILIES.items():
        assert family.name == name
        assert list(family.fields) == tables["family_fields"][name]
        assert list(family.critical) == tables["critical_fields_by_family"][name]
        assert list(family.required) == tables["required_plan_keys_by_family"][name]
        assert list(family.requests) == tables["request_templates_by_family"][name]
        assert family.no_match_reply == tables["user_simulator"]["no_match_reply_by_family"][name]


def test_fields_values_keywords_phrasing(tables):
    sim = tables["user_simulator"]
    assert set(fam.FIELDS) == set(tables["field_values"])
    for name, field in fam.FIELDS.items():
        assert field.name == name
        assert list(field.values) == tables["field_values"][name]
        # ints stay ints (guest_count, duration_minutes): types matter for published equality
        assert [type(v) for v in field.values] == [type(v) for v in tables["field_values"][name]]
        assert list(field.keywords) == sim["field_keywords"][name]
        assert field.phrasing == sim["answer_phrasing"][name]


def test_difficulty_tables(tables):
    assert list(fam.DIFFICULTIES) == tables["difficulties"]
    assert {k: list(v) for k, v in fam.PROFILE_SIZE.items()} == tables["profile_size_range_by_difficulty"]
    assert fam.MIN_CRITICAL == tables["min_critical_by_difficulty"]
    assert fam.MAX_STEPS == tables["max_steps_by_difficulty"]
    assert fam.TITLES == tables["title_by_difficulty"]
    assert fam.MAX_QUESTIONS == tables["max_questions"]
    assert fam.QUESTION_CHAR_CAP == tables["question_char_cap"]


def test_rubric_and_reward_tables(tables):
    rubric = tables["rubric"]
    assert fam.RUBRIC_WEIGHTS == rubric["weighted_sum"]
    assert list(fam.RUBRIC_WEIGHTS) == list(rubric["weighted_sum"])
    assert fam.GATE_THRESHOLD == rubric["gate"]["threshold"]
    assert fam.CRITICAL_WEIGHT == rubric["field_match_weight_critical"]
    assert fam.OTHER_WEIGHT == rubric["field_match_weight_other"]
    assert fam.ASK_REWARDS == tables["ask_question_step_rewards"]
    assert [set(s) for s in fam.SYNONYM_SETS] == [set(s) for s in tables["value_synonym_sets"]]


def test_tables_are_self_consistent():
    # offline check: critical and required keys are fields of their family
    for family in fam.FAMILIES.values():
        assert set(family.critical) <= set(family.fields)
        assert set(family.required) <= set(family.fields)
        assert all(f in fam.FIELDS for f in family.fields)


def our_tables() -> dict:
    """Our tables laid out as the published environment_tables.json (the keys we transcribe)."""
    return {
        "families": list(fam.FAMILIES),
        "family_fields": {n: list(f.fields) for n, f in fam.FAMILIES.items()},
        "critical_fields_by_family": {n: list(f.critical) for n, f in fam.FAMILIES.items()},
        "required_plan_keys_by_family": {n: list(f.required) for n, f in fam.FAMILIES.items()},
        "request_templates_by_family": {n: list(f.requests) for n, f in fam.FAMILIES.items()},
        "field_values": {n: list(f.values) for n, f in fam.FIELDS.items()},
        "field_keywords": {n: list(f.keywords) for n, f in fam.FIELDS.items()},
        "answer_phrasing": {n: f.phrasing for n, f in fam.FIELDS.items()},
        "no_match_reply_by_family": {n: f.no_match_reply for n, f in fam.FAMILIES.items()},
    }


def published_projection(tables: dict) -> dict:
    sim = tables["user_simulator"]
    out = {k: tables[k] for k in ("families", "family_fields", "critical_fields_by_family",
                                  "required_plan_keys_by_family", "request_templates_by_family", "field_values")}
    out["field_values"] = {n: out["field_values"][n] for n in fam.FIELDS}  # our field order
    out["field_keywords"] = {n: sim["field_keywords"][n] for n in fam.FIELDS}
    out["answer_phrasing"] = {n: sim["answer_phrasing"][n] for n in fam.FIELDS}
    out["no_match_reply_by_family"] = sim["no_match_reply_by_family"]
    return out


TABLES_SHA256 = "f9c1fe0902223a2ca8d26c82418bb6a5b711de75bcf3d1c3ab46e9a30e486702"
"""sha256 of the published tables projected as in ``published_projection`` (checked below)."""


def tables_sha(obj: dict) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(obj, sort_keys=False, separators=(",", ":")).encode()).hexdigest()


def test_tables_hash_matches_published(tables):
    assert tables_sha(published_projection(tables)) == TABLES_SHA256


def test_tables_hash_without_reference():
    # offline twin of the test above: CI without ../shared still catches an edited table value
    assert tables_sha(our_tables()) == TABLES_SHA256
