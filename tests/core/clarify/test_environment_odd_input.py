"""ClarifyEnv v1 on odd input, checked against the published environment's values.

The expected values here are what the published ClarifyRL code returns for the same calls (issue
13); the departures we keep on purpose are checked too and must be listed in docs/environment.md.
"""

import json
from pathlib import Path

import pytest

from core.clarify.environment import OVER_CAP_ANSWER, ClarifyEnv, parse_plan
from core.clarify.scenarios import generate_scenario, scenario_from_published
from core.clarify.user_sim import phrase_answer, respond
from core.records import ToolCall

ROOT = Path(__file__).resolve().parents[3]
MEDIUM = generate_scenario(10000, "medium")
PROFILE_JSON = json.dumps(MEDIUM.hidden_profile)


def call(name, **arguments):
    return ToolCall(name=name, arguments=arguments)


def test_nbsp_before_the_plan_scores_as_published():
    # published: 0.5 FieldMatch + 0.15 QuestionEfficiency, nothing revealed -> 0.65
    env = ClarifyEnv(MEDIUM, "v1")
    turn = env.step(call("propose_plan", plan="\u00a0" + PROFILE_JSON))
    assert turn.result["parse_error"] is None
    assert turn.reward == pytest.approx(0.65)


@pytest.mark.parametrize("pad", [
    "\u00a0",  # no-break space
    "\x0c",  # form feed
    "\x0b",  # vertical tab
    "\u2028",  # line separator
    "\u3000",  # ideographic space
    "\x1c",  # file separator: whitespace to str.strip(), not to JSON
    " \t\r\n",  # JSON's own whitespace
])
def test_v1_strips_what_str_strip_strips_on_both_ends(pad):
    plan, error = parse_plan(pad + PROFILE_JSON + pad, "v1")
    assert error is None and plan == MEDIUM.hidden_profile


def test_v2_keeps_json_whitespace_only():
    plan, error = parse_plan("\u00a0" + PROFILE_JSON, "v2")
    assert plan is None and "not valid JSON" in error
    assert parse_plan(" \n" + PROFILE_JSON + "\t", "v2") == (MEDIUM.hidden_profile, None)
    env = ClarifyEnv(MEDIUM, "v2")
    assert env.step(call("propose_plan", plan="\u00a0" + PROFILE_JSON)).reward == 0.0


def test_ask_after_the_budget_reads_as_published():
    env = ClarifyEnv(MEDIUM, "v1")
    for _ in range(6):
        env.step(call("ask_question", question="What is the weather?"))
    turn = env.step(call("ask_question", question="And the date?"))
    assert turn.result["answer"] == "(no more questions allowed)" == OVER_CAP_ANSWER
    assert turn.result["over_cap"] is True and env.termination == "over_budget"


def test_profile_values_with_surrounding_spaces_give_a_stripped_answer():
    scenario = scenario_from_published({
        "family": "event_planning", "task_id": "easy", "request": "Plan it.",
        "hidden_profile": {"date": " today ", "venue": "office "}, "seed": 1,
    })
    # published: the formatted answer is stripped, then the full stop is added
    assert respond(scenario.hidden_profile, "event_planning", "What date?") == ("today.", "date")
    assert phrase_answer("venue", "office ") == "At a office."
    env = ClarifyEnv(scenario, "v1")
    assert env.step(call("ask_question", question="Which venue?")).result["answer"] == "At a office."


# ---- departures we keep on purpose (each must be in docs/environment.md's v1 table)

def test_departure_an_erroneous_call_earns_zero():
    # published: the previous step's reward again (+0.05 here), also after the episode ended
    env = ClarifyEnv(MEDIUM, "v1")
    assert env.step(call("ask_question", question="What is the date?")).reward == pytest.approx(0.05)
    assert env.step(call("no_such_tool")).reward == 0.0
    env.step(call("propose_plan", plan=PROFILE_JSON))
    assert env.step(call("ask_question", question="again?")).reward == 0.0


def test_departure_a_plan_object_is_scored():
    # published: only a string plan is scored
    assert ClarifyEnv(MEDIUM, "v1").step(call("propose_plan", plan=dict(MEDIUM.hidden_profile))).reward == pytest.approx(0.65)


def test_departure_a_plan_the_json_reader_raises_on_ends_the_episode():
    # published: the episode keeps running
    env = ClarifyEnv(MEDIUM, "v1")
    turn = env.step(call("propose_plan", plan="9" * 5000))
    assert turn.result["parse_error"] and env.termination == "plan" and env.score == 0.0


def test_departure_get_task_info_returns_keys_budget_and_steps():
    # published: an instructions text
    info = ClarifyEnv(MEDIUM, "v1").step(call("get_task_info")).result
    assert info["required_keys"] == list(MEDIUM.required_keys)
    assert info["max_questions"] == 6 and info["steps_remaining"] == 9


def test_the_v1_departures_table_lists_every_departure():
    text = (ROOT / "docs" / "environment.md").read_text()
    table = text[text.index("**v1 departures"):]
    for needle in ("previous step's reward", "plan passed as an object", "JSON reader raises",
                   "get_task_info", "`(no more questions allowed)`", "str.strip()"):
        assert needle in table, needle


def test_generate_scenario_cites_a_file_that_exists():
    doc = generate_scenario.__doc__
    assert "docs/environment.md" in doc and (ROOT / "docs" / "environment.md").is_file()
    assert "**Scenario generation.**" in (ROOT / "docs" / "environment.md").read_text()
