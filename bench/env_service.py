"""Environment service throughput: scored episodes per second over OpenEnv vs in-process.

Starts `python -m core.clarify.serve` (rubric v1) on 127.0.0.1 in a subprocess, then plays the
oracle over the published 50 with 1, 4 and 16 concurrent clients (one openenv-core
MCPToolClient session each, in threads) for a fixed wall time, and the same policy in-process.
Every served episode is a reset, its calls, and the Episode record fetched from the server. Wall
time is the clock (the server is another process). The headline (16 clients) prints last.

    python bench/env_service.py [--quick] [--json OUT]
"""

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from core.clarify.environment import ClarifyEnv  # noqa: E402
from core.clarify.policies import make_policy  # noqa: E402
from core.clarify.remote import connect, play_remote  # noqa: E402
from core.clarify.scenarios import load_scenarios  # noqa: E402

CLIENTS = (1, 4, 16)
POLICY = "oracle"


def inprocess(scenarios, seconds: float) -> dict:
    """Episodes per wall second of the policy on a local ClarifyEnv (the eval runner's path)."""
    policy, rng = make_policy(POLICY), random.Random(0)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for s in scenarios:
            env = ClarifyEnv(s, "v1")
            policy.play(env, rng)
            env.episode(POLICY)
        done += len(scenarios)
    wall = time.perf_counter() - start
    return {"episodes": done, "wall_seconds": wall, "episodes_per_second": done / wall}


def served(url: str, scenarios, clients: int, seconds: float) -> dict:
    """Episodes per wall second with ``clients`` sessions playing at once until the time is up."""
    policy = make_policy(POLICY)
    counts = [0] * clients
    sessions = [connect(url) for _ in range(clients)]
    start = time.perf_counter()

    def worker(i: int) -> None:
        rng, k = random.Random(i), i
        while time.perf_counter() - start < seconds:
            play_remote(policy, scenarios[k % len(scenarios)], sessions[i], rng)
            counts[i] += 1
            k += clients

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    for c in sessions:
        c.close()
    return {"clients": clients, "episodes": sum(counts), "wall_seconds": wall,
            "episodes_per_second": sum(counts) / wall}


def start_server(port: int) -> subprocess.Popen:
    import httpx

    proc = subprocess.Popen([sys.executable, "-m", "core.clarify.serve", "--rubric", "v1", "--port", str(port),
                             "--max-sessions", str(max(CLIENTS) + 4)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise TimeoutError("the server did not come up in 120 s")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1 s per configuration instead of 5 s")
    p.add_argument("--seconds", type=float, default=None, help="wall seconds per configuration (overrides --quick)")
    p.add_argument("--json", default=None, help="write the measurements as JSON here")
    args = p.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else 1.0 if args.quick else 5.0
    scenarios = load_scenarios("clarifyrl-heldout", 50)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = start_server(port)
    try:
        local = inprocess(scenarios, seconds)
        print(f"{'in-process':>12} {local['episodes_per_second']:>9,.0f} episodes/s")
        rows = []
        for n in CLIENTS:
            rows.append(served(f"http://127.0.0.1:{port}", scenarios, n, seconds))
            print(f"{n:>4} clients  {rows[-1]['episodes_per_second']:>9,.0f} episodes/s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    by = {r["clients"]: r["episodes_per_second"] for r in rows}
    result = {"service_eps_1_client": by[1], "service_eps_4_clients": by[4], "service_eps_16_clients": by[16],
              "inprocess_eps": local["episodes_per_second"], "policy": POLICY, "rubric": "v1",
              "scenarios": "clarifyrl-heldout (first 50)", "seconds": seconds, "inprocess": local,
              "service": rows, "cpu_count": os.cpu_count(), "python": sys.version.split()[0]}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"service, 16 clients: {by[16]:,.0f} scored episodes/s over OpenEnv WebSocket "
          f"({by[16] / local['episodes_per_second']:.3f} x in-process {local['episodes_per_second']:,.0f}/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
