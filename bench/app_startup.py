"""Time from ``python app.py`` to the first page served, and what the imports cost.

Starts the app as a fresh process (as a visitor or a Space would), polls ``/`` until it answers
200, then stops it; repeats. Then runs ``python -X importtime -c "import app"`` once and reports
the cumulative import time of gradio and of each tab module.

    python bench/app_startup.py [--quick] [--repeats N] [--json OUT]

Goal: first page within 10 s on a fresh clone. The headline is the last line printed.
"""

import argparse
import json
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.records import at_least, output_file  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_page_seconds(timeout: float = 120.0) -> float:
    """Seconds from process start to the first HTTP 200 on ``/``."""
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - start < timeout:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).status == 200:
                    return time.perf_counter() - start
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"no page after {timeout:.0f} s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def import_costs() -> dict[str, float]:
    """Cumulative import seconds of gradio, each demo module and the whole app."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import app"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    costs = {}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)$", line)
        if match and (match.group(3) in ("gradio", "app", "torch") or match.group(3).startswith("demo.")):
            costs.setdefault(match.group(3), int(match.group(1)) / 1e6)
    return costs


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=at_least(1), default=3)
    parser.add_argument("--quick", action="store_true", help="one start only (the headline point)")
    parser.add_argument("--json", type=output_file, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats = 1
    times = [first_page_seconds() for _ in range(args.repeats)]
    costs = import_costs()
    for name, seconds in sorted(costs.items(), key=lambda kv: -kv[1]):
        print(f"  import {name:28s} {seconds:6.2f} s (cumulative)")
    out = {"first_page_seconds": statistics.median(times), "runs": times, "imports": costs, "goal_seconds": 10.0}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"app_startup: first page after {out['first_page_seconds']:.1f} s (median of {len(times)}; "
          f"goal < 10 s): {'meets' if out['first_page_seconds'] < 10 else 'MISSES'} the goal")
    return out


if __name__ == "__main__":
    main()
