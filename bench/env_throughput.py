"""Environment throughput: complete scored scripted episodes per second, on one core.

Each measured episode is a fresh ClarifyEnv, a scripted policy playing it to the end, the rubric
score and the Episode record (scenarios are generated beforehand, as the eval runner does; one
extra configuration includes generation). The goal is >= 5,000 episodes/s so the environment is
never what a training step waits for. The headline (slowest configuration) prints last.

    python bench/env_throughput.py [--quick] [--json OUT]
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from core.clarify.environment import ClarifyEnv  # noqa: E402
from core.clarify.policies import make_policy  # noqa: E402
from core.clarify.scenarios import generate_scenario, load_scenarios  # noqa: E402
from core.records import at_least, output_file  # noqa: E402

GOAL = 5_000


def measure(policy_name: str, rubric: str, scenarios, *, seconds: float, generate: bool = False) -> dict:
    """Play scenarios round-robin for about ``seconds`` of CPU time; return episodes per second.

    CPU time of this process (not wall time) is the clock, so helpers sharing the machine slow
    the run down but do not distort the rate much.
    """
    policy = make_policy(policy_name)
    rng = random.Random(0)
    done, start, wall = 0, time.process_time(), time.perf_counter()
    deadline = start + seconds
    while time.process_time() < deadline:
        for s in scenarios:
            if generate:
                s = generate_scenario(s.seed, s.difficulty)
            env = ClarifyEnv(s, rubric)
            policy.play(env, rng)
            env.episode(policy_name)
        done += len(scenarios)
    elapsed = time.process_time() - start
    return {"policy": policy_name, "rubric": rubric, "generate": generate, "episodes": done,
            "cpu_seconds": elapsed, "wall_seconds": time.perf_counter() - wall,
            "episodes_per_second": done / elapsed}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="0.3 s per configuration instead of 2 s")
    p.add_argument("--json", type=output_file, default=None, help="write the measurements as JSON here")
    p.add_argument("--seconds", type=at_least(0.001, whole=False), default=None,
                   help="CPU seconds per configuration (overrides --quick)")
    args = p.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else 0.3 if args.quick else 2.0
    scenarios = load_scenarios("clarifyrl-heldout")
    configs = [("oracle", "v1", False), ("oracle", "v2", False), ("guess", "v1", False),
               ("ask-required", "v2", False), ("random", "v1", False), ("oracle", "v2", True)]
    rows = []
    for policy, rubric, generate in configs:
        row = measure(policy, rubric, scenarios, seconds=seconds, generate=generate)
        rows.append(row)
        gen = " +generation" if generate else ""
        print(f"{policy:>13} {rubric}{gen:<12} {row['episodes_per_second']:>9,.0f} episodes/s")
    slowest = min(rows, key=lambda r: r["episodes_per_second"])
    result = {"episodes_per_second": slowest["episodes_per_second"], "slowest": slowest, "goal": GOAL,
              "configurations": rows, "quick": args.quick, "python": sys.version.split()[0]}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    verdict = "meets" if slowest["episodes_per_second"] >= GOAL else "misses"
    label = f"{slowest['policy']} {slowest['rubric']}" + (" +generation" if slowest["generate"] else "")
    print(f"slowest configuration ({label}): "
          f"{slowest['episodes_per_second']:,.0f} complete scored episodes/s on one core ({verdict} the {GOAL:,}/s goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
