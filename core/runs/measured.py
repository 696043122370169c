"""What a model scored in the shipped runs, quoted by a picker before a visitor starts it.

A run's log names its player ``model:<path>`` (the ask-or-act agent: ``decision:<path>``); a model
matches on its location's last path parts, so ``checkpoints/clarify-grpo`` is never taken for
``checkpoints/clarify-smollm2-grpo``.
"""

from pathlib import Path
from typing import Sequence

from core.runs.replays import SHIPPED_RUNS, RunInfo, discover_runs


def measured_runs(location: str, root: str | Path | None = None, prefix: str = "model:") -> list[RunInfo]:
    """The runs under ``root`` that a model at ``location`` played (its logs name ``<prefix><path>``,
    matched on the path's last parts), so a picker can show what the model scored before it is started."""
    want = Path(location).parts
    found = []
    for info in discover_runs(SHIPPED_RUNS if root is None else root):
        if not info.policy.startswith(prefix):
            continue
        parts = Path(info.policy.removeprefix(prefix)).parts
        if parts and want[-len(parts):] == parts:
            found.append(info)
    return found


def measured_note(runs: Sequence[RunInfo]) -> str:
    """One line per run: score with its interval, the set, rubric, episodes and completion."""
    lines = []
    for r in runs:
        score = "?" if r.avg_score is None else f"{r.avg_score:.3f}"
        ci = f" [{r.ci[0]:.3f}, {r.ci[1]:.3f}]" if r.ci else ""
        comp = "" if r.completion_rate is None else f", {r.completion_rate:.0%} completed"
        lines.append(f"measured: {score}{ci} on {r.scenarios} (rubric {r.rubric}, {r.n} episodes{comp}; run {r.name})")
    return "\n".join(lines)
