"""Server memory under a fixed load of sessions uploading logs: resident memory stays bounded.

Serves the app in this process and drives it through ``gradio_client``: each round is a new
session (a new Client) that uploads a log of about ``--mb`` MB and filters it, as a visitor does.
Uploads live in ``core.runs.uploads.STORE``, which drops the least recently used one past its
byte budget; this bench sets that budget to ``--budget-mb`` and reports resident memory after
every round, so the bound shows as a plateau instead of a line that climbs with every visitor.

    python bench/app_memory.py [--quick] [--rounds N] [--mb MB] [--budget-mb MB] [--json OUT]

The headline (last line) gives resident memory after the warm-up round and at the end.
"""

import argparse
import gc
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.records import at_least, output_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_LOG = ROOT / "tests" / "fixtures" / "replay_runs" / "fixture-set" / "guess" / "episodes.jsonl"


def rss_mb() -> float:
    """This process's resident memory in MB (Linux /proc; the server runs in this process)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_log(path: Path, megabytes: float) -> Path:
    """A valid episode log of about ``megabytes`` MB: the fixture's episodes, repeated."""
    lines = FIXTURE_LOG.read_text().splitlines(keepends=True)
    per = sum(len(line) for line in lines)
    path.write_text("".join(lines * max(1, int(megabytes * 2**20 / per))))
    return path


def run(rounds: int, megabytes: float, budget_mb: float) -> dict:
    import app
    from gradio_client import Client, handle_file

    from core.runs import uploads
    from tests.app.harness import launched

    uploads.STORE.total_bytes = int(budget_mb * 2**20)
    log = make_log(Path(tempfile.mkdtemp(prefix="clarifylab-mem-")) / "visitor.jsonl", megabytes)
    filters = ([], [], 0, 1, "any", [], "")
    series = []
    with launched(app.build(ROOT / "tests" / "fixtures" / "replay_runs")) as url:
        for _ in range(rounds):
            client = Client(url, verbose=False)
            client.predict(handle_file(str(log)), False, [], api_name="/upload_log")
            client.predict(["fixture-set/guess"], *filters, api_name="/filter_episodes")
            del client
            gc.collect()
            series.append({"rss_mb": round(rss_mb(), 1), "store_mb": round(uploads.STORE.bytes() / 2**20, 1),
                           "uploads_held": len(uploads.STORE)})
    first, last = series[0]["rss_mb"], series[-1]["rss_mb"]
    return {"rounds": rounds, "upload_mb": round(log.stat().st_size / 2**20, 2), "budget_mb": budget_mb,
            "series": series, "rss_after_first_mb": first, "rss_end_mb": last,
            "rss_max_mb": max(s["rss_mb"] for s in series), "store_max_mb": max(s["store_mb"] for s in series)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 rounds of 2 MB uploads, budget 8 MB")
    parser.add_argument("--rounds", type=at_least(1), default=30)
    parser.add_argument("--mb", type=float, default=8.0, help="size of each uploaded log")
    parser.add_argument("--budget-mb", type=float, default=48.0, help="the upload store's byte budget")
    parser.add_argument("--json", type=output_file, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.mb, args.budget_mb = 8, 2.0, 8.0
    result = run(args.rounds, args.mb, args.budget_mb)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"app_memory: {result['rounds']} sessions each uploading {result['upload_mb']} MB: resident "
          f"{result['rss_after_first_mb']:.0f} MB after the first, {result['rss_end_mb']:.0f} MB at the end "
          f"(max {result['rss_max_mb']:.0f}); uploads held at most {result['store_max_mb']:.0f} MB "
          f"(budget {result['budget_mb']:.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
