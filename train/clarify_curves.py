"""Training curves of a GRPO run: reward, KL, completion length, fraction of zero-std groups.

Reads the ``log_history.json`` that train/clarify_grpo.py writes (TRL's ``state.log_history``) and
draws one PNG with four panels. A zero-std group (every generation of a scenario scored the same)
carries no GRPO signal, so that fraction says how much of each batch actually trained.

    python -m train.clarify_curves checkpoints/clarify-grpo/log_history.json --out checkpoints/clarify-grpo/training_curves.png

``--trend JSON`` also writes whether the reward rose beyond its noise: each step plays a different
scenario, so a step's reward varies more with the scenario than with the policy; the slope of reward
on step, with a bootstrap interval over steps, says whether the rise is more than that noise.
"""

import argparse
import json
from pathlib import Path

import numpy as np

from core.stats import bootstrap_mean, bootstrap_statistic

PANELS = (
    ("reward", "reward (rubric + plan term)"),
    ("kl", "KL to the warmup"),
    ("completions/mean_length", "sampled tokens per episode"),
    ("frac_reward_zero_std", "fraction of zero-std groups"),
)
"""(log key, panel title); ``rewards/rubric_reward/mean`` is drawn on the reward panel too."""


def series(history: list[dict], key: str) -> tuple[list[int], list[float]]:
    """Steps and values of one logged metric (entries without it are skipped)."""
    rows = [(h["step"], h[key]) for h in history if key in h and "step" in h]
    return [r[0] for r in rows], [float(r[1]) for r in rows]


def reward_trend(history: list[dict], key: str = "reward") -> dict:
    """The reward's least-squares slope per 100 steps (95% bootstrap interval over steps) and the
    mean reward of the first and last thirds of the run, each with its interval."""
    steps, rewards = (np.asarray(v, dtype=np.float64) for v in series(history, key))
    if steps.size < 6:
        raise ValueError(f"a trend needs at least 6 logged steps of {key!r}, got {steps.size}")

    def slope(idx: np.ndarray) -> float:
        x, y = steps[idx], rewards[idx]
        spread = ((x - x.mean()) ** 2).sum()
        return float(100.0 * ((x - x.mean()) * (y - y.mean())).sum() / spread) if spread else float("nan")

    third = steps.size // 3
    return {"key": key, "steps": int(steps.size), "first_step": int(steps[0]), "last_step": int(steps[-1]),
            "slope_per_100_steps": bootstrap_statistic(slope, steps.size).as_dict(),
            "first_third": bootstrap_mean(rewards[:third]).as_dict(),
            "last_third": bootstrap_mean(rewards[-third:]).as_dict()}


def plot(history: list[dict], out: Path, title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not any(k in h for h in history for k, _ in PANELS):
        raise ValueError("the log history holds none of " + ", ".join(k for k, _ in PANELS))
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharex=True)
    for ax, (key, label) in zip(axes.flat, PANELS):
        ax.plot(*series(history, key), lw=1.2, label=key)
        if key == "reward":
            ax.plot(*series(history, "rewards/rubric_reward/mean"), lw=1.2, label="rubric score")
            ax.legend(fontsize=8)
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("optimiser step")
    fig.suptitle(title or "clarify GRPO")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log_history", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--title", default="")
    parser.add_argument("--trend", type=Path, default=None, help="also write the reward's trend (JSON) here")
    args = parser.parse_args()
    history = json.loads(args.log_history.read_text())
    if isinstance(history, dict):  # a trainer_state.json holds it under "log_history"
        history = history.get("log_history", [])
    plot(history, args.out, args.title)
    print(f"wrote {args.out}")
    if args.trend:
        trend = reward_trend(history)
        args.trend.write_text(json.dumps(trend, indent=1) + "\n")
        s = trend["slope_per_100_steps"]
        print(f"reward slope {s['mean']:+.3f} per 100 steps [{s['lo']:+.3f}, {s['hi']:+.3f}] over {trend['steps']} steps")


if __name__ == "__main__":
    main()
