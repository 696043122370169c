"""Tool-call parsing: both dialects, and a clear error for everything else."""

import pytest

from core.records import ToolCall
from core.clarify.toolcalls import ends_inside_call, parse_tool_call, render_plain_call, render_tool_call

PARSES = [
    # Qwen3 block, the form our chat template writes
    ('<tool_call>\n{"name": "get_task_info", "arguments": {}}\n</tool_call>', "get_task_info", {}),
    # Qwen3 block with text around it and an empty think block (thinking off)
    ('<think>\n\n</think>\n\nSure.\n<tool_call>{"name": "ask_question", "arguments": {"question": "Which day?"}}</tool_call>',
     "ask_question", {"question": "Which day?"}),
    # plan as a JSON string inside the arguments
    ('<tool_call>{"name": "propose_plan", "arguments": {"plan": "{\\"date\\": \\"today\\"}"}}</tool_call>',
     "propose_plan", {"plan": '{"date": "today"}'}),
    # plan as an object (the environment accepts a dict too)
    ('<tool_call>{"name": "propose_plan", "arguments": {"plan": {"date": "today"}}}</tool_call>',
     "propose_plan", {"plan": {"date": "today"}}),
    # double-encoded arguments object
    ('<tool_call>{"name": "ask_question", "arguments": "{\\"question\\": \\"Budget?\\"}"}</tool_call>',
     "ask_question", {"question": "Budget?"}),
    # truncated before the closing tag but the JSON is complete
    ('<tool_call>\n{"name": "get_task_info", "arguments": {}}\n', "get_task_info", {}),
    # only the first of two blocks counts
    ('<tool_call>{"name": "get_task_info", "arguments": {}}</tool_call><tool_call>{"name": "ask_question", '
     '"arguments": {"question": "x"}}</tool_call>', "get_task_info", {}),
    # unknown tool names pass through: the environment answers them with an error
    ('<tool_call>{"name": "search_web", "arguments": {"q": "x"}}</tool_call>', "search_web", {"q": "x"}),
    # published plain form, double quotes
    ('ask_question("What is your budget?")', "ask_question", {"question": "What is your budget?"}),
    # plain form with a parenthesis inside the string, after prose
    ("Let me ask. ask_question('How many people (roughly)?') then wait",
     "ask_question", {"question": "How many people (roughly)?"}),
    # plain plan as a single-quoted JSON string
    ("propose_plan('{\"venue\": \"home\", \"guest_count\": 20}')",
     "propose_plan", {"plan": '{"venue": "home", "guest_count": 20}'}),
    # plain form with a keyword argument
    ('ask_question(question="Which platform?")', "ask_question", {"question": "Which platform?"}),
    # plain call without arguments
    ("get_task_info()", "get_task_info", {}),
    # a plain call's Python literals read as their JSON form, as a served environment receives them
    ('propose_plan({"date": ("today", "noon"), 7: None})', "propose_plan", {"plan": {"date": ["today", "noon"], "7": None}}),
]


@pytest.mark.parametrize("text,name,arguments", PARSES)
def test_parses(text, name, arguments):
    call, error = parse_tool_call(text)
    assert error is None
    assert call == ToolCall(name=name, arguments=arguments)


FAILS = [
    # nothing that looks like a call
    ("I think you should have a party.", "no tool call found"),
    # empty output
    ("", "no tool call found"),
    # broken JSON inside the block
    ('<tool_call>{"name": "ask_question", "arguments": {"question": }</tool_call>', "not valid JSON"),
    # JSON but not an object
    ("<tool_call>[1, 2]</tool_call>", "must be a JSON object"),
    # missing name
    ('<tool_call>{"arguments": {}}</tool_call>', 'no "name"'),
    # ask_question without its question
    ('<tool_call>{"name": "ask_question", "arguments": {}}</tool_call>', 'needs a "question"'),
    # question of the wrong type
    ('<tool_call>{"name": "ask_question", "arguments": {"question": 3}}</tool_call>', "must be a string"),
    # arguments not an object
    ('<tool_call>{"name": "get_task_info", "arguments": [1]}</tool_call>', '"arguments" must be an object'),
    # plain call never closed
    ('ask_question("Which day?', "not a complete call"),
    # plain call with a non-literal argument
    ("ask_question(day)", "must be literals"),
    # too many plain arguments
    ('ask_question("a", "b")', "takes 1 argument"),
    # argument to a tool that takes none
    ('get_task_info("x")', "takes 0 argument"),
    # plain-call literals JSON has no form for: no wire (MCP, OpenAI tool_calls) can carry them
    ('propose_plan({"date": {1, 2}})', "not JSON values: Object of type set"),
    ('propose_plan({"date": b"today"})', "not JSON values: Object of type bytes"),
    ('ask_question("When?", weight=1j)', "not JSON values: Object of type complex"),
    # an unpaired surrogate escape: cannot be sent, logged or served
    ('<tool_call>{"name": "ask_question", "arguments": {"question": "\\ud800 when?"}}</tool_call>',
     "not JSON values: 'utf-8' codec can't encode"),
    # JSON Python's reader refuses beyond syntax: a read error, not a crash of the run
    ('<tool_call>{"name": "x", "arguments": {"n": 1' + "0" * 5000 + '}}</tool_call>', "cannot be read: Exceeds the limit"),
    ("<tool_call>" + "[" * 100_000 + "</tool_call>", "cannot be read: maximum recursion depth"),
]


@pytest.mark.parametrize("text,fragment", FAILS)
def test_fails_with_a_reason(text, fragment):
    call, error = parse_tool_call(text)
    assert call is None
    assert fragment in error


CALLS = [
    ToolCall(name="get_task_info"),
    ToolCall(name="ask_question", arguments={"question": "Which day — today?"}),
    ToolCall(name="propose_plan", arguments={"plan": '{"date": "today", "guest_count": 20}'}),
]


@pytest.mark.parametrize("call", CALLS)
def test_both_renderings_round_trip(call):
    for text in (render_tool_call(call), render_plain_call(call)):
        assert parse_tool_call(text) == (call, None)


def test_qwen3_layout():
    text = render_tool_call(ToolCall(name="ask_question", arguments={"question": "Which day?"}))
    assert text == '<tool_call>\n{"name": "ask_question", "arguments": {"question": "Which day?"}}\n</tool_call>'


@pytest.mark.parametrize("text, inside", [
    ('<tool_call>\n{"name": "ask_question", "arguments": {"question": "x"}}\n</tool_call>', False),  # closed
    ('<tool_call>\n{"name": "propose_plan", "arguments": {"plan": "{\\"date', True),  # cut mid-plan
    ('<tool_call>{"name": "get_task_info"}</tool_call>\n<tool_call>\n{"name": "ask', True),  # cut in a second call
    ('<tool_call>{"name": "get_task_info"}</tool_call> and some prose', False),  # prose after a closed call
    ('<tool_call>{"name": "get_task_info"}</tool_', True),  # half a closing tag
    ('ask_question("Which day?")', False),  # the plain dialect has no tags
    ("", False),  # nothing written
])
def test_ends_inside_call(text, inside):
    assert ends_inside_call(text) is inside
