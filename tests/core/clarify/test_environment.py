"""ClarifyEnv: tool result fields, step rewards, every termination path, and hostile input."""

import json

import pytest

from core.clarify.environment import ENDED, ClarifyEnv, parse_plan, render_call
from core.records import Episode, ToolCall
from core.clarify.scenarios import scenario_from_published

SCENARIO = scenario_from_published({
    "family": "event_planning", "task_id": "easy", "request": "Set up a celebration.",
    "hidden_profile": {"event_type": "birthday", "date": "today", "venue": "office"}, "seed": 10000,
})
PLAN = {"event_type": "birthday", "date": "today", "venue": "office", "guest_count": "unknown"}


def call(name, **arguments):
    return ToolCall(name=name, arguments=arguments)


def ask(env, question):
    return env.step(call("ask_question", question=question))


def test_get_task_info_is_free_of_the_question_budget():
    env = ClarifyEnv(SCENARIO)
    turn = env.step(call("get_task_info"))
    assert turn.reward == 0.0 and turn.index == 0
    r = turn.result
    assert r["request"] == "Set up a celebration." and r["family"] == "event_planning"
    assert r["required_keys"] == ["event_type", "date", "guest_count", "venue"]
    assert r["questions_remaining"] == 6 and r["max_questions"] == 6
    assert r["max_steps"] == 8 and r["steps_remaining"] == 7  # but it is a step
    assert env.steps == 1 and env.questions_asked == 0 and not env.done


def test_ask_question_result_fields_and_rewards():
    env = ClarifyEnv(SCENARIO)
    new = ask(env, "Where will it be?").result
    assert new == {"answer": "At a office.", "questions_remaining": 5, "field_revealed": "venue",
                   "duplicate": False, "over_cap": False}
    assert env.turns[-1].reward == pytest.approx(0.05)
    again = ask(env, "Which venue?")
    # the matched field was already revealed: field_revealed is null, duplicate true, -0.02
    assert again.result["field_revealed"] is None and again.result["duplicate"] is True
    assert again.reward == pytest.approx(-0.02)
    miss = ask(env, "Any thoughts?")
    assert miss.result["answer"] == "Up to you on that one." and miss.result["field_revealed"] is None
    assert miss.result["duplicate"] is False and miss.reward == pytest.approx(0.02)
    assert miss.result["questions_remaining"] == 3
    assert list(env.revealed) == ["venue"]


def test_v2_pays_nothing_for_irrelevant_questions_and_uses_word_boundaries():
    env = ClarifyEnv(SCENARIO, rubric="v2")
    assert ask(env, "Any thoughts?").reward == 0.0
    # "update" would reveal date in v1 by substring
    assert ask(env, "Any update?").result["field_revealed"] is None
    v1 = ClarifyEnv(SCENARIO, rubric="v1")
    assert ask(v1, "Any update?").result["field_revealed"] == "date"


def test_question_is_cut_to_200_characters_before_matching():
    env = ClarifyEnv(SCENARIO)
    assert ask(env, "x" * 200 + " where?").result["field_revealed"] is None
    assert ask(env, "x" * 190 + " where?").result["field_revealed"] == "venue"


def test_propose_plan_result_fields_and_termination():
    env = ClarifyEnv(SCENARIO)
    ask(env, "Where will it be?")
    turn = env.step(call("propose_plan", plan=json.dumps(PLAN)))
    r = turn.result
    assert env.done and env.termination == "plan"
    assert set(r) == {"score", "breakdown", "hidden_profile", "critical_fields", "required_keys", "plan",
                      "parse_error", "questions_asked", "fields_revealed"}
    assert r["plan"] == PLAN and r["parse_error"] is None and r["questions_asked"] == 1
    assert r["fields_revealed"] == ["venue"] and r["hidden_profile"] == SCENARIO.hidden_profile
    assert r["critical_fields"] == ["date", "event_type", "venue"]
    assert r["score"] == turn.reward == env.breakdown.total > 0
    assert list(r["breakdown"]) == list(env.breakdown.components)


def test_plan_as_dict_equals_plan_as_string():
    a, b = ClarifyEnv(SCENARIO), ClarifyEnv(SCENARIO)
    a.step(call("propose_plan", plan=PLAN))
    b.step(call("propose_plan", plan=json.dumps(PLAN)))
    assert a.breakdown == b.breakdown and a.plan == b.plan


@pytest.mark.parametrize("plan,error", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "got a JSON list"),
    ('"text"', "got a JSON str"),
    ("", "not valid JSON"),
])
def test_unparseable_plans_end_the_episode_with_a_parse_error(plan, error):
    env = ClarifyEnv(SCENARIO)
    turn = env.step(call("propose_plan", plan=plan))
    assert env.done and env.termination == "plan"
    assert error in turn.result["parse_error"] and turn.result["plan"] is None
    assert turn.result["score"] == 0.0 and env.breakdown.components["FormatCheckRubric"] == 0.0


def test_nested_plan_values_are_scored_not_raised():
    env = ClarifyEnv(SCENARIO)
    turn = env.step(call("propose_plan", plan=json.dumps({"event_type": {"a": [1, {"b": 2}]}})))
    assert env.done and turn.result["parse_error"] is None and turn.result["score"] == 0.0


def test_over_budget_question_ends_the_episode():
    env = ClarifyEnv(SCENARIO.model_copy(update={"max_steps": 20}))
    for _ in range(6):
        ask(env, "Anything?")
    assert not env.done and env.questions_asked == 6
    turn = ask(env, "One more?")
    assert turn.result["over_cap"] is True and turn.result["questions_remaining"] == 0
    assert turn.result["field_revealed"] is None and turn.reward == pytest.approx(-0.05)
    assert env.done and env.termination == "over_budget" and env.questions_asked == 6
    assert env.breakdown is not None and env.breakdown.total == 0.0


def test_max_steps_ends_the_episode_and_scores_it():
    env = ClarifyEnv(SCENARIO)
    for _ in range(7):
        env.step(call("get_task_info"))
    assert not env.done
    env.step(call("get_task_info"))
    assert env.done and env.termination == "max_steps" and env.steps == 8
    assert env.breakdown.gate_passed is False and env.score == 0.0


def test_plan_on_the_last_step_counts_as_a_plan():
    env = ClarifyEnv(SCENARIO)
    for _ in range(7):
        env.step(call("get_task_info"))
    env.step(call("propose_plan", plan=PLAN))
    assert env.termination == "plan" and env.score > 0


def test_unparseable_turn_ends_the_episode():
    env = ClarifyEnv(SCENARIO)
    turn = env.step(None, raw="I think I will plan now", parse_error="no <tool_call> block")
    assert env.done and env.termination == "unparseable"
    assert turn.call is None and turn.parse_error == "no <tool_call> block" and turn.raw.startswith("I think")
    assert "no <tool_call> block" in turn.result["error"]
    assert env.breakdown.gate_passed is False


@pytest.mark.parametrize("bad,needle", [
    (call("launch_rockets"), "unknown tool 'launch_rockets'"),
    (call("ask_question"), "missing argument 'question'"),
    (call("ask_question", question="hi", tone="polite"), "unexpected argument"),
    (call("get_task_info", verbose=True), "unexpected argument"),
    (call("propose_plan"), "missing argument 'plan'"),
    (call("ask_question", question=42), "question must be a string, got int"),
    (call("ask_question", question=None), "question must be a string, got NoneType"),
    (call("ask_question", question=["where"]), "got list"),
    (call("propose_plan", plan=7), "plan must be a JSON object string or an object, got int"),
    (call("propose_plan", plan=["a"]), "got list"),
    (ToolCall.model_construct(name=None, arguments=None), "needs a tool name"),
])
def test_bad_calls_get_an_error_result_cost_a_step_and_do_not_end(bad, needle):
    env = ClarifyEnv(SCENARIO)
    turn = env.step(bad, raw="whatever")
    assert needle in turn.result["error"]
    assert set(turn.result) == {"error"} and turn.reward == 0.0
    assert env.steps == 1 and env.questions_asked == 0 and not env.done


def test_a_megabyte_question_is_answered():
    env = ClarifyEnv(SCENARIO)
    turn = ask(env, "where " + "a" * 1_000_000)
    assert turn.result["field_revealed"] == "venue"


def test_calls_after_the_end_are_refused_and_not_recorded():
    env = ClarifyEnv(SCENARIO)
    env.step(call("propose_plan", plan=PLAN))
    before = env.breakdown
    for late in (call("get_task_info"), call("ask_question", question="where?"), call("propose_plan", plan={}), None):
        turn = env.step(late)
        assert turn.result == {"error": ENDED}
    assert len(env.turns) == 1 and env.breakdown is before and env.termination == "plan"


def test_episode_record_is_complete_and_round_trips():
    env = ClarifyEnv(SCENARIO, rubric="v2")
    env.step(call("get_task_info"), raw="get_task_info()")
    ask(env, "What date works?")
    env.step(call("propose_plan", plan=PLAN))
    ep = env.episode("unit-test", sample=2)
    assert ep.version == 1 and ep.policy == "unit-test" and ep.sample == 2 and ep.rubric == "v2"
    assert ep.termination == "plan" and ep.questions_asked == 1 and ep.fields_revealed == ["date"]
    assert ep.plan == PLAN and json.loads(ep.plan_raw) == PLAN
    assert ep.score == ep.breakdown.total and [t.index for t in ep.turns] == [0, 1, 2]
    # the env builds records without validation; they must equal validated ones
    assert Episode.model_validate_json(ep.model_dump_json()) == ep
    assert Episode.model_validate(ep.model_dump()) == ep


def test_running_episode_has_no_breakdown_and_unknown_rubric_is_refused():
    env = ClarifyEnv(SCENARIO)
    assert env.episode("p").breakdown is None and env.episode("p").termination == "running"
    with pytest.raises(ValueError, match="unknown rubric"):
        ClarifyEnv(SCENARIO, rubric="v9")


def test_render_and_parse_plan_helpers():
    assert render_call(call("ask_question", question='say "hi"')) == 'ask_question("say \\"hi\\"")'
    assert render_call(call("get_task_info")) == "get_task_info()"
    assert parse_plan({1: "a"}) == ({"1": "a"}, None)  # Python dicts become what JSON would give
    assert parse_plan("[" * 100_000)[0] is None  # deep nesting: an error, not a crash


@pytest.mark.parametrize("plan", [
    "1" * 5000,                      # an integer past Python's digit limit
    '{"a": ' + "1" * 5000 + "}",
    "[" * 100_000,                   # nesting past the recursion limit
])
def test_pathological_plan_strings_do_not_raise(plan):
    env = ClarifyEnv(SCENARIO)
    turn = env.step(call("propose_plan", plan=plan))
    assert env.done and turn.result["parse_error"] and turn.result["score"] == 0.0


def test_circular_plan_object_does_not_raise():
    loop = {"event_type": "birthday"}
    loop["self"] = loop
    env = ClarifyEnv(SCENARIO)
    turn = env.step(call("propose_plan", plan=loop))
    assert env.done and "could not be read" in turn.result["parse_error"] and env.plan_raw is None


def test_lone_surrogates_in_agent_text_still_log(tmp_path):
    from core.runs.episode_log import read_episodes, write_episodes

    env = ClarifyEnv(SCENARIO)
    env.step(call("ask_question", question="where \ud800?"), raw="ask_question('where \ud800?')")
    env.step(None, raw="\udfff", parse_error="no call")
    write_episodes(tmp_path / "log.jsonl", [env.episode("p")])
    back = read_episodes(tmp_path / "log.jsonl").episodes[0]
    assert back.turns[0].call.arguments["question"] == "where \ud800?" and back.turns[1].raw == "\udfff"


def test_an_episode_full_of_bad_calls_still_logs_and_reads_back(tmp_path):
    from core.runs.episode_log import read_episodes, write_episodes

    env = ClarifyEnv(SCENARIO.model_copy(update={"max_steps": 30}))
    bad = [call("launch"), call("ask_question"), call("ask_question", question=object()),
           call("ask_question", question="q" * 1_000_000), call("propose_plan", plan={1, 2}),
           call("propose_plan", plan="[1]")]
    for c in bad:
        env.step(c, raw=repr(c)[:200])
    assert env.termination == "plan" and len(env.turns) == len(bad)
    write_episodes(tmp_path / "log.jsonl", [env.episode("fuzz")])
    back = read_episodes(tmp_path / "log.jsonl").episodes[0]
    assert [t.result.keys() for t in back.turns][:3] == [{"error"}] * 3 and back.termination == "plan"
