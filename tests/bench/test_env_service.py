"""The service bench starts its server, measures every configuration and prints the headline last."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv.core.mcp_client")

ROOT = Path(__file__).resolve().parents[2]


def test_bench_writes_the_keys_and_prints_headline_last(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "bench/env_service.py", "--seconds", "0.2", "--workers", "2",
                           "--client-procs", "2", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    for key in ("service_eps_1_client", "service_eps_4_clients", "service_eps_16_clients", "inprocess_eps"):
        assert result[key] > 0, key
    assert [r["clients"] for r in result["service"]] == [1, 4, 16]
    assert done.stdout.strip().splitlines()[-1].startswith("service, 16 clients:")
    assert result["workers"] == 2 and [r["workers"] for r in result["service"]] == [2, 2, 2]
    assert result["service_1_worker"]["workers"] == 1 and result["service_eps_16_clients_1_worker"] > 0
