"""Environment service throughput: scored episodes per second over OpenEnv vs in-process.

Starts `python -m core.clarify.serve --workers W` (rubric v1) on 127.0.0.1 in a subprocess, then
plays the oracle over the published 50 with 1, 4 and 16 concurrent clients (one openenv-core
MCPToolClient session each) for a fixed wall time, and the same policy in-process. The clients
run in up to ``--client-procs`` processes (threads inside each), so the clients' own Python is not
one interpreter's lock; every process connects first, then all start together. Every served
episode is a reset, its calls, and the Episode record fetched from the server. 16 clients are
measured against one worker too, for the scaling ratio. Wall time is the clock. The headline
(16 clients, W workers) prints last.

    python bench/env_service.py [--quick] [--seconds S] [--workers W] [--json OUT]
"""

import argparse
import json
import multiprocessing
import os
import random
import signal
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
from core.records import at_least, output_file  # noqa: E402

CLIENTS = (1, 4, 16)
POLICY = "oracle"
START_TIMEOUT_S = 300
"""Each worker imports openenv-core (and gradio); on a loaded 2-core machine four take minutes."""


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


def _client_process(url: str, scenarios, first: int, n: int, stride: int, seconds: float, barrier, out) -> None:
    """``n`` sessions in threads, sessions ``first``.. of ``stride``; plays until ``seconds`` after the barrier."""
    policy, counts = make_policy(POLICY), [0] * n
    sessions = [connect(url) for _ in range(n)]
    barrier.wait()
    start = time.perf_counter()

    def worker(i: int) -> None:
        rng, k = random.Random(first + i), first + i
        while time.perf_counter() - start < seconds:
            play_remote(policy, scenarios[k % len(scenarios)], sessions[i], rng)
            counts[i] += 1
            k += stride

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in sessions:
        c.close()
    out.put(sum(counts))


def served(url: str, scenarios, clients: int, seconds: float, procs: int = 4) -> dict:
    """Episodes per wall second with ``clients`` sessions (over ``procs`` processes) until the time is up."""
    ctx = multiprocessing.get_context("fork")
    procs = max(1, min(procs, clients))
    barrier, out = ctx.Barrier(procs + 1), ctx.Queue()
    shares = [clients // procs + (1 if p < clients % procs else 0) for p in range(procs)]
    firsts = [sum(shares[:p]) for p in range(procs)]
    workers = [ctx.Process(target=_client_process, args=(url, scenarios, f, n, clients, seconds, barrier, out))
               for f, n in zip(firsts, shares)]
    for w in workers:
        w.start()
    barrier.wait(timeout=300)
    start = time.perf_counter()
    total = sum(out.get(timeout=seconds + 300) for _ in workers)
    wall = time.perf_counter() - start
    for w in workers:
        w.join(timeout=60)
    return {"clients": clients, "client_processes": procs, "episodes": total, "wall_seconds": wall,
            "episodes_per_second": total / wall}


def start_server(port: int, workers: int = 1) -> subprocess.Popen:
    import httpx

    proc = subprocess.Popen([sys.executable, "-m", "core.clarify.serve", "--rubric", "v1", "--port", str(port),
                             "--max-sessions", str((max(CLIENTS) + 4) * workers), "--workers", str(workers)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # its own process group: stop_server ends the workers too
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    stop_server(proc)
    raise TimeoutError(f"the server did not come up in {START_TIMEOUT_S} s")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure_server(workers: int, scenarios, clients: tuple[int, ...], seconds: float, procs: int) -> list[dict]:
    """Start a server with ``workers`` processes, measure each client count, stop it."""
    port = _free_port()
    proc = start_server(port, workers)
    try:
        rows = []
        for n in clients:
            rows.append({"workers": workers, **served(f"http://127.0.0.1:{port}", scenarios, n, seconds, procs)})
            print(f"{n:>4} clients, {workers} worker(s)  {rows[-1]['episodes_per_second']:>9,.0f} episodes/s", flush=True)
        return rows
    finally:
        stop_server(proc)


def stop_server(proc: subprocess.Popen) -> None:
    """End the server and every worker it forked (uvicorn's workers outlive a terminated parent)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 s per configuration instead of 8 s")
    p.add_argument("--seconds", type=at_least(0.001, whole=False), default=None,
                   help="wall seconds per configuration (overrides --quick)")
    p.add_argument("--workers", type=at_least(1), default=4, help="server processes for the main measurements")
    p.add_argument("--client-procs", type=at_least(1), default=4, help="client processes the sessions are spread over")
    p.add_argument("--json", type=output_file, default=None, help="write the measurements as JSON here")
    args = p.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else 2.0 if args.quick else 8.0
    scenarios = load_scenarios("clarifyrl-heldout", 50)
    local = inprocess(scenarios, seconds)
    print(f"{'in-process':>12} {local['episodes_per_second']:>9,.0f} episodes/s", flush=True)
    rows = measure_server(args.workers, scenarios, CLIENTS, seconds, args.client_procs)
    single = measure_server(1, scenarios, (max(CLIENTS),), seconds, args.client_procs)[0]
    by = {r["clients"]: r["episodes_per_second"] for r in rows}
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    result = {"service_eps_1_client": by[1], "service_eps_4_clients": by[4], "service_eps_16_clients": by[16],
              "service_eps_16_clients_1_worker": single["episodes_per_second"],
              "inprocess_eps": local["episodes_per_second"], "workers": args.workers,
              "client_processes": args.client_procs, "policy": POLICY, "rubric": "v1",
              "scenarios": "clarifyrl-heldout (first 50)", "seconds": seconds, "inprocess": local,
              "service": rows, "service_1_worker": single, "load_average_after": load, "cpu_count": os.cpu_count(),
              "python": sys.version.split()[0]}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"service, 16 clients: {by[16]:,.0f} scored episodes/s over OpenEnv WebSocket with {args.workers} workers "
          f"({single['episodes_per_second']:,.0f}/s with 1; {by[16] / local['episodes_per_second']:.3f} x in-process "
          f"{local['episodes_per_second']:,.0f}/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
