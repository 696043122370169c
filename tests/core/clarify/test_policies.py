"""Scripted policies: each plays to the end and does what its definition says."""

import random

import pytest

from core.clarify.environment import ClarifyEnv
from core.clarify.families import FAMILIES, FIELDS
from core.clarify.policies import SCRIPTED, Policy, make_policy, read_value, revealing_question
from core.clarify.scenarios import load_scenarios

SCENARIOS = load_scenarios("generated:0-39")


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_oracle_reveals_every_field_it_asks_about(version):
    for s in SCENARIOS:
        env = ClarifyEnv(s, version)
        make_policy("oracle").play(env, random.Random(0))
        assert env.termination == "plan"
        asked = min(len(s.hidden_profile), s.max_questions)
        assert env.questions_asked == asked and len(env.revealed) == asked
        assert set(s.critical_fields) <= set(env.revealed)  # critical fields are asked first
        assert env.plan == {**s.hidden_profile, **{k: "unknown" for k in s.required_keys if k not in s.hidden_profile}}
        assert env.breakdown.gate_passed and env.breakdown.components["FieldMatchRubric"] == 1.0


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_revealing_question_exists_for_every_field_in_a_full_profile(version):
    # a field that wins against all its family's fields wins against any subset of them
    for family in FAMILIES.values():
        for field in family.fields:
            assert revealing_question(field, family.fields, version) is not None


def test_guess_asks_nothing_and_fills_first_vocabulary_values():
    s = SCENARIOS[0]
    env = ClarifyEnv(s)
    make_policy("guess").play(env, random.Random(0))
    assert env.questions_asked == 0 and env.termination == "plan"
    assert env.plan == {k: FIELDS[k].values[0] for k in s.required_keys}


def test_ask_required_asks_one_question_per_required_key():
    for s in SCENARIOS[:15]:
        env = ClarifyEnv(s)
        make_policy("ask-required").play(env, random.Random(0))
        assert env.termination == "plan" and env.questions_asked == len(s.required_keys)
        assert set(env.plan) == set(s.required_keys)
        for key, value in env.plan.items():
            if key in env.revealed:  # what it read is the truth
                assert value == s.hidden_profile[key]


@pytest.mark.parametrize("field,answer,expected", [
    ("guest_count", "About 100 people.", 100),   # not 10
    ("duration", "About 1-24 hours.", "1-24 hours"),
    ("venue", "Up to you on that one.", None),
    ("date", "next week.", "next week"),
])
def test_read_value(field, answer, expected):
    assert read_value(field, answer) == expected


def test_random_policy_always_ends_and_is_seeded():
    for s in SCENARIOS:
        a, b = ClarifyEnv(s), ClarifyEnv(s)
        make_policy("random").play(a, random.Random(5))
        make_policy("random").play(b, random.Random(5))
        assert a.done and [t.raw for t in a.turns] == [t.raw for t in b.turns]


def test_make_policy_names_and_errors():
    assert set(SCRIPTED) == {"oracle", "guess", "ask-required", "random"}
    assert all(isinstance(p, Policy) for p in SCRIPTED.values())
    with pytest.raises(ValueError, match="unknown policy 'genius'"):
        make_policy("genius")
    with pytest.raises(ValueError, match="needs a checkpoint path"):
        make_policy("model:")
