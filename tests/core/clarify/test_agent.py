"""The agent protocol: prompt contents, tool schemas, and episodes as chat messages."""

import json

import pytest

from core.clarify.agent import SYSTEM_PROMPT, TOOL_SCHEMAS, episode_messages, first_user_message, prompt_messages
from core.clarify.environment import ClarifyEnv
from core.records import ToolCall
from core.clarify.scenarios import generate_scenario
from core.clarify.toolcalls import render_tool_call


@pytest.fixture
def scenario():
    return generate_scenario(7, "medium")


def test_system_message_covers_tools_budget_strategy_rules(scenario):
    system = prompt_messages(scenario)[0]
    assert system["role"] == "system"
    for needle in ("get_task_info()", "ask_question(question)", "propose_plan(plan)", "at most 6 questions",
                   "Strategy:", "Rules:", "JSON object string", "every required field"):
        assert needle in system["content"], needle


def test_first_user_message_carries_the_task(scenario):
    user = first_user_message(scenario)
    assert user["role"] == "user"
    text = user["content"]
    assert scenario.request in text
    assert f"Family: {scenario.family}" in text
    assert "Required plan fields: " + ", ".join(scenario.required_keys) in text
    assert f"Turns: {scenario.max_steps}" in text
    assert "Question budget: 6" in text
    # exactly those five lines: nothing of the hidden profile leaks into the prompt
    assert len(text.splitlines()) == 5


def test_tool_schemas_name_the_three_tools_and_their_arguments():
    names = [t["function"]["name"] for t in TOOL_SCHEMAS]
    assert names == ["get_task_info", "ask_question", "propose_plan"]
    required = {t["function"]["name"]: t["function"]["parameters"]["required"] for t in TOOL_SCHEMAS}
    assert required == {"get_task_info": [], "ask_question": ["question"], "propose_plan": ["plan"]}


def test_episode_messages_replay_turns_with_tool_results(scenario):
    env = ClarifyEnv(scenario, "v2")
    ask = ToolCall(name="ask_question", arguments={"question": "What date works?"})
    env.step(ask, raw=render_tool_call(ask))
    env.step(None, raw="I give up", parse_error="no tool call found")
    messages = episode_messages(scenario, env.turns)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[2]["content"] == render_tool_call(ask)
    assert json.loads(messages[3]["content"]) == env.turns[0].result
    assert messages[3]["name"] == "ask_question"
    # an unparseable turn keeps its raw text and gets no tool message
    assert messages[4]["content"] == "I give up"


def test_final_result_can_be_left_out(scenario):
    env = ClarifyEnv(scenario, "v2")
    plan = ToolCall(name="propose_plan", arguments={"plan": "{}"})
    env.step(plan, raw=render_tool_call(plan))
    assert episode_messages(scenario, env.turns)[-1]["role"] == "tool"
    assert episode_messages(scenario, env.turns, final_result=False)[-1]["role"] == "assistant"


def test_system_prompt_fills_the_budget():
    assert "{max_questions}" in SYSTEM_PROMPT
