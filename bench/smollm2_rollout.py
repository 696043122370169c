"""SmolLM2 rollouts on 2 CPUs: episodes/min of the evaluation's batches and of GRPO's groups, and
(full run) GRPO optimiser steps/min of train.clarify_grpo's real trainer, before (every turn prefills
the whole conversation) and after (each row keeps its keys/values, the shared system prompt read
once), side by side on the same scenarios and seeds; ``--repeats`` runs each side again with the other first.

A trained policy plays 5-7 turns an episode, and at turn 6 a batch of 16 re-read about 16 x 1,000
prompt tokens before: prefill, not decoding, was what an episode cost. The policy is the shipped
SmolLM2 warmup adapter (``--policy`` takes any model location). The headline (eval, after) prints last.

    python bench/smollm2_rollout.py [--quick] [--json OUT] [--policy checkpoints/clarify-smollm2-warmup]

A GRPO step is one group of 4 episodes of one training scenario plus the update (the SmolLM2 recipe:
train/clarify_smollm2_grpo.yaml, lr 1e-4, from ``--policy``); ``--quick`` leaves the steps out.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from core.clarify.chat_policy import load_chat_policy  # noqa: E402
from core.clarify.environment import ClarifyEnv  # noqa: E402
from core.clarify.scenarios import load_scenarios  # noqa: E402
from core.records import Generation, at_least, output_file  # noqa: E402


def measure(policy, scenarios, samples: int, batch_kv: bool, seed: int = 0) -> dict:
    """One batch: every scenario ``samples`` times in lockstep; episodes per minute of wall time."""
    policy.batch_kv = batch_kv
    envs = [ClarifyEnv(s, "v1") for s in scenarios for _ in range(samples)]
    start = time.perf_counter()
    policy.play_batch(envs, random.Random(seed))
    wall = time.perf_counter() - start
    return {"batch_kv": batch_kv, "episodes": len(envs), "turns": sum(len(e.turns) for e in envs),
            "wall_seconds": round(wall, 2), "episodes_per_minute": round(60 * len(envs) / wall, 2),
            "scores": [round(e.episode("bench").breakdown.total, 4) for e in envs]}


def grpo_steps(location: str, batch_kv: bool, threads: int, steps: int = 1) -> dict:
    """``steps`` real GRPO optimiser steps from ``location`` (a fresh trainer each call, same seed)."""
    from transformers import TrainerCallback
    from trl import TrlParser

    from train.clarify_grpo import ClarifyArgs, GRPOConfig, build_trainer

    class StepClock(TrainerCallback):
        def __init__(self):
            self.seconds, self.start = [], 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds.append(time.perf_counter() - self.start)

    with tempfile.TemporaryDirectory() as out:
        args, config = TrlParser((ClarifyArgs, GRPOConfig)).parse_args_and_config([
            "--config", str(ROOT / "train" / "clarify_smollm2_grpo.yaml"), "--model", location, "--output_dir", out,
            "--learning_rate", "1e-4", "--max_steps", str(steps), "--max_minutes", "0", "--save_strategy", "no",
            "--threads", str(threads), "--batch_kv", str(batch_kv).lower()])
        trainer = build_trainer(args, config)
        clock = StepClock()
        trainer.add_callback(clock)
        trainer.train()
    wall = sum(clock.seconds)
    return {"kind": "grpo step", "batch_kv": batch_kv, "steps": len(clock.seconds), "wall_seconds": round(wall, 2),
            "steps_per_minute": round(60 * len(clock.seconds) / wall, 3),
            "rewards": [round(row["reward"], 4) for row in trainer.state.log_history if "reward" in row]}


def fastest(runs: list[dict], batch_kv: bool, rate: str) -> dict:
    """One side's figure from its repeats: the run with the highest ``rate``, with every repeat's wall time."""
    mine = [r for r in runs if r["batch_kv"] == batch_kv]
    return {**max(mine, key=lambda r: r[rate]), "repeat_wall_seconds": [r["wall_seconds"] for r in mine]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a batch of 4 scenarios and one group, once each (several minutes: a real 135M model "
                   "writes every turn)")
    p.add_argument("--json", type=output_file, default=None, help="write the measurements as JSON here")
    p.add_argument("--policy", default="checkpoints/clarify-smollm2-warmup",
                   help="a model location (default: the best shipped SmolLM2 adapter)")
    p.add_argument("--scenarios", type=at_least(1), default=None, help="scenarios in the eval batch (default 16, quick 4)")
    p.add_argument("--threads", type=at_least(1), default=2)
    p.add_argument("--repeats", type=at_least(1), default=None,
                   help="runs of each side, alternating which goes first, the fastest kept (default 2: before, after, "
                        "after, before; quick 1)")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    n = args.scenarios or (4 if args.quick else 16)
    policy = load_chat_policy(args.policy, Generation(temperature=0.7, max_new_tokens=None))
    published = load_scenarios("clarifyrl-heldout")
    repeats = args.repeats or (1 if args.quick else 2)
    sides = [kv for r in range(repeats) for kv in ((False, True), (True, False))[r % 2]]  # before/after alternate
    rows, runs = [], []
    for kind, scenarios, samples in (("eval", published[:n], 1), ("grpo group", published[n:n + 1], 4)):
        done = []
        for batch_kv in sides:
            row = {"kind": kind, **measure(policy, scenarios, samples, batch_kv)}
            done.append(row)
            print(f"{kind:>10} {'after' if batch_kv else 'before':>6}: {row['episodes']:>2} episodes, {row['turns']:>3} turns, "
                  f"{row['wall_seconds']:>7.1f} s, {row['episodes_per_minute']:>6.2f} episodes/min", flush=True)
        rows += [fastest(done, kv, "episodes_per_minute") for kv in (False, True)]
        runs += done
    before, after = rows[0], rows[1]
    group_before, group_after = rows[2], rows[3]
    timed_steps = [] if args.quick else [grpo_steps(args.policy, batch_kv, args.threads) for batch_kv in sides]
    for row in timed_steps:
        print(f"{'grpo step':>10} {'after' if row['batch_kv'] else 'before':>6}: {row['steps']} step, "
              f"{row['wall_seconds']:>7.1f} s, {row['steps_per_minute']:>6.3f} steps/min", flush=True)
    steps = [fastest(timed_steps, kv, "steps_per_minute") for kv in (False, True)] if timed_steps else []
    result = {"policy": args.policy, "threads": args.threads, "quick": args.quick, "repeats": repeats,
              "episodes_per_minute": after["episodes_per_minute"], "episodes_per_minute_before": before["episodes_per_minute"],
              "grpo_groups_per_minute": round(group_after["episodes_per_minute"] / 4, 3),
              "grpo_groups_per_minute_before": round(group_before["episodes_per_minute"] / 4, 3),
              "grpo_steps_per_minute": steps[1]["steps_per_minute"] if steps else None,
              "grpo_steps_per_minute_before": steps[0]["steps_per_minute"] if steps else None,
              "same_episodes": all(r["scores"] == next(o for o in runs if o["kind"] == r["kind"])["scores"] for r in runs)
              and len({json.dumps(r["rewards"]) for r in timed_steps}) <= 1,
              "configurations": rows + steps, "runs": runs + timed_steps}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"SmolLM2 eval rollouts ({n} scenarios in one batch, {args.threads} threads): "
          f"{after['episodes_per_minute']:.2f} episodes/min with per-row keys/values vs {before['episodes_per_minute']:.2f} before "
          f"({after['episodes_per_minute'] / before['episodes_per_minute']:.1f}x); GRPO group of 4: "
          f"{result['grpo_groups_per_minute']:.2f} vs {result['grpo_groups_per_minute_before']:.2f} groups/min"
          + (f"; GRPO steps: {result['grpo_steps_per_minute']:.3f} vs {result['grpo_steps_per_minute_before']:.3f} steps/min"
             if steps else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
