"""The family tables in core/families.py equal the published environment_tables.json, value for value."""

import json

import pytest

from core import families as fam


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
