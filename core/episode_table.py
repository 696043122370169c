"""The episode table: one pandas row per episode, its filters, paired comparison and aggregates.

Pure functions of ``Episode`` records and tables (no disk access but CSV export), so the viewer,
the benchmark and notebooks slice logs the same way. ``core.replays`` feeds them runs from disk.
"""

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import pandas as pd

from core.families import RUBRIC_WEIGHTS
from core.records import Episode
from core.stats import Interval, bootstrap_mean, paired_difference

TABLE_COLUMNS = ["run", "episode", "family", "difficulty", "score", "gate",
                 "questions", "revealed", "profile", "termination", "recorded"]
"""Columns shown in the episode table (the frame also holds components and search text);
``recorded`` is the score an imported source log recorded, shown only when some row has one."""


COMPONENT_WEIGHTS = {f"{name}Rubric": w for name, w in RUBRIC_WEIGHTS.items()}
"""Published component name -> weight (v1 and v2 share the weights)."""
COMPONENTS = ("FormatCheckRubric", *COMPONENT_WEIGHTS)


@dataclass(frozen=True)
class Filters:
    """Which rows of an episode table to keep; empty tuples and blank text keep everything."""

    runs: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    difficulties: tuple[str, ...] = ()
    score_min: float = 0.0
    score_max: float = 1.0
    gate: Literal["any", "pass", "fail"] = "any"
    terminations: tuple[str, ...] = ()
    text: str = ""
    """Case-insensitive substring searched in the transcript, plan and scenario."""


@dataclass(frozen=True)
class Comparison:
    """Two runs on their shared scenarios: per-scenario scores and the paired difference."""

    table: pd.DataFrame
    """One row per shared scenario: scenario, family, difficulty, score_a, score_b, diff."""
    difference: Interval
    """Mean of score_a - score_b over shared scenarios, with its 95% bootstrap interval."""
    only_a: int
    only_b: int
    episodes: dict[str, tuple[Episode, Episode]] = field(default_factory=dict)
    """Scenario id -> (first episode of run a, first episode of run b)."""


# ---- the episode table -------------------------------------------------------------------


def _search_text(episode: Episode) -> str:
    parts = [episode.scenario.id, episode.scenario.request, episode.plan_raw or ""]
    for turn in episode.turns:
        parts.append(turn.raw)
        answer = turn.result.get("answer") or turn.result.get("error")
        if answer:
            parts.append(str(answer))
    return "\n".join(parts).lower()


def episode_row(run: str, episode: Episode) -> dict:
    """One table row: identity, outcome, and the rubric components by name."""
    row = {
        "run": run,
        "episode": episode.id,
        "scenario": episode.scenario.id,
        "family": episode.scenario.family,
        "difficulty": episode.scenario.difficulty,
        "score": round(episode.score, 3),
        "gate": "pass" if episode.breakdown and episode.breakdown.gate_passed else "fail",
        "questions": episode.questions_asked,
        "revealed": len(episode.fields_revealed),
        "profile": len(episode.scenario.hidden_profile),
        "termination": episode.termination,
        "recorded": episode.recorded.score if episode.recorded else None,
        "text": _search_text(episode),
    }
    if episode.breakdown:
        row.update(episode.breakdown.components)
    return row


def episode_table(runs: dict[str, Sequence[Episode]]) -> pd.DataFrame:
    """A pandas table of every episode of the given runs (run name -> episodes)."""
    rows = [episode_row(run, ep) for run, episodes in runs.items() for ep in episodes]
    frame = pd.DataFrame(rows, columns=None if rows else TABLE_COLUMNS + ["text"])
    frame["recorded"] = frame["recorded"].astype("float64")
    for col in ("family", "difficulty", "termination", "gate"):
        frame[col] = frame[col].astype("category")
    frame["run"] = pd.Categorical(frame["run"], categories=list(runs))
    return frame


def filter_table(frame: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """Rows of ``frame`` that pass every filter, in their original order."""
    mask = frame["score"].between(filters.score_min, filters.score_max)
    for column, allowed in (("run", filters.runs), ("family", filters.families),
                            ("difficulty", filters.difficulties),
                            ("termination", filters.terminations)):
        if allowed:
            mask &= frame[column].isin(allowed)
    if filters.gate != "any":
        mask &= frame["gate"] == filters.gate
    text = filters.text.strip().lower()
    if text:
        mask &= frame["text"].str.contains(text, regex=False)
    return frame[mask]


# ---- compare and overview ----------------------------------------------------------------


def _by_scenario(episodes: Sequence[Episode]) -> dict[str, list[Episode]]:
    groups: dict[str, list[Episode]] = {}
    for ep in episodes:
        groups.setdefault(ep.scenario.id, []).append(ep)
    return groups


def compare_runs(a: Sequence[Episode], b: Sequence[Episode], seed: int = 0) -> Comparison:
    """Pair two runs by scenario id (sample scores averaged per scenario) and difference them."""
    ga, gb = _by_scenario(a), _by_scenario(b)
    shared = [sid for sid in ga if sid in gb]
    rows = []
    for sid in shared:
        sa = sum(e.score for e in ga[sid]) / len(ga[sid])
        sb = sum(e.score for e in gb[sid]) / len(gb[sid])
        sc = ga[sid][0].scenario
        rows.append({"scenario": sid, "family": sc.family, "difficulty": sc.difficulty,
                     "score_a": round(sa, 4), "score_b": round(sb, 4), "diff": round(sa - sb, 4)})
    table = pd.DataFrame(rows, columns=["scenario", "family", "difficulty", "score_a", "score_b", "diff"])
    diff = paired_difference(table["score_a"].to_numpy(), table["score_b"].to_numpy(), seed=seed)
    return Comparison(table=table, difference=diff, only_a=len(ga) - len(shared),
                      only_b=len(gb) - len(shared),
                      episodes={sid: (ga[sid][0], gb[sid][0]) for sid in shared})


def family_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and max score per run and family (columns run, family, mean, max, n)."""
    grouped = frame.groupby(["run", "family"], observed=True)["score"]
    out = grouped.agg(["mean", "max", "count"]).reset_index()
    return out.rename(columns={"count": "n"})


def component_means(frame: pd.DataFrame, components: Sequence[str]) -> pd.DataFrame:
    """Mean of each rubric component per run (long format: run, component, mean)."""
    present = [c for c in components if c in frame.columns]
    means = frame.groupby("run", observed=True)[present].mean().reset_index()
    return means.melt(id_vars="run", var_name="component", value_name="mean")


def run_interval(frame: pd.DataFrame, run: str, seed: int = 0) -> Interval:
    """Mean score of one run in ``frame`` with a scenario-clustered 95% bootstrap interval."""
    rows = frame[frame["run"] == run]
    return bootstrap_mean(rows["score"].to_numpy(), rows["scenario"].astype(str).tolist(), seed=seed)


def display_columns(rows: pd.DataFrame) -> list[str]:
    """Table columns worth showing: ``recorded`` only when some row has a recorded score."""
    return [c for c in TABLE_COLUMNS if c != "recorded" or rows["recorded"].notna().any()]


def export_csv(rows: pd.DataFrame, directory: str | Path | None = None) -> Path:
    """Write the shown columns of table rows to a fresh CSV file and return its path."""
    out = Path(directory or tempfile.mkdtemp(prefix="clarifylab-")) / "episodes.csv"
    rows[[c for c in rows.columns if c != "text"]].to_csv(out, index=False)
    return out


def comparison_note(comp: Comparison, run_a: str, run_b: str) -> str:
    """The paired difference in one sentence a reader can quote."""
    d = comp.difference
    if d.n == 0:
        return f"`{run_a}` and `{run_b}` share no scenario."
    sign = "higher" if d.lo > 0 else "lower" if d.hi < 0 else "not distinguishable from"
    return (f"On **{d.n}** shared scenarios, `{run_a}` − `{run_b}` = **{d.mean:+.3f}** "
            f"(95% paired bootstrap interval {d.lo:+.3f} to {d.hi:+.3f}): a is {sign} b. "
            f"Scenarios only in a: {comp.only_a}, only in b: {comp.only_b}.")
