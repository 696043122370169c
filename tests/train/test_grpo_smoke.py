"""CPU smoke tests: the SFT warmup and one GRPO run on tiny local models, in seconds."""

import json

import torch
from trl import GRPOConfig

from core.clarify.chat_policy import load_chat_policy
from core.clarify.scenarios import CLARIFYLAB_HELDOUT_SEEDS, PUBLISHED_HELDOUT_SEEDS, TRAIN_SEEDS, load_scenarios
from train.clarify_grpo import ClarifyArgs, build_trainer, make_rewards, scenario_dataset, training_scenarios
from train.clarify_sft import SFTConfig, main as sft_main
from tests.train.conftest import TINY


def test_sft_smoke_writes_a_loadable_checkpoint(tmp_path):
    out = tmp_path / "warmup"
    sft_main(SFTConfig(out=str(out), demos=24, epochs=1, batch_size=8, tokenizer_demos=20, log_every=1, **TINY))
    log = json.loads((out / "training_log.json").read_text())
    assert log["log_history"] and log["config"]["demos"] == 24
    assert 0.0 <= log["log_history"][-1]["copy_accuracy"] <= 1.0  # measured at the last step
    assert load_chat_policy(out).model.config.hidden_size == TINY["hidden_size"]
    # a second stage continues from the first: same tokenizer, both stages logged
    again = tmp_path / "warmup2"
    sft_main(SFTConfig(out=str(again), init_from=str(out), demos=16, epochs=1, batch_size=8, seed=1, **TINY))
    stages = json.loads((again / "training_log.json").read_text())["stages"]
    assert [st["config"]["demos"] for st in stages] == [24, 16]
    assert (again / "tokenizer.json").read_text() == (out / "tokenizer.json").read_text()


def completion_length_reward(completions, **kwargs):
    """Test double: a reward that differs between completions even for an untrained model."""
    return [float(len(c)) for c in completions]


def test_grpo_steps_change_the_parameters(tmp_path, tiny_checkpoint):
    args = ClarifyArgs(model=str(tiny_checkpoint), scenarios=8)
    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), max_steps=2, num_generations=4, per_device_train_batch_size=8,
        max_completion_length=16, learning_rate=0.05, beta=0.01, use_cpu=True, bf16=False, report_to="none",
        logging_steps=1, save_strategy="no", seed=0)
    trainer = build_trainer(args, config, extra_rewards=[completion_length_reward])
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p)]
    assert changed, "no parameter moved"
    history = trainer.state.log_history
    assert any("rewards/rubric_reward/mean" in h and "kl" in h and "frac_reward_zero_std" in h for h in history)


def test_each_group_plays_one_scenario(tiny_checkpoint):
    from train.clarify_grpo import make_rollout
    from core.records import Generation

    policy = load_chat_policy(tiny_checkpoint, generation=Generation(temperature=1.0, max_new_tokens=8))
    scenarios = training_scenarios(2, seed=3)
    prompts = [scenarios[0].id] * 3 + [scenarios[1].id] * 3

    class Trainer:  # test double: just what the rollout reads
        model = policy.model
        class accelerator:
            unwrap_model = staticmethod(lambda m: m)

    out = make_rollout(policy, {s.id: s for s in scenarios}, "v2", 0)(prompts, Trainer)
    assert [e.scenario.id for e in out["episode"]] == prompts
    assert len(out["completion_ids"]) == len(out["env_mask"]) == 6
    assert all(len(c) == len(m) for c, m in zip(out["completion_ids"], out["env_mask"]))


def test_reward_adapters_call_the_core_rubric():
    from core.clarify.environment import ClarifyEnv
    from core.records import ToolCall
    from core.clarify.scenarios import generate_scenario

    s = generate_scenario(5, "medium")
    env = ClarifyEnv(s, "v1")
    env.step(ToolCall(name="propose_plan", arguments={"plan": {k: "unknown" for k in s.required_keys}}))
    ended = env.episode("x")
    cut = ClarifyEnv(s, "v1")
    cut.step(None, parse_error="nothing")
    rubric_reward, plan_reward = make_rewards("v1", plan_bonus=0.05, no_plan_penalty=0.2)
    assert rubric_reward(["", ""], episode=[ended, cut.episode("x")]) == [ended.score, 0.0]
    assert plan_reward(["", ""], episode=[ended, cut.episode("x")]) == [0.05, -0.2]


def test_training_seeds_never_meet_held_out_sets():
    train = {s.seed for s in training_scenarios(4000, seed=0)}
    assert train <= set(TRAIN_SEEDS)
    held = {s.seed for s in load_scenarios("clarifyrl-heldout")} | {s.seed for s in load_scenarios("clarifylab-heldout")}
    assert held and not train & held
    assert not set(TRAIN_SEEDS) & (set(PUBLISHED_HELDOUT_SEEDS) | set(CLARIFYLAB_HELDOUT_SEEDS))


def test_dataset_rows_carry_seed_and_difficulty():
    scenarios = training_scenarios(5, seed=1)
    rows = scenario_dataset(scenarios)
    assert rows["prompt"] == [s.id for s in scenarios]
    assert rows["seed"] == [s.seed for s in scenarios]
    assert rows["difficulty"] == [s.difficulty for s in scenarios]


def test_lora_warmup_then_grpo_trains_only_the_adapter(tmp_path, tiny_checkpoint):
    from core.models.availability import adapter_base, check_folder

    warm = tmp_path / "lora-warmup"
    sft_main(SFTConfig(out=str(warm), base=str(tiny_checkpoint), lora_rank=2, demos=8, batch_size=4, val_demos=2,
                       lr=1e-2, log_every=1, **TINY))
    assert adapter_base(warm) == str(tiny_checkpoint) and check_folder(warm).ok
    base_logits = load_chat_policy(tiny_checkpoint).model(input_ids=torch.tensor([[5, 6, 7]])).logits
    warm_logits = load_chat_policy(warm).model(input_ids=torch.tensor([[5, 6, 7]])).logits
    assert not torch.allclose(base_logits, warm_logits)  # the warmup's adapter moved the model
    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), max_steps=1, num_generations=4, per_device_train_batch_size=4,
        max_completion_length=8, learning_rate=0.05, beta=0.0, use_cpu=True, bf16=False, report_to="none",
        logging_steps=1, save_strategy="no", seed=0)
    trainer = build_trainer(ClarifyArgs(model=str(warm), scenarios=4), config, extra_rewards=[completion_length_reward])
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p)}
    assert changed and all("lora_" in n for n in changed)


def test_grpo_can_start_a_fresh_adapter_on_a_base(tmp_path, tiny_checkpoint):
    from train.clarify_grpo import main as grpo_main

    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), max_steps=1, num_generations=4, per_device_train_batch_size=4,
        max_completion_length=8, learning_rate=0.05, beta=0.0, use_cpu=True, bf16=False, report_to="none",
        logging_steps=1, save_strategy="no", seed=0)
    args = ClarifyArgs(model=str(tiny_checkpoint), scenarios=4, lora_rank=2)
    trainer = build_trainer(args, config)
    assert {n for n, p in trainer.model.named_parameters() if p.requires_grad} and all(
        "lora_" in n for n, p in trainer.model.named_parameters() if p.requires_grad)
    grpo_main(args, config)
    from core.models.availability import adapter_base

    assert adapter_base(tmp_path / "grpo") == str(tiny_checkpoint)
    assert load_chat_policy(tmp_path / "grpo").model.config.hidden_size == TINY["hidden_size"]


def test_grpo_runs_in_chunks_that_resume_where_the_last_stopped(tmp_path, tiny_checkpoint):
    from train.clarify_grpo import main as grpo_main

    out = tmp_path / "grpo"
    config = GRPOConfig(
        output_dir=str(out), max_steps=2, num_generations=4, per_device_train_batch_size=4,
        max_completion_length=8, learning_rate=0.05, beta=0.0, use_cpu=True, bf16=False, report_to="none",
        logging_steps=1, save_steps=100, seed=0)
    # a spent budget stops after the first step and saves a checkpoint there (not only at save_steps)
    grpo_main(ClarifyArgs(model=str(tiny_checkpoint), scenarios=4, lora_rank=2, max_minutes=1e-9), config)
    assert (out / "checkpoint-1" / "optimizer.pt").exists()
    grpo_main(ClarifyArgs(model=str(tiny_checkpoint), scenarios=4, lora_rank=2, resume=True), config)
    info = json.loads((out / "training_info.json").read_text())
    assert info["steps"] == 2 and [(c["from_step"], c["to_step"]) for c in info["chunks"]] == [(0, 1), (1, 2)]
    assert info["wall_time_s"] == round(sum(c["wall_time_s"] for c in info["chunks"]), 1)
    steps = [row["step"] for row in json.loads((out / "log_history.json").read_text()) if "reward" in row]
    assert steps == [1, 2]  # the second chunk's history continues the first's
