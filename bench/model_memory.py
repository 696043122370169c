"""Load every listed model in turn through the one cache and report resident memory against the bound.

Every available policy and decision model of the one list (``core.models.lists.all_entries``) loads
through one ``ModelCache`` (the process's LRU bound, ``CLARIFYLAB_MODEL_MEMORY_MB``, default 2 GB);
after each load the bench records the bytes the caches hold (each tensor once: SmolLM2's adapter,
packaged policy and Decisions pipeline share one copy of the base, ``core.models.bases``), what
they would hold with no sharing, the bases loaded (each once, however many models use it) and this
process's resident memory.
``--quick`` loads only the small shipped models (no SmolLM2, no adapter or pooled head over it), for the test.

    python bench/model_memory.py [--quick] [--json OUT]

The headline (last line) gives the peak resident memory and the most model bytes held (and without
sharing), beside the bound.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.records import output_file  # noqa: E402


def rss_mb() -> float:
    """This process's resident memory and its peak so far, in MB (Linux /proc)."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def run(quick: bool) -> dict:
    from core.decision.model import open_decider
    from core.models import availability, bases, lists
    from core.models.cache import ModelCache
    from core.models.memory import LOADED, memory_bound

    cache, series = ModelCache(open_decider=open_decider), []
    for entry in lists.all_entries():
        ready = (availability.check(entry) if entry.kind == "policy" else availability.check_decision(entry)).ok
        small = entry.source == "shipped" and not availability.over_a_real_base(entry.location)  # no SmolLM2 base
        if not ready or entry.source in ("hub", "url", "endpoint") or (quick and not small):
            continue
        start = time.perf_counter()
        cache.get(entry) if entry.kind == "policy" else cache.decider(entry)
        rss, peak = rss_mb()
        series.append({"model": entry.key, "kind": entry.kind, "load_s": round(time.perf_counter() - start, 2),
                       "held_mb": round(LOADED.total() / 2**20, 1), "apart_mb": round(LOADED.total_apart() / 2**20, 1),
                       "bases": len(bases.loaded_bases()), "rss_mb": round(rss, 1), "peak_mb": round(peak, 1)})
    return {"quick": quick, "bound_mb": memory_bound() / 2**20, "series": series,
            "held_max_mb": max((s["held_mb"] for s in series), default=0.0),
            "apart_max_mb": max((s["apart_mb"] for s in series), default=0.0),
            "peak_rss_mb": max((s["peak_mb"] for s in series), default=rss_mb()[1]), "held_at_end": LOADED.labels()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small shipped models only")
    parser.add_argument("--json", type=output_file, help="write the result here")
    args = parser.parse_args(argv)
    result = run(args.quick)
    for row in result["series"]:
        print(f"{row['model']:<40} {row['kind']:<8} {row['load_s']:>6.2f} s  held {row['held_mb']:>7.1f} MB "
              f"(unshared {row['apart_mb']:>7.1f})  bases {row['bases']}  rss {row['rss_mb']:>7.1f} MB")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    print(f"model_memory: {len(result['series'])} models loaded in turn: peak resident {result['peak_rss_mb']:.0f} MB, "
          f"model bytes held at most {result['held_max_mb']:.0f} MB ({result['apart_max_mb']:.0f} MB unshared), "
          f"bound {result['bound_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
