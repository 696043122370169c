"""Decider latency: reference (a), shared prefill (b), packed (c) and the automatic choice, side by side.

Random Qwen3-architecture bodies (fp32, CPU, the same thread count for every path) answer Q
questions with K options about an S-token state. We time the model part of each path
(tokenization is the same for all and excluded) in interleaved rounds, keep each path's best
time, and record the max |dp| of every path against (a). Ratios use process CPU time by default
(one thread: equal to wall time on an idle machine, and not inflated by other processes on a
shared one); ``--clock wall`` uses wall time; both are in the JSON. Peak memory per path is
measured in a child process (large allocations via mmap, peak RSS reset before each path) at 16
and 64 questions, to show that (b)/(c) memory follows the chunk size, not the question count.
The headline: hidden 256 x 6 layers, 64 four-option questions, 800-token state.

    python -m bench.decide_latency --quick --json runs/decide_latency.json   # ~2 min on an idle machine
    python -m bench.decide_latency --json runs/decide_latency_full.json      # full grid (~15 min)
    python -m bench.decide_latency --quick --fit                             # refit core/decision/cost.py
"""

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runs as a script or with -m

from core.decision import Choice, Decider
from core.decision.cost import CostModel, Shape, fit
from core.decision.decider import Limits
from core.decision.random_model import _WORDS, body_config, letter_tokenizer, random_body, random_rows
from core.records import at_least, output_file  # noqa: E402

BODIES = {
    "h256x6": dict(hidden=256, layers=6, heads=4, kv_heads=2, head_dim=64, intermediate=768),
    "h512x8": dict(hidden=512, layers=8, heads=8, kv_heads=4, head_dim=64, intermediate=1536),
    "qwen3-0.6b": dict(hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, intermediate=3072),
}
HEADLINE = ("h256x6", 64, 800, 4)
PATHS = ("reference", "shared", "packed", "auto")


def grid(quick: bool) -> list[tuple[str, int, int, int]]:
    """(body, questions, state tokens, options) points; the headline is always measured."""
    if quick:
        pts = [("h256x6", q, 800, 4) for q in (1, 2, 8, 64)]
        return pts + [("h256x6", 8, 200, 4), ("h256x6", 8, 1500, 4), ("h256x6", 16, 800, 26)]
    pts = [("h256x6", q, 800, 4) for q in (1, 2, 4, 8, 16, 32, 64)]
    pts += [("h256x6", q, s, 4) for s in (200, 1500) for q in (1, 2, 8, 64)]
    pts += [("h256x6", 16, 800, k) for k in (2, 10, 26)]
    pts += [("h512x8", q, 800, 4) for q in (1, 2, 8, 16, 64)]
    pts += [("h512x8", 8, s, 4) for s in (200, 1500)] + [("h512x8", 16, 800, k) for k in (2, 26)]
    return pts + [("qwen3-0.6b", q, 800, 4) for q in (1, 2, 8)]


def memory_points(quick: bool) -> list[tuple[str, int, int, int]]:
    bodies = ["h256x6"] if quick else ["h256x6", "h512x8"]
    return [(b, q, 800, 4) for b in bodies for q in (16, 64)]


def make_state(tok, n_tokens: int, rng: random.Random) -> str:
    """Text whose prompt prefix is about ``n_tokens`` tokens long."""
    words = " ".join(rng.choice(_WORDS) for _ in range(n_tokens * 2))
    return tok.decode(tok(words, add_special_tokens=False)["input_ids"][: max(1, n_tokens - 6)])


def make_questions(k: int, q: int, rng: random.Random) -> list[Choice]:
    """Short questions with one-word options (a 4-option suffix is about 40 tokens, as published)."""
    return [Choice(" ".join(rng.choice(_WORDS) for _ in range(5)) + "?", rng.sample(_WORDS, k)) for _ in range(q)]


class Bench:
    """Builds each body once (seeded) and the request of each point (seeded per point)."""

    def __init__(self):
        self.tok, self.deciders = letter_tokenizer(), {}

    def decider(self, name: str) -> Decider:
        if name not in self.deciders:
            shape = BODIES[name]
            d = Decider(random_body(len(self.tok), seed=0, **shape), random_rows(shape["hidden"], seed=1), self.tok)
            rng = random.Random(1)
            warm = d.tokenize(make_state(self.tok, 64, rng), make_questions(4, 4, rng))
            for path in PATHS:
                d.probabilities(warm, path=path)
            self.deciders[name] = d
        return self.deciders[name]

    def request(self, point):
        name, q, s, k = point
        rng = random.Random(f"{q}-{s}-{k}")
        return self.decider(name).tokenize(make_state(self.tok, s, rng), make_questions(k, q, rng))


MIN_REPEATS = 3
"""Timed calls of every path at every point, whatever the budget: one call of a slow path was its whole figure."""


def time_paths(decider: Decider, req, budget_s: float) -> tuple[dict, dict]:
    """Interleaved rounds over the paths: (path -> (best wall s, best CPU s, first probabilities), path -> calls
    timed); each path is timed at least ``MIN_REPEATS`` times, then while its budget lasts (7 rounds at most)."""
    out, spent, calls = {}, dict.fromkeys(PATHS, 0.0), dict.fromkeys(PATHS, 0)
    for r in range(7):
        for path in PATHS if r % 2 == 0 else PATHS[::-1]:  # alternate the order: no path always goes first
            if calls[path] >= MIN_REPEATS and spent[path] + out[path][0] > budget_s:
                continue
            calls[path] += 1
            w0, c0 = time.perf_counter(), time.process_time()
            probs = decider.probabilities(req, path=path)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            spent[path] += wall
            if path in out:
                wall, cpu, probs = min(wall, out[path][0]), min(cpu, out[path][1]), out[path][2]
            out[path] = (wall, cpu, probs)
    return out, calls


def measure(points, budget_s: float, clock: str) -> list[dict]:
    bench, rows = Bench(), []
    for point in points:
        name, q, _, k = point
        decider, req = bench.decider(name), bench.request(point)
        row = {"body": name, "questions": q, "state_tokens": len(req.prefix), "options": k,
               "suffix_tokens": sum(len(x) for x in req.suffixes), "auto_choice": decider.choose_path(req)}
        timed, calls = time_paths(decider, req, budget_s)
        ref = timed["reference"][2]
        for path, (wall, cpu, probs) in timed.items():
            row[f"{path}_ms"], row[f"{path}_calls"] = (cpu if clock == "cpu" else wall) * 1e3, calls[path]
            row[f"{path}_wall_ms"], row[f"{path}_cpu_ms"] = wall * 1e3, cpu * 1e3
            row[f"{path}_max_dp"] = float((probs - ref).abs().max())
        row["speedup_best"] = row["reference_ms"] / min(row["shared_ms"], row["packed_ms"])
        row["speedup_auto"] = row["reference_ms"] / row["auto_ms"]
        rows.append(row)
        print(f"[{clock}] {name:10s} q={q:3d} state={row['state_tokens']:5d} k={k:2d} | a {row['reference_ms']:9.1f} ms"
              f" | b {row['shared_ms']:8.1f} | c {row['packed_ms']:8.1f} | auto({row['auto_choice'][0]}) "
              f"{row['auto_ms']:8.1f} | best x{row['speedup_best']:6.2f} auto x{row['speedup_auto']:6.2f}"
              f" | max|dp| {max(row[f'{p}_max_dp'] for p in PATHS):.1e}", flush=True)
    return rows


def _rss_kb(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def memory_child(points) -> list[dict]:
    """Peak RSS above the start of each path (run with MALLOC_MMAP_THRESHOLD_ set, in a child)."""
    bench, out = Bench(), []
    for point in points:
        decider, req = bench.decider(point[0]), bench.request(point)
        row = {"body": point[0], "questions": point[1], "state_tokens": point[2], "options": point[3]}
        for path in PATHS:
            gc.collect()
            Path("/proc/self/clear_refs").write_text("5")  # resets the peak-RSS counter (Linux)
            base = _rss_kb("VmRSS")
            decider.probabilities(req, path=path)
            row[f"{path}_peak_mb"] = max(0, _rss_kb("VmHWM") - base) / 1024
        out.append(row)
    return out


def measure_memory(quick: bool, threads: int) -> list[dict]:
    """Run ``memory_child`` in a fresh process whose large allocations go back to the OS on free."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, "-m", "bench.decide_latency", "--memory-child", "--threads", str(threads)]
    if quick:
        cmd.append("--quick")
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.CalledProcessError, OSError, ValueError) as err:
        print(f"peak memory not measured: {err}")
        return []


def fit_rows(rows: list[dict]) -> list[tuple]:
    """(cost-model terms..., seconds) per measured path, for ``cost.fit``."""
    out = []
    for r in rows:
        cfg = body_config(1, **BODIES[r["body"]])
        shape = Shape(r["state_tokens"], [r["suffix_tokens"] // r["questions"]] * r["questions"], cfg)
        for path in ("reference", "shared", "packed"):
            out.append((*CostModel().terms(shape, path, Limits()), r[f"{path}_ms"] / 1e3))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="headline body only, 7 sizes (about 2 minutes on an idle machine)")
    ap.add_argument("--json", type=output_file, help="write the results here")
    ap.add_argument("--threads", type=at_least(1), default=1, help="torch threads, the same for every path")
    ap.add_argument("--budget", type=at_least(0.01, whole=False), default=1.0,
                    help="seconds of repeats per path and size (at most 7 rounds)")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                    help="what the ratios use: process CPU time (default; one thread only) or wall time")
    ap.add_argument("--fit", action="store_true", help="print cost-model coefficients fitted to these timings")
    ap.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.memory_child:
        print(json.dumps(memory_child(memory_points(args.quick))))
        return
    if args.clock == "cpu" and args.threads != 1:
        ap.error("--clock cpu sums all threads' time; use --clock wall with --threads > 1")
    t0 = time.time()
    rows = measure(grid(args.quick), args.budget, args.clock)
    memory = measure_memory(args.quick, args.threads)
    head = next(r for r in rows if (r["body"], r["questions"], r["options"]) == HEADLINE[:2] + HEADLINE[3:]
                and abs(r["state_tokens"] - HEADLINE[2]) < 50)
    result = {
        "speedup_64q_800": head["speedup_best"], "min_speedup": min(r["speedup_auto"] for r in rows),
        "max_abs_dp": max(r[f"{p}_max_dp"] for r in rows for p in PATHS),
        "threads": args.threads, "quick": args.quick, "clock": args.clock, "seconds": time.time() - t0,
        "limits": Limits().__dict__, "points": rows, "peak_memory_mb": memory,
    }
    if args.fit:
        result["fitted_cost_model"] = fit(fit_rows(rows)).__dict__
        print(f"fitted cost model: {result['fitted_cost_model']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    for m in memory:
        print(f"peak memory MB, {m['body']} {m['questions']} q x {m['options']} options, {m['state_tokens']}-token state: "
              + ", ".join(f"{p} {m[f'{p}_peak_mb']:.1f}" for p in PATHS))
    print(f"min auto speedup {result['min_speedup']:.2f}x, max |dp| {result['max_abs_dp']:.1e}, {result['seconds']:.0f} s")
    print(f"headline speedup (best of b/c over a, 64 q x 4 options, 800-token state, h256x6): "
          f"{result['speedup_64q_800']:.2f}x")


if __name__ == "__main__":
    main()
