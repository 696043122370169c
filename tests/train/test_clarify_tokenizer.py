"""Our tokenizer and its Qwen3-layout tool chat template."""

import json

import pytest

from core.clarify.agent import TOOL_SCHEMAS, episode_messages
from core.clarify.environment import ClarifyEnv
from core.records import ToolCall
from core.clarify.scenarios import generate_scenario
from core.clarify.toolcalls import render_tool_call
from train.clarify_tokenizer import IM_END, TAG_TOKENS


def _played(steps):
    scenario = generate_scenario(3, "hard")
    env = ClarifyEnv(scenario, "v2")
    for call in steps:
        env.step(call, raw=render_tool_call(call))
    return scenario, env


ASK = ToolCall(name="ask_question", arguments={"question": "What kind of event is it?"})


def test_system_block_lists_tools_as_qwen3_does(tiny_tokenizer):
    scenario, _ = _played([])
    text = tiny_tokenizer.apply_chat_template(episode_messages(scenario, []), tools=TOOL_SCHEMAS, tokenize=False,
                                              add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou turn a vague request")
    assert "\n\n# Tools\n\n" in text
    tools = text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].splitlines()
    assert [json.loads(line) for line in tools] == TOOL_SCHEMAS
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>' in text
    assert text.endswith("<|im_start|>assistant\n")


def test_tool_results_come_back_inside_a_user_turn(tiny_tokenizer):
    scenario, env = _played([ASK])
    text = tiny_tokenizer.apply_chat_template(episode_messages(scenario, env.turns), tools=TOOL_SCHEMAS,
                                              tokenize=False)
    result = json.dumps(env.turns[0].result, ensure_ascii=False)
    assert ("<|im_start|>assistant\n" + render_tool_call(ASK) + "<|im_end|>\n<|im_start|>user\n<tool_response>\n"
            + result + "\n</tool_response><|im_end|>\n") in text


def test_structured_tool_calls_render_like_our_raw_text(tiny_tokenizer):
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                    "name": ASK.name, "arguments": ASK.arguments}}]},
                {"role": "tool", "content": "a"}, {"role": "tool", "content": "b"}]
    text = tiny_tokenizer.apply_chat_template(messages, tokenize=False)
    assert "<|im_start|>assistant\n" + render_tool_call(ASK) + "<|im_end|>" in text
    # consecutive tool messages share one user turn
    assert "<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>" in text


def test_template_is_prefix_preserving(tiny_tokenizer):
    scenario, env = _played([ASK, ASK])
    full = episode_messages(scenario, env.turns)
    render = lambda msgs, gen: tiny_tokenizer.apply_chat_template(msgs, tools=TOOL_SCHEMAS, tokenize=False,
                                                                 add_generation_prompt=gen)
    for cut in range(2, len(full)):
        assert render(full, False).startswith(render(full[:cut], full[cut - 1]["role"] != "assistant"))


@pytest.mark.parametrize("text", [
    "plain words",  # ordinary text
    "ünïcödé — ✓ and emoji 🙂",  # bytes outside the training text still encode
    '{"plan": "{\\"venue\\": \\"home\\"}"}',  # escaped JSON as the plans carry it
])
def test_round_trip(tiny_tokenizer, text):
    ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tiny_tokenizer.decode(ids) == text


def test_tags_are_single_visible_tokens(tiny_tokenizer):
    for tag in TAG_TOKENS:
        ids = tiny_tokenizer(tag, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1 and tiny_tokenizer.decode(ids, skip_special_tokens=True) == tag
    assert tiny_tokenizer.eos_token == IM_END
    assert tiny_tokenizer.decode(tiny_tokenizer(IM_END)["input_ids"], skip_special_tokens=True) == ""


def test_vocabulary_is_small(tiny_tokenizer):
    assert 256 < len(tiny_tokenizer) <= 600


def test_field_values_read_as_the_same_token_in_answers_and_plans(tiny_tokenizer):
    from train.clarify_tokenizer import domain_tokens

    for token in domain_tokens():
        ids = tiny_tokenizer(token, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1, token
    answer = tiny_tokenizer("I'd like to use go+gin.", add_special_tokens=False)["input_ids"]
    plan = tiny_tokenizer('{\\"stack\\": \\"go+gin\\"}', add_special_tokens=False)["input_ids"]
    value = tiny_tokenizer("go+gin", add_special_tokens=False)["input_ids"][0]
    assert value in answer and value in plan
