"""The model-memory bench loads the small shipped models in turn and stays under the bound."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_loading_the_listed_models_in_turn_stays_under_the_bound(tmp_path):
    out = tmp_path / "memory.json"
    done = subprocess.run([sys.executable, "bench/model_memory.py", "--quick", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CLARIFYLAB_MODEL_MEMORY_MB": "12"})
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["bound_mb"] == 12 and result["held_max_mb"] <= 12  # two 9.7 MB policies never held at once
    assert len(result["series"]) >= 2 and "clarify-grpo" not in result["held_at_end"]
    assert all(row["held_mb"] <= row["apart_mb"] for row in result["series"])  # sharing never adds bytes
    assert done.stdout.strip().splitlines()[-1].startswith("model_memory: ")
