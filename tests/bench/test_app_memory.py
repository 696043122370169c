"""The memory bench serves the app, runs its fixed load of uploading sessions, and stays bounded."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_uploads_held_stay_under_the_budget_and_memory_levels_off(tmp_path):
    out = tmp_path / "mem.json"
    done = subprocess.run([sys.executable, "bench/app_memory.py", "--quick", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    series = result["series"]
    assert len(series) == 8 and result["store_max_mb"] <= result["budget_mb"]
    assert series[-1]["uploads_held"] < len(series)  # older sessions' uploads were dropped
    late = [s["rss_mb"] for s in series[4:]]
    assert max(late) - min(late) < 40  # the last rounds add visitors, not memory (MB; allocator noise)
    assert done.stdout.strip().splitlines()[-1].startswith("app_memory: 8 sessions")
