"""Rubric v3: v2's gate and FieldMatch less a cost per question, and the closed-form gain of asking."""

import pytest

from core.clarify.scenarios import load_cued
from core.clarify.rubrics import QUESTION_COST, ask_gain, field_weight, score

CUED = load_cued()[0]  # event_planning, easy: four required fields, all critical
TRUTH = dict(CUED.hidden_profile)


@pytest.mark.parametrize("plan, asked, total", [
    (TRUTH, 0, 1.0),  # every field right, nothing asked
    (TRUTH, 4, 1.0 - 4 * QUESTION_COST),  # every field right, each one asked
    ({**TRUTH, "venue": "nowhere"}, 1, 0.75 - QUESTION_COST),  # one of four equal shares wrong
    ({k: "nowhere" for k in TRUTH}, 3, 0.0),  # the cost never drives the score below 0
    ({k: v for k, v in TRUTH.items() if k != "date"}, 0, 0.0),  # a required key missing: the gate fails
])
def test_v3_total_is_field_match_less_the_question_cost(plan, asked, total):
    b = score(CUED, plan, revealed=(), questions_asked=asked, version="v3")
    assert b.rubric == "v3" and b.total == pytest.approx(total)
    assert set(b.components) == {"FormatCheckRubric", "FieldMatchRubric", "QuestionCostRubric"}
    assert b.components["QuestionCostRubric"] == pytest.approx(asked * QUESTION_COST)


def test_v3_ignores_what_v2_rewards_for_asking():
    # v2 pays InfoGain for revealed fields and charges HallucinationCheck for unrevealed ones; v3 does neither
    v3_told, v3_guessed = (score(CUED, TRUTH, revealed=r, questions_asked=0, version="v3").total for r in (TRUTH, ()))
    assert v3_told == v3_guessed == 1.0
    assert score(CUED, TRUTH, revealed=(), questions_asked=0, version="v2").total < 1.0


@pytest.mark.parametrize("probs, gain", [
    ([1.0, 0.0, 0.0, 0.0], 0.0),  # a clear cue: nothing to gain
    ([0.5, 0.5, 0.0, 0.0], 0.125),  # two cues: the MAP guess is right half the time
    ([0.7, 0.1, 0.1, 0.1], 0.075),  # a weak cue, four fields: below the cost
    ([0.25] * 4, 0.1875),  # no cue
])
def test_ask_gain_is_weight_times_one_minus_max_p(probs, gain):
    assert field_weight(CUED, "venue") == 0.25
    assert ask_gain(field_weight(CUED, "venue"), probs) == pytest.approx(gain)


def test_fields_outside_the_profile_carry_no_weight():
    assert field_weight(CUED, "theme") == 0.0
