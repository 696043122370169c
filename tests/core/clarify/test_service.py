"""ClarifySession without a server: reset forms, forwarded calls, errors, the episode record."""

import random

import pytest

from core.clarify.environment import ENDED, ClarifyEnv
from core.clarify.policies import act, make_policy
from core.clarify.scenarios import TRAIN_SEEDS, generate_scenario, load_scenarios
from core.clarify.service import NO_EPISODE, ClarifySession, own_result, published_result, resolve_scenario


@pytest.mark.parametrize("task_id, seed, expected", [
    ("easy", 3, generate_scenario(3, "easy")),  # a difficulty played with a seed
    ("hard", 10_000, generate_scenario(10_000, "hard")),
    ("seed10000_event_planning_medium", None, generate_scenario(10_000, "medium")),  # one of our ids
    ("seed10000_event_planning_medium", 10_000, generate_scenario(10_000, "medium")),  # seed may repeat it
])
def test_reset_forms(task_id, seed, expected):
    assert resolve_scenario(task_id, seed) == expected


def test_missing_seed_and_difficulty_are_drawn_from_training_seeds():
    s = resolve_scenario(None, None, random.Random(1))
    assert s.seed in TRAIN_SEEDS and s.difficulty in ("easy", "medium", "hard")
    assert resolve_scenario("medium", None, random.Random(1)).difficulty == "medium"


@pytest.mark.parametrize("task_id, seed, message", [
    ("impossible", None, "unknown task_id"),
    ("seed10000_event_planning_easy", 7, "names seed 10000"),  # seed contradicts the id
    ("seed10000_support_triage_easy", None, "draws family 'event_planning'"),  # family contradicts
    ("seed10000_cooking_easy", None, "unknown family"),
    (5, None, "task_id must be a string"),
    ("easy", -1, "non-negative integer"),
    ("easy", "12", "non-negative integer"),
    ("easy", True, "non-negative integer"),
    ("seed99999999999999999999999999_event_planning_easy", None, "names a seed over 2\\*\\*63 - 1"),
    ("seed" + "9" * 5000 + "_event_planning_easy", None, "names a seed over 2\\*\\*63 - 1"),  # not Python's words
])
def test_bad_reset_names_what_is_wrong(task_id, seed, message):
    with pytest.raises(ValueError, match=message):
        resolve_scenario(task_id, seed)


def test_calls_before_reset_get_an_error_result_and_no_episode():
    session = ClarifySession("v1")
    assert session.call("get_task_info", {}) == ({"error": NO_EPISODE}, 0.0, False)
    assert session.episode() is None and not session.done


def test_session_answers_exactly_as_the_environment():
    scenario = load_scenarios("clarifyrl-heldout", 1)[0]
    calls = [("get_task_info", {}), ("nope", {}), ("ask_question", {}), ("ask_question", {"question": 3}),
             ("ask_question", {"question": "How many guests are coming?"}),
             ("propose_plan", {"plan": "{not json"}), ("ask_question", {"question": "late?"})]
    for rubric in ("v1", "v2"):
        session, env = ClarifySession(rubric), ClarifyEnv(scenario, rubric)
        session.reset(scenario.id)
        for name, arguments in calls:
            result, reward, done = session.call(name, arguments)
            turn = act(env, name, **arguments) if not env.done else None
            if turn is None:  # after the end: the environment's own answer, nothing recorded
                assert result == {"error": ENDED} and reward == 0.0 and done
                continue
            assert (result, reward, done) == (turn.result, turn.reward, env.done)
        assert session.episode() == env.episode("service")


def test_a_second_reset_starts_a_fresh_episode():
    session = ClarifySession("v2")
    session.reset("easy", 1)
    make_policy("guess").play(session.env, random.Random(0))
    assert session.done
    info = session.reset("easy", 2)
    assert not session.done and session.steps == 0 and session.episodes_started == 2
    assert info["scenario_id"] == generate_scenario(2, "easy").id and info["rubric"] == "v2"
    assert info["task_info"]["questions_remaining"] == 6


def test_reset_answers_the_published_fields_and_seeds_are_bounded():
    info = ClarifySession("v1").reset("hard", 10_002)
    s = generate_scenario(10_002, "hard")
    assert {k: info[k] for k in ("type", "request", "task_id", "task_title", "family", "max_steps")} == {
        "type": "task", "request": s.request, "task_id": "hard", "task_title": s.title, "family": s.family,
        "max_steps": s.max_steps}
    with pytest.raises(ValueError, match=r"at most 2\*\*63 - 1.*integer of 13288 bits"):
        resolve_scenario("easy", int("9" * 4000))
    assert resolve_scenario("easy", 2**63 - 1).seed == 2**63 - 1


def test_published_extras_sit_beside_the_result_and_come_off_again():
    session = ClarifySession("v1")
    session.reset("easy", 3)
    for name, arguments in [("get_task_info", {}), ("propose_plan", {"plan": "{}"}), ("ask_question", {"question": "?"})]:
        result, _, _ = session.call(name, arguments)
        wire = published_result(name, result, session.env.scenario)
        assert own_result(name, wire) == result and set(result) < set(wire)
    assert wire == {"error": ENDED, "episode_done": True}


@pytest.mark.parametrize("name, arguments, message", [
    ("ask_question", {"question": "When\ud800?"}, "a text in it holds a lone surrogate"),
    ("ask_\ud800", {}, "its tool name holds a lone surrogate"),
    ("propose_plan", {"plan": '{"date": "x\\ud800"}'}, "a text in it holds a lone surrogate"),  # in what it parses to
    ("propose_plan", {"plan": '{"date": ' + "[" * 900 + "]" * 900 + "}"}, "nest more than 16 levels deep"),
])
def test_a_call_whose_reply_could_not_be_sent_is_not_played(name, arguments, message):
    """The environment once stepped, then that reply and every later state of the episode failed to serialize."""
    session = ClarifySession("v2")
    session.reset("seed10000_event_planning_easy")
    result, reward, done = session.call(name, arguments)
    assert message in result["error"] and (reward, done, session.steps) == (0.0, False, 0)
    result, _, done = session.call("propose_plan", {"plan": '{"date": "today"}'})
    assert done and "error" not in result  # the episode goes on
