"""Markdown tables of evaluation runs: avg score with its 95% interval, per family and difficulty.

Reads run directories written by ``python -m core.runs.eval`` (their episodes.jsonl) and prints the
tables the README and the model cards carry. Intervals are core.stats bootstraps that resample
whole scenarios, because the K samples of one scenario are not independent.

    python -m train.clarify_report replays/clarify-grpo-published50-v1 replays/clarify-warmup-published50-v1
"""

import argparse
from pathlib import Path
from typing import Callable, Sequence

from core.runs.eval import read_run
from core.clarify.families import DIFFICULTIES, FAMILIES
from core.records import Episode
from core.stats import bootstrap_mean


def _cell(episodes: Sequence[Episode]) -> str:
    if not episodes:
        return "-"
    ci = bootstrap_mean([e.score for e in episodes], [e.scenario.id for e in episodes])
    return f"{ci.mean:.3f} [{ci.lo:.3f}, {ci.hi:.3f}]"


def slice_table(runs: dict[str, list[Episode]], key: Callable[[Episode], str], names: Sequence[str],
                header: str) -> str:
    """One row per run, one column per slice value (mean [95% CI], n episodes in the header)."""
    first = next(iter(runs.values()))
    counts = {n: sum(1 for e in first if key(e) == n) for n in names}
    cols = [n for n in names if counts[n]]
    lines = [f"| {header} | " + " | ".join(f"{c} (n={counts[c]})" for c in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for name, eps in runs.items():
        lines.append(f"| {name} | " + " | ".join(_cell([e for e in eps if key(e) == c]) for c in cols) + " |")
    return "\n".join(lines)


def overall_table(runs: dict[str, list[Episode]]) -> str:
    lines = ["| run | rubric | episodes | avg score [95% CI] | plan passed gate | avg questions |",
             "|---|---|---|---|---|---|"]
    for name, eps in runs.items():
        gate = sum(1 for e in eps if e.breakdown is not None and e.breakdown.gate_passed) / len(eps)
        questions = sum(e.questions_asked for e in eps) / len(eps)
        lines.append(f"| {name} | {eps[0].rubric} | {len(eps)} | {_cell(eps)} | {gate:.0%} | {questions:.2f} |")
    return "\n".join(lines)


def report(paths: Sequence[Path]) -> str:
    runs = {p.name: read_run(p) for p in paths}
    return "\n\n".join([
        overall_table(runs),
        slice_table(runs, lambda e: e.scenario.family, list(FAMILIES), "run \\ family"),
        slice_table(runs, lambda e: e.scenario.difficulty, list(DIFFICULTIES), "run \\ difficulty"),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (same scenario set)")
    print(report(parser.parse_args().runs))


if __name__ == "__main__":
    main()
