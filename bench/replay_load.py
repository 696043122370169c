"""Replay viewer load and filter speed on a generated 10,000-episode log.

Plays scripted policies (ask-required, guess, random) on generated scenarios through the real
environment, writes one JSONL log, then times what the Replays tab does with it: loading a run
(fast scan + pandas table, ``core.runs.replays.load_run``) and each filter (``filter_table``).

    python bench/replay_load.py [--quick] [--episodes N] [--json OUT]

Goal on the 2-core dev machine: load under 1 s, every filter under 100 ms. The headline is the
last line printed. Timings are wall-clock medians of repeated runs; the machine may be shared.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.runs.episode_log import write_episodes  # noqa: E402
from core.runs.episode_table import Filters, filter_table  # noqa: E402
from core.runs.eval import run_eval  # noqa: E402
from core.runs.replays import _load_cached, find_episode, load_run  # noqa: E402
from core.clarify.scenarios import load_scenarios  # noqa: E402
from core.records import at_least, output_file  # noqa: E402

FILTERS = {
    "family": Filters(families=("event_planning",)),
    "difficulty": Filters(difficulties=("hard", "medium")),
    "score range": Filters(score_min=0.3, score_max=0.8),
    "gate failed": Filters(gate="fail"),
    "termination": Filters(terminations=("max_steps", "over_budget")),
    "search (common word)": Filters(text="budget"),
    "search (no match)": Filters(text="zzzz-no-such-text"),
    "all combined": Filters(families=("support_triage", "coding_requirements"), difficulties=("hard",),
                            score_min=0.1, gate="pass", text="urgency"),
}


def rss_mb() -> float:
    """Resident memory of this process in MB (Linux /proc; 0 elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def make_log(path: Path, n: int) -> None:
    """``n`` scored episodes from three scripted policies over generated scenarios, as JSONL."""
    scenarios = load_scenarios(f"generated:0-{n // 3 + 1}")[:n]
    third = len(scenarios) // 3
    episodes = (run_eval("ask-required", scenarios[:third], rubric="v1")
                + run_eval("guess", scenarios[third:2 * third], rubric="v2")
                + run_eval("random", scenarios[2 * third:], rubric="v1", seed=0))
    write_episodes(path, episodes)


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_filters(frame, repeats: int) -> dict[str, float]:
    """Median seconds of each filter in FILTERS on the loaded table."""
    results = {}
    for name, filters in FILTERS.items():
        results[name] = median_seconds(lambda f=filters: filter_table(frame, f), repeats)
        print(f"  filter {name:22s} {results[name] * 1000:7.1f} ms  ({len(filter_table(frame, filters))} rows)")
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the 10,000-episode headline point with fewer repeats")
    parser.add_argument("--episodes", type=at_least(1), default=None, help="log size (default 10,000)")
    parser.add_argument("--json", type=output_file, default=None, help="write the results as JSON to this path")
    args = parser.parse_args(argv)
    n = args.episodes or 10000
    repeats = 3 if args.quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        log = root / "bench" / "episodes.jsonl"
        log.parent.mkdir()
        start = time.perf_counter()
        make_log(log, n)
        print(f"generated {n} episodes ({log.stat().st_size / 2**20:.1f} MB) in {time.perf_counter() - start:.1f} s")

        def cold_load():
            _load_cached.cache_clear()
            return load_run(root, "bench")

        before = rss_mb()
        run = cold_load()
        memory = rss_mb() - before
        load = median_seconds(cold_load, repeats)
        frame = run.table
        opened = median_seconds(lambda: find_episode(root, "bench", run.table["episode"].iloc[n // 2]), repeats)
        results = time_filters(frame, repeats * 2)
    out = {
        "episodes": n, "load_seconds": load, "filter_seconds": results,
        "filter_seconds_max": max(results.values()), "open_episode_seconds": opened,
        "load_memory_mb": memory, "table_memory_mb": frame.memory_usage(deep=True).sum() / 2**20,
        "goal": {"load_seconds": 1.0, "filter_seconds_max": 0.1},
    }
    print(f"open one episode (validate its line): {opened * 1000:.1f} ms")
    print(f"memory: +{memory:.0f} MB resident after loading (table {out['table_memory_mb']:.0f} MB)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    ok = load < 1.0 and out["filter_seconds_max"] < 0.1
    print(f"replay_load: {n} episodes load in {load:.3f} s (goal < 1 s), slowest filter "
          f"{out['filter_seconds_max'] * 1000:.1f} ms (goal < 100 ms): {'meets' if ok else 'MISSES'} the goal")
    return out


if __name__ == "__main__":
    main()
