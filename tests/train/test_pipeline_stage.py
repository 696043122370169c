"""train/pipeline_stage.sh: stages skip when done, resume when begun, and chunks stop the pipeline with 3."""
import json
import subprocess
from pathlib import Path

import pytest

STAGE = Path(__file__).resolve().parents[2] / "train" / "pipeline_stage.sh"

# A stand-in for a training command: logs its arguments, marks the stage done on its second run, and
# exits with the status in $EXIT (3 = "stopped early, run me again").
FAKE = """#!/usr/bin/env bash
echo "$*" >> "$RUNS/calls"
n=$(wc -l < "$RUNS/calls")
if [ "$n" -ge 2 ]; then touch "$RUNS/done"; fi
exit "${EXIT:-0}"
"""


def _pipeline(tmp_path, body, exit_code=0):
    fake = tmp_path / "train_cmd"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    script = f"set -euo pipefail\nRUNS={tmp_path}\nSEED=7\nsource {STAGE}\n{body}\necho finished\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "RUNS": str(tmp_path), "EXIT": str(exit_code)})


def _times(tmp_path):
    return [json.loads(line) for line in (tmp_path / "times.log").read_text().splitlines()]


@pytest.fixture(autouse=True)
def _needs_gnu_time():
    if not Path("/usr/bin/time").exists():
        pytest.fail("GNU time (/usr/bin/time) is missing: .ci/run installs it (apt package `time`)")


def test_a_chunk_exits_3_until_its_stage_is_done_then_resumes_and_finishes(tmp_path):
    body = f'chunk sft "[ -e $RUNS/done ]" "--resume true" {tmp_path}/train_cmd --lr 1'
    first = _pipeline(tmp_path, body, exit_code=3)
    assert first.returncode == 3 and "finished" not in first.stdout
    assert "run the same command again" in first.stdout
    second = _pipeline(tmp_path, body)
    assert second.returncode == 0 and "finished" in second.stdout
    assert (tmp_path / "calls").read_text().splitlines() == ["--lr 1", "--lr 1 --resume true"]
    third = _pipeline(tmp_path, body)
    assert "skip sft (done)" in third.stdout and len((tmp_path / "calls").read_text().splitlines()) == 2
    rows = _times(tmp_path)
    assert [r["stage"] for r in rows] == ["sft", "sft"] and all(r["chunk"] and r["seed"] == 7 for r in rows)
    assert all(r["wall_s"] >= 0 and r["cpu_s"] >= 0 for r in rows)


def test_a_failing_chunk_stops_the_pipeline_with_its_own_status(tmp_path):
    result = _pipeline(tmp_path, f'chunk sft "[ -e $RUNS/done ]" "" {tmp_path}/train_cmd', exit_code=1)
    assert result.returncode == 1 and "finished" not in result.stdout
    assert _times(tmp_path)[0]["stage"] == "sft"  # its seconds are logged all the same


def test_a_stage_skips_when_done_and_resumes_a_started_run(tmp_path):
    (tmp_path / "warmup").mkdir()
    (tmp_path / "warmup" / "meta.jsonl").write_text("{}\n")
    body = f"stage warmup {tmp_path}/done {tmp_path}/train_cmd --steps 5\nstage warmup {tmp_path}/done {tmp_path}/train_cmd"
    result = _pipeline(tmp_path, body)
    assert result.returncode == 0 and "finished" in result.stdout
    assert (tmp_path / "calls").read_text().splitlines() == ["--steps 5 --resume true", "--resume true"]
    touched = _pipeline(tmp_path, f"stage warmup {tmp_path}/done {tmp_path}/train_cmd")
    assert f"skip warmup ({tmp_path}/done exists)" in touched.stdout
    assert [r["stage"] for r in _times(tmp_path)] == ["warmup", "warmup"] and "chunk" not in _times(tmp_path)[0]


def test_a_failing_stage_stops_the_pipeline(tmp_path):
    result = _pipeline(tmp_path, f"stage warmup {tmp_path}/never {tmp_path}/train_cmd", exit_code=2)
    assert result.returncode == 2 and "finished" not in result.stdout
