"""The replay load bench runs end to end on a small log and reports its keys (no timing asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_writes_json_and_prints_headline_last(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "bench/replay_load.py", "--quick", "--episodes", "300", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["episodes"] == 300 and result["load_seconds"] > 0
    assert result["filter_seconds_max"] == max(result["filter_seconds"].values())
    assert done.stdout.strip().splitlines()[-1].startswith("replay_load: 300 episodes load in")
