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


def test_a_json_path_that_cannot_be_written_is_refused_before_measuring(tmp_path):
    """Every bench's --json is checked as it is parsed (core.records.output_file): a run of many minutes used to
    end in FileNotFoundError and lose its measurements."""
    (tmp_path / "file").write_text("")
    done = subprocess.run([sys.executable, "bench/env_throughput.py", "--json", str(tmp_path / "file" / "x.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "argument --json: cannot make the folder of" in done.stderr
    assert "Traceback" not in done.stderr and "episodes" not in done.stdout
