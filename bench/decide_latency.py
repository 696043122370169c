"""Decider latency: reference (a), shared prefill (b), packed (c) and the automatic choice, side by side.

Random Qwen3-architecture bodies (fp32, CPU, the same thread count for every path) answer Q
questions with K options about an S-token state; we time the model part of each path (tokenization
is shared by all paths and excluded), record each path's peak memory (process peak RSS, reset before
each path) and the max |dp| of every path against (a). The headline is hidden 256 x 6 layers, 64
four-option questions, 800-token state.

    python -m bench.decide_latency --quick --json runs/decide_latency.json   # ~2 minutes
    python -m bench.decide_latency                                             # full grid (~20-30 min)
    python -m bench.decide_latency --quick --fit                               # refit core/decision/cost.py
"""

import argparse
import gc
import json
import os
import random
import sys
import time
from pathlib import Path

import torch

from core.decision import Choice, Decider
from core.decision.cost import CostModel, Shape, fit
from core.decision.decider import Limits
from core.decision.random_model import _WORDS, body_config, letter_tokenizer, random_body, random_rows

BODIES = {
    "h256x6": dict(hidden=256, layers=6, heads=4, kv_heads=2, head_dim=64, intermediate=768),
    "h512x8": dict(hidden=512, layers=8, heads=8, kv_heads=4, head_dim=64, intermediate=1536),
    "qwen3-0.6b": dict(hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, intermediate=3072),
}
HEADLINE = ("h256x6", 64, 800, 4)
PATHS = ("reference", "shared", "packed", "auto")


def grid(quick: bool) -> list[tuple[str, int, int, int]]:
    """(body, questions, state tokens, options) points; the headline is always measured."""
    qs = [1, 2, 4, 8, 16, 32, 64]
    if quick:
        pts = [("h256x6", q, 800, 4) for q in (1, 2, 4, 8, 16, 64)]
        return pts + [("h256x6", 8, 200, 4), ("h256x6", 8, 1500, 4), ("h256x6", 16, 800, 2), ("h256x6", 16, 800, 26)]
    pts = [("h256x6", q, 800, 4) for q in qs]
    pts += [("h256x6", q, s, 4) for s in (200, 1500) for q in (1, 2, 8, 64)]
    pts += [("h256x6", 16, 800, k) for k in (2, 10, 26)]
    pts += [("h512x8", q, 800, 4) for q in (1, 2, 8, 16, 64)]
    pts += [("h512x8", 8, s, 4) for s in (200, 1500)] + [("h512x8", 16, 800, k) for k in (2, 26)]
    return pts + [("qwen3-0.6b", q, 800, 4) for q in (1, 2, 8)]


def make_state(tok, n_tokens: int, rng: random.Random) -> str:
    """Text whose prompt prefix is about ``n_tokens`` tokens long."""
    words = " ".join(rng.choice(_WORDS) for _ in range(n_tokens * 2))
    ids = tok(words, add_special_tokens=False)["input_ids"][: max(1, n_tokens - 6)]
    return tok.decode(ids)


def make_questions(k: int, q: int, rng: random.Random) -> list[Choice]:
    """Short questions with one-word options (a 4-option suffix is about 40 tokens, as published)."""
    return [Choice(" ".join(rng.choice(_WORDS) for _ in range(5)) + "?", rng.sample(_WORDS, k)) for _ in range(q)]


def _rss_kb(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def _reset_peak() -> int:
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets the peak-RSS counter (Linux)
    except OSError:
        pass
    return _rss_kb("VmRSS")


def time_paths(decider: Decider, req, budget_s: float) -> dict:
    """Interleaved rounds over the paths (min time per path, so load spikes hurt all alike).

    Returns path -> (best seconds, probabilities of the first run, peak MB above the start).
    """
    out, spent = {}, dict.fromkeys(PATHS, 0.0)
    for _ in range(5):
        for path in PATHS:
            if path in out and spent[path] + out[path][0] > budget_s:
                continue
            base = _reset_peak()
            t0 = time.perf_counter()
            probs = decider.probabilities(req, path=path)
            dt = time.perf_counter() - t0
            peak = max(0, _rss_kb("VmHWM") - base) / 1024
            spent[path] += dt
            out[path] = (dt, probs, peak) if path not in out else (min(dt, out[path][0]), out[path][1], max(peak, out[path][2]))
    return out


def measure(points, threads: int, budget_s: float) -> list[dict]:
    torch.set_num_threads(threads)
    tok, rng, deciders, rows = letter_tokenizer(), random.Random(0), {}, []
    for body_name, q, s, k in points:
        if body_name not in deciders:
            shape = BODIES[body_name]
            body = random_body(len(tok), seed=0, **shape)
            deciders[body_name] = Decider(body, random_rows(shape["hidden"], seed=1), tok)
            warm = deciders[body_name].tokenize(make_state(tok, 64, rng), make_questions(4, 4, rng))
            for path in PATHS:
                deciders[body_name].probabilities(warm, path=path)
        decider = deciders[body_name]
        req = decider.tokenize(make_state(tok, s, rng), make_questions(k, q, rng))
        row = {"body": body_name, "questions": q, "state_tokens": len(req.prefix), "options": k,
               "suffix_tokens": sum(len(x) for x in req.suffixes), "auto_choice": decider.choose_path(req)}
        timed = time_paths(decider, req, budget_s)
        ref = timed["reference"][1]
        for path, (sec, probs, peak) in timed.items():
            row[f"{path}_ms"], row[f"{path}_peak_mb"] = sec * 1e3, peak
            row[f"{path}_max_dp"] = float((probs - ref).abs().max())
        row["speedup_best"] = row["reference_ms"] / min(row["shared_ms"], row["packed_ms"])
        row["speedup_auto"] = row["reference_ms"] / row["auto_ms"]
        rows.append(row)
        print(f"{body_name:10s} q={q:3d} state={row['state_tokens']:5d} k={k:2d} | a {row['reference_ms']:9.1f} ms"
              f" | b {row['shared_ms']:8.1f} | c {row['packed_ms']:8.1f} | auto({row['auto_choice'][0]}) "
              f"{row['auto_ms']:8.1f} | best x{row['speedup_best']:6.2f} auto x{row['speedup_auto']:6.2f}"
              f" | max|dp| {max(row[f'{p}_max_dp'] for p in PATHS):.1e}", flush=True)
    return rows


def fit_rows(rows: list[dict]) -> list[tuple]:
    """(calls, linear FLOPs, attention FLOPs, seconds) per measured path, for ``cost.fit``."""
    out = []
    for r in rows:
        cfg = body_config(1, **{k: v for k, v in BODIES[r["body"]].items()})
        per_q = r["suffix_tokens"] // r["questions"]
        shape = Shape(r["state_tokens"], [per_q] * r["questions"], cfg)
        for path in ("reference", "shared", "packed"):
            out.append((*CostModel().terms(shape, path, Limits()), r[f"{path}_ms"] / 1e3))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="headline body only, ~10 sizes (about 2 minutes)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--threads", type=int, default=1, help="torch threads, the same for every path")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of repeats per path and size")
    ap.add_argument("--fit", action="store_true", help="print cost-model coefficients fitted to these timings")
    args = ap.parse_args()
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        # Large blocks via mmap are returned to the OS on free, so the peak RSS of each path is its own.
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS=str(args.threads))
        os.execve(sys.executable, [sys.executable, "-m", "bench.decide_latency", *sys.argv[1:]], env)
    t0 = time.time()
    rows = measure(grid(args.quick), args.threads, args.budget)
    head = next(r for r in rows if (r["body"], r["questions"], r["options"]) == HEADLINE[:2] + HEADLINE[3:]
                and abs(r["state_tokens"] - HEADLINE[2]) < 50)
    result = {
        "speedup_64q_800": head["speedup_best"],
        "min_speedup": min(r["speedup_auto"] for r in rows),
        "max_abs_dp": max(r[f"{p}_max_dp"] for r in rows for p in PATHS),
        "threads": args.threads, "quick": args.quick, "seconds": time.time() - t0,
        "headline_peak_mb": {p: head[f"{p}_peak_mb"] for p in PATHS}, "points": rows,
    }
    if args.fit:
        model = fit(fit_rows(rows))
        result["fitted_cost_model"] = model.__dict__
        print(f"fitted cost model: {model}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"peak memory at the headline (MB above start): " +
          ", ".join(f"{p} {head[f'{p}_peak_mb']:.1f}" for p in PATHS))
    print(f"min auto speedup {result['min_speedup']:.2f}x, max |dp| {result['max_abs_dp']:.1e}, {result['seconds']:.0f} s")
    print(f"headline speedup (best of b/c over a, 64 q x 4 options, 800-token state, h256x6): "
          f"{result['speedup_64q_800']:.2f}x")


if __name__ == "__main__":
    main()
