"""Markdown tables of evaluation runs: avg score with its 95% interval, per family and difficulty.

Reads run directories written by ``python -m core.runs.eval`` (their episodes.jsonl) and prints the
tables the README and the model cards carry. Intervals are core.stats bootstraps that resample
whole scenarios, because the K samples of one scenario are not independent. ``--ask-or-act`` reads
only each run's summary.json and the paired comparisons that ``python -m core.runs.eval compare
--json`` wrote, so the ask-or-act tables quote exactly what was committed:

    python -m train.clarify_report replays/clarify-grpo-published50-v1 replays/clarify-warmup-published50-v1
    python -m train.clarify_report --ask-or-act replays/clarifylab-cued-v3/* --compare results/cued_compare/*.json
    python -m train.clarify_report --by-cue replays/clarifylab-cued-v3/decision-rlcd   # why an agent asked
"""

import argparse
import json
import math
from pathlib import Path
from typing import Callable, Sequence

from core.runs.eval import read_run
from core.clarify.cued import map_value
from core.clarify.families import DIFFICULTIES, FAMILIES
from core.records import Episode
from core.runs.summary import RunSummary
from core.stats import bootstrap_mean


def _cell(episodes: Sequence[Episode]) -> str:
    if not episodes:
        return "-"
    ci = bootstrap_mean([e.score for e in episodes], [e.scenario.id for e in episodes])
    return f"{ci.mean:.3f}" + ("" if math.isnan(ci.lo) else f" [{ci.lo:.3f}, {ci.hi:.3f}]")


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


def read_summary(path: Path) -> RunSummary:
    """A run directory's summary.json; raises ValueError when it has none."""
    file = Path(path) / "summary.json"
    if not file.is_file():
        raise ValueError(f"{path} holds no summary.json")
    return RunSummary.model_validate_json(file.read_text(encoding="utf-8"))


def _setting(summary: RunSummary) -> tuple:
    return summary.scenarios, summary.rubric, summary.limit, summary.samples, summary.seed


def _interval(mean: float, lo: float, hi: float, signed: bool = False) -> str:
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"{f.format(mean)} [{f.format(lo)}, {f.format(hi)}]"


def ask_or_act(paths: Sequence[Path], comparisons: Sequence[Path], baseline: str = "bayes") -> str:
    """Three markdown tables from summary.json and compare JSON alone: one row per run (score, FieldMatch,
    questions, paired difference to ``baseline``), every paired comparison, and the README's short form
    (one column per run). Raises ValueError when the runs differ in scenarios, rubric, limit, K or seed
    (one table, one setting), two runs share a folder name (a run's name) or a comparison names a run
    that is not listed."""
    names = [Path(p).name for p in paths]
    if len(set(names)) < len(names):
        raise ValueError(f"runs are named by their folder and these repeat: {sorted({n for n in names if names.count(n) > 1})}")
    runs = {n: read_summary(p) for n, p in zip(names, paths)}
    where = {Path(p).resolve(): n for n, p in zip(names, paths)}
    settings = {_setting(s) for s in runs.values()}
    if len(settings) != 1:
        raise ValueError(f"the runs differ in (scenarios, rubric, limit, samples, seed): {sorted(settings, key=str)}")
    pairs = []
    for file in comparisons:
        c = json.loads(Path(file).read_text(encoding="utf-8"))
        a, b = where.get(Path(c["a"]).resolve()), where.get(Path(c["b"]).resolve())
        if a is None or b is None:
            raise ValueError(f"{file} compares {c['a']} with {c['b']}; list both runs")
        pairs.append((a, b, c))
    to_base = {a: (c["diff"], *c["ci"]) for a, b, c in pairs if b == baseline}
    to_base |= {b: (-c["diff"], -c["ci"][1], -c["ci"][0]) for a, b, c in pairs if a == baseline}  # B - A
    scenarios, rubric, limit, samples, _ = settings.pop()
    rows = [f"| run | policy | avg score [95% CI] | FieldMatch | questions / episode | paired − {baseline} [95% CI] |",
            "|---|---|---|---|---|---|"]
    shown = f"first {limit}" if limit is not None else f"all {next(iter(runs.values())).n_scenarios}"
    short = [f"| {scenarios}, rubric {rubric}, {shown}, K = {samples} | " + " | ".join(runs) + " |",
             "|---|" + "---|" * len(runs), "| score [95% CI] · questions | ", f"| paired − {baseline} [95% CI] | "]
    for name, s in runs.items():
        paired = _interval(*to_base[name], signed=True) if name in to_base else "-"
        score = _interval(s.avg_score, *s.avg_score_ci)
        field_match = s.components.get("FieldMatchRubric", float("nan"))
        rows.append(f"| {name} | `{s.policy}` | {score} | {field_match:.3f} | {s.avg_questions:.2f} | {paired} |")
        short[2] += f"{score} · {s.avg_questions:.2f} | "
        short[3] += f"{paired} | "
    compared = ["| A | B | shared scenarios | mean A | mean B | A − B [95% CI] |", "|---|---|---|---|---|---|"]
    compared += [f"| {a} | {b} | {c['n_shared']} | {c['mean_a']:.3f} | {c['mean_b']:.3f} | "
                 f"{_interval(c['diff'], *c['ci'], signed=True)} |" for a, b, c in pairs]
    return "\n\n".join(["\n".join(rows), "\n".join(compared), "\n".join(line.rstrip() for line in short)])


CUE_KINDS = ("clear", "weak", "two", "none")


def cue_table(paths: Sequence[Path]) -> str:
    """Per run and cue kind, over every required field of its decision-driven episodes: the mean max p
    of the generator's posterior and of the model's belief from the request, how often the agent asked
    the field, and how often the belief's most probable value was the hidden one (ties: the earlier
    value, as the agent proposes). Raises ValueError for a run whose episodes logged no beliefs."""
    lines = ["| run | cue | fields | true max p | model max p | asked | model's MAP = hidden value |",
             "|---|---|---|---|---|---|---|"]
    for path in paths:
        tally = {kind: [] for kind in CUE_KINDS}
        for e in read_run(path):
            if e.beliefs is None or e.scenario.cues is None:
                raise ValueError(f"{path}: episode {e.id} logged no beliefs on a cued scenario")
            start, asked = e.beliefs.steps[0], {s.asked for s in e.beliefs.steps if s.asked}
            for name, cue in e.scenario.cues.fields.items():
                belief = start.fields[name]
                tally[cue.kind].append((max(cue.posterior), max(belief), name in asked,
                                        map_value(name, belief) == e.scenario.hidden_profile[name]))
        for kind, rows in tally.items():
            if rows:
                means = [sum(r[i] for r in rows) / len(rows) for i in range(4)]
                lines.append(f"| {Path(path).name} | {kind} | {len(rows)} | " + " | ".join(f"{m:.2f}" for m in means) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (same scenario set)")
    parser.add_argument("--ask-or-act", action="store_true",
                        help="the ask-or-act tables, read from each run's summary.json and --compare JSON only")
    parser.add_argument("--compare", nargs="*", type=Path, default=[],
                        help="with --ask-or-act: JSON files from python -m core.runs.eval compare --json")
    parser.add_argument("--by-cue", action="store_true",
                        help="decision:MODEL runs on cued scenarios: beliefs, questions and MAP per cue kind")
    args = parser.parse_args()
    if args.compare and not args.ask_or_act:
        parser.error("--compare goes with --ask-or-act")
    try:
        if args.by_cue:
            print(cue_table(args.runs))
        else:
            print(ask_or_act(args.runs, args.compare) if args.ask_or_act else report(args.runs))
    except ValueError as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    main()
