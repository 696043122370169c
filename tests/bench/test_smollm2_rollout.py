"""The rollout bench runs on a tiny shipped policy, plays the same episodes (and GRPO steps) before and
after, and prints its headline last (no timing is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_writes_json_and_prints_headline_last(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "bench/smollm2_rollout.py", "--policy", "checkpoints/clarify-warmup",
                           "--scenarios", "2", "--threads", "1", "--repeats", "2", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["episodes_per_minute"] > 0 and result["episodes_per_minute_before"] > 0
    assert result["grpo_groups_per_minute"] > 0 and result["grpo_groups_per_minute_before"] > 0
    assert result["same_episodes"] is True
    assert result["grpo_steps_per_minute"] > 0 and result["grpo_steps_per_minute_before"] > 0
    assert [(r["kind"], r.get("episodes", r.get("steps"))) for r in result["configurations"]] == \
        [("eval", 2)] * 2 + [("grpo group", 4)] * 2 + [("grpo step", 1)] * 2
    assert len(result["configurations"][-1]["rewards"]) == 1
    for kind in ("eval", "grpo group", "grpo step"):  # before and after alternate which runs first (ABBA)
        assert [r["batch_kv"] for r in result["runs"] if r["kind"] == kind] == [False, True, True, False], kind
    assert all(len(r["repeat_wall_seconds"]) == 2 for r in result["configurations"])
    assert done.stdout.strip().splitlines()[-1].startswith("SmolLM2 eval rollouts")
