"""Training curves of GRPO runs: reward, KL, completion length, fraction of zero-std groups.

Reads the ``log_history.json`` that train/clarify_grpo.py writes (TRL's ``state.log_history``) and
draws one PNG with four panels. A zero-std group (every generation of a scenario scored the same)
carries no GRPO signal, so that fraction says how much of each batch actually trained.

    python -m train.clarify_curves checkpoints/clarify-grpo/log_history.json --out checkpoints/clarify-grpo/training_curves.png

Several histories (a sweep's arms) are drawn over each other; ``--table JSON`` writes one row per arm.
``--trend JSON`` also writes whether the reward rose beyond its noise: each step plays a different
scenario, so a step's reward varies more with the scenario than with the policy; the slope of reward
on step, with a bootstrap interval over steps, says whether the rise is more than that noise.
"""

import argparse
import json
from pathlib import Path

import numpy as np

from core.stats import bootstrap_mean, bootstrap_statistic, paired_difference

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


def plot(runs: dict[str, list[dict]] | list[dict], out: Path, title: str = "") -> None:
    """One PNG of four panels; several runs (a sweep's arms, by label) are drawn over each other."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = runs if isinstance(runs, dict) else {"": runs}
    for label, history in runs.items():
        if not any(k in h for h in history for k, _ in PANELS):
            raise ValueError(f"the log history {label} holds none of " + ", ".join(k for k, _ in PANELS))
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharex=True)
    for ax, (key, label) in zip(axes.flat, PANELS):
        for run, history in runs.items():
            ax.plot(*series(history, key), lw=1.2, marker="." if len(runs) > 1 else None, label=run or key)
            if key == "reward" and len(runs) == 1:
                ax.plot(*series(history, "rewards/rubric_reward/mean"), lw=1.2, label="rubric score")
        if key == "reward":
            ax.legend(fontsize=8)
        if not any(key in h for history in runs.values() for h in history):
            ax.text(0.5, 0.5, f"not logged{' (beta = 0: no reference model)' if key == 'kl' else ''}",
                    ha="center", va="center", transform=ax.transAxes, color="0.4")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("optimiser step")
    fig.suptitle(title or "clarify GRPO")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def sweep_table(runs: dict[str, list[dict]]) -> list[dict]:
    """One row per run of a sweep: steps, seconds a step, reward, grad norm, entropy, zero-std groups,
    and the paired reward difference against the first run on the steps both logged after the
    first (runs with one seed play the same scenario at each step; step 1 is the same policy)."""
    def mean(history, key):
        values = series(history, key)[1]
        return round(float(np.mean(values)), 4) if values else None

    (base_label, base), rows = next(iter(runs.items())), []
    paired = dict(zip(*series(base, "reward")))
    for label, history in runs.items():
        steps, rewards = series(history, "reward")
        shared = [(s, r, paired[s]) for s, r in zip(steps, rewards) if s > 1 and s in paired]
        row = {"run": label, "steps": len(steps), "rewards": [round(r, 4) for r in rewards],
               "mean_reward_after_step_1": round(float(np.mean(rewards[1:])), 4) if len(rewards) > 1 else None,
               **{name: mean(history, key) for name, key in (
                   ("step_time_s", "step_time"), ("grad_norm", "grad_norm"), ("entropy", "entropy"),
                   ("frac_reward_zero_std", "frac_reward_zero_std"))}}
        if label != base_label and shared:
            diff = paired_difference([r for _, r, _ in shared], [b for _, _, b in shared])
            row[f"minus_{base_label}"] = {**diff.as_dict(), "steps": [s for s, _, _ in shared]}
        rows.append(row)
    return rows


def read_history(path: Path) -> list[dict]:
    """TRL's log history from ``log_history.json`` (or a ``trainer_state.json``, which nests it)."""
    history = json.loads(path.read_text())
    return history.get("log_history", []) if isinstance(history, dict) else history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log_history", type=Path, nargs="+",
                        help="one run's log_history.json, or several (a sweep's arms, labelled by their folder)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--title", default="")
    parser.add_argument("--trend", type=Path, default=None, help="also write the reward's trend (JSON) here")
    parser.add_argument("--table", type=Path, default=None,
                        help="also write one row per run (JSON), paired against the first run")
    args = parser.parse_args()
    runs = {path.parent.name: read_history(path) for path in args.log_history}
    plot(runs if len(runs) > 1 else next(iter(runs.values())), args.out, args.title)
    print(f"wrote {args.out}")
    if args.table:
        rows = sweep_table(runs)
        args.table.write_text(json.dumps(rows, indent=1) + "\n")
        for row in rows:
            print(json.dumps({k: v for k, v in row.items() if k != "rewards"}))
    if args.trend:
        trends = {label: reward_trend(history) for label, history in runs.items()}
        written = trends if len(trends) > 1 else next(iter(trends.values()))
        args.trend.write_text(json.dumps(written, indent=1) + "\n")
        for label, trend in trends.items():
            s = trend["slope_per_100_steps"]
            print(f"{label}: reward slope {s['mean']:+.3f} per 100 steps [{s['lo']:+.3f}, {s['hi']:+.3f}]")


if __name__ == "__main__":
    main()
