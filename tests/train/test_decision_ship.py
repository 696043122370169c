"""The decision ship: a shipped folder keeps its stages' logs, and the cued recipe's start is read from history."""

import json
import subprocess
from pathlib import Path

import pytest

from train.decision_run import LOG
from train.decision_ship import CUED_PREAMBLE, training_log

ROOT = Path(__file__).resolve().parents[2]


def test_training_log_tags_every_record_with_its_stage(tmp_path):
    for stage, steps in (("format", [0, 10]), ("warmup", [0])):
        (tmp_path / stage).mkdir()
        (tmp_path / stage / LOG).write_text("".join(json.dumps({"step": s, "loss": 1.0 / (s + 1)}) + "\n"
                                                    for s in steps) + "\n")
    text = training_log({name: tmp_path / name for name in ("format", "warmup")})
    assert [json.loads(line) for line in text.splitlines()] == [
        {"stage": "format", "step": 0, "loss": 1.0}, {"stage": "format", "step": 10, "loss": 1 / 11},
        {"stage": "warmup", "step": 0, "loss": 1.0}]


def test_the_cued_recipe_starts_from_the_warmup_its_own_ship_overwrote():
    """checkpoints/decision-warmup now holds the cued recipe's result; its start is the from-scratch warmup at the
    commit named in the command, whose weights the earlier results were measured on."""
    start = next(c for c in CUED_PREAMBLE if "git archive" in c).split("git archive ")[1].split()[0]
    script = (ROOT / "train" / "decision_cued_pipeline.sh").read_text()
    assert f"START={start}\n" in script
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", start, "checkpoints/decision-warmup"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode:  # a shallow clone lacks the history; a full clone's CI has it
        pytest.skip(f"commit {start} is not in this clone")
    assert "checkpoints/decision-warmup/model.safetensors" in listed.stdout.split()
    then = subprocess.run(["git", "rev-parse", f"{start}:checkpoints/decision-warmup/model.safetensors"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    now = subprocess.run(["git", "rev-parse", "HEAD:checkpoints/decision-warmup/model.safetensors"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert then != now
