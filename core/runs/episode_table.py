"""The episode table: one pandas row per episode, its filters, paired comparison and aggregates.

Pure functions of episode records and tables (no disk access but CSV export), so the viewer,
the benchmark and notebooks slice logs the same way. ``core.runs.replays`` feeds them runs from disk.
"""

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

import pandas as pd

from core.clarify.families import RUBRIC_WEIGHTS
from core.stats import Interval, bootstrap_mean, paired_difference

TABLE_COLUMNS = ["episode", "family", "difficulty", "score", "gate", "questions", "revealed",
                 "profile", "termination", "recorded", "run"]
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
    """One row per shared scenario: scenario, family, difficulty, score_a, score_b, diff, and
    episode_a / episode_b (the first episode id of that scenario in each run)."""
    difference: Interval
    """Mean of score_a - score_b over shared scenarios, with its 95% bootstrap interval."""
    only_a: int
    only_b: int


# ---- the episode table -------------------------------------------------------------------

RECORD_KEYS = ("scenario", "sample", "turns", "plan_raw", "score", "breakdown", "termination",
               "questions_asked", "fields_revealed", "recorded")
"""Top-level ``Episode`` fields a table row reads (a test checks them against the schema)."""


def record_id(record: dict) -> str:
    """``Episode.id`` computed from a raw record: ``seed{seed}_{family}_{difficulty}#{sample}``."""
    sc = record["scenario"]
    return f"seed{sc.get('seed')}_{sc['family']}_{sc['difficulty']}#{record.get('sample', 0)}"


def _search_text(record: dict) -> str:
    sc = record["scenario"]
    parts = [record_id(record), sc.get("request", ""), record.get("plan_raw") or ""]
    for turn in record.get("turns") or ():
        parts.append(turn.get("raw", ""))
        result = turn.get("result") or {}
        answer = result.get("answer") or result.get("error")
        if answer:
            parts.append(str(answer))
    return "\n".join(parts).lower()


def record_row(run: str, record: dict) -> dict:
    """One table row from a raw episode record (one parsed log line, not yet validated).

    Reading the raw record instead of a validated ``Episode`` is what keeps a 10,000-episode log
    loading in well under a second; the full record is validated when an episode is opened.
    """
    sc, breakdown, recorded = record["scenario"], record.get("breakdown"), record.get("recorded")
    row = {
        "run": run,
        "episode": record_id(record),
        "scenario": record_id(record).rsplit("#", 1)[0],
        "family": sc["family"],
        "difficulty": sc["difficulty"],
        "score": float(record.get("score", 0.0)),
        "gate": "pass" if breakdown and breakdown.get("gate_passed") else "fail",
        "questions": int(record.get("questions_asked", 0)),
        "revealed": len(record.get("fields_revealed") or ()),
        "profile": len(sc.get("hidden_profile") or ()),
        "termination": record.get("termination", "running"),
        "recorded": float(recorded["score"]) if recorded else None,
        "text": _search_text(record),
    }
    if breakdown:
        row.update(breakdown.get("components") or {})
    return row


def episode_table(rows: Sequence[dict], runs: Sequence[str] = ()) -> pd.DataFrame:
    """A pandas table from ``record_row`` rows; ``runs`` orders the run category."""
    frame = pd.DataFrame(list(rows), columns=None if rows else TABLE_COLUMNS + ["scenario", "text"])
    frame["recorded"] = frame["recorded"].astype("float64")
    frame["score"] = frame["score"].astype("float64")
    for col in ("family", "difficulty", "termination", "gate"):
        frame[col] = frame[col].astype("category")
    order = list(dict.fromkeys([*runs, *frame["run"].unique()]))
    frame["run"] = pd.Categorical(frame["run"], categories=order)
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
    if text:  # search only the rows the cheap filters kept
        mask[mask] = frame["text"][mask].str.contains(text, regex=False).to_numpy(dtype=bool)
    return frame[mask]


# ---- compare and overview ----------------------------------------------------------------


def _per_scenario(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.groupby("scenario", observed=True, sort=False).agg(
        family=("family", "first"), difficulty=("difficulty", "first"), score=("score", "mean"),
        episode=("episode", "first"))


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, seed: int = 0) -> Comparison:
    """Pair two runs' tables by scenario (sample scores averaged per scenario) and difference them."""
    pa, pb = _per_scenario(a), _per_scenario(b)
    joined = pa.join(pb[["score", "episode"]], how="inner", lsuffix="_a", rsuffix="_b")
    table = pd.DataFrame({
        "scenario": joined.index.astype(str), "family": joined["family"].astype(str),
        "difficulty": joined["difficulty"].astype(str), "score_a": joined["score_a"].round(4),
        "score_b": joined["score_b"].round(4),
        "diff": (joined["score_a"] - joined["score_b"]).round(4),
        "episode_a": joined["episode_a"], "episode_b": joined["episode_b"]}).reset_index(drop=True)
    diff = paired_difference(joined["score_a"].to_numpy(), joined["score_b"].to_numpy(), seed=seed)
    return Comparison(table=table, difference=diff, only_a=len(pa) - len(table), only_b=len(pb) - len(table))


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


def display_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The columns worth showing, scores to 3 decimals; ``recorded`` only when some row has one."""
    shown = [c for c in TABLE_COLUMNS if c != "recorded" or rows["recorded"].notna().any()]
    return rows[shown].round({"score": 3, "recorded": 3})


def export_csv(rows: pd.DataFrame, directory: str | Path | None = None) -> Path:
    """Write table rows to a fresh CSV file and return its path."""
    out = Path(directory or tempfile.mkdtemp(prefix="clarifylab-")) / "episodes.csv"
    rows.to_csv(out, index=False)
    return out


def largest_gap(comp: Comparison) -> str | None:
    """The shared scenario where the two runs differ most (the first one worth reading)."""
    if comp.table.empty:
        return None
    return str(comp.table.loc[comp.table["diff"].abs().idxmax(), "scenario"])


def comparison_note(comp: Comparison, run_a: str, run_b: str) -> str:
    """The paired difference in one sentence a reader can quote."""
    d = comp.difference
    if d.n == 0:
        return f"`{run_a}` and `{run_b}` share no scenario."
    sign = "higher" if d.lo > 0 else "lower" if d.hi < 0 else "not distinguishable from"
    return (f"On **{d.n}** shared scenarios, `{run_a}` − `{run_b}` = **{d.mean:+.3f}** "
            f"(95% paired bootstrap interval {d.lo:+.3f} to {d.hi:+.3f}): a is {sign} b. "
            f"Scenarios only in a: {comp.only_a}, only in b: {comp.only_b}.")
