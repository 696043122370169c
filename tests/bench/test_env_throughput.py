"""The throughput bench runs and reports the slowest configuration (no timing is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_writes_json_and_prints_headline_last(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "bench/env_throughput.py", "--seconds", "0.01", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    rates = [row["episodes_per_second"] for row in result["configurations"]]
    assert result["episodes_per_second"] == min(rates) > 0
    assert {(r["policy"], r["rubric"]) for r in result["configurations"]} >= {("oracle", "v1"), ("oracle", "v2")}
    assert done.stdout.strip().splitlines()[-1].startswith("slowest configuration")
