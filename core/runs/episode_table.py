"""The episode table: one pandas row per episode, its filters and aggregates.

Pure functions of episode records and tables (no disk access but CSV export), so the viewer,
the benchmark and notebooks slice logs the same way. ``core.runs.replays`` feeds them runs from disk.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

import pandas as pd

from core.clarify.families import RUBRIC_WEIGHTS
from core.clarify.rubrics import V3_WEIGHTS
from core.runs.session_runs import export_folder
from core.stats import bootstrap_mean

TABLE_COLUMNS = ["episode", "family", "difficulty", "score", "gate", "questions", "revealed",
                 "profile", "termination", "recorded", "run"]
"""Columns shown in the episode table (the frame also holds components and search text);
``recorded`` is the score an imported source log recorded, shown only when some row has one."""


COMPONENT_WEIGHTS = {f"{name}Rubric": w for name, w in RUBRIC_WEIGHTS.items()}
"""Published component name -> weight (v1 and v2 share the weights)."""
COMPONENTS = ("FormatCheckRubric", *COMPONENT_WEIGHTS)
V3_COMPONENT_WEIGHTS = dict(V3_WEIGHTS)
"""Rubric v3's components: FieldMatch less the question cost."""
KNOWN_COMPONENTS = (*COMPONENTS, *(c for c in V3_COMPONENT_WEIGHTS if c not in COMPONENTS))
"""Every component a table keeps from an episode's breakdown, under any rubric."""


def rubric_components(frame: pd.DataFrame) -> tuple[tuple[str, ...], dict[str, float]]:
    """The components and weights to chart for a table: v3's when every row is v3, else v1/v2's."""
    if len(frame) and "rubric" in frame.columns and set(frame["rubric"].dropna()) == {"v3"}:
        return ("FormatCheckRubric", *V3_COMPONENT_WEIGHTS), V3_COMPONENT_WEIGHTS
    return COMPONENTS, COMPONENT_WEIGHTS


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


# ---- the episode table -------------------------------------------------------------------

RECORD_KEYS = ("scenario", "sample", "rubric", "turns", "plan_raw", "score", "breakdown", "termination",
               "questions_asked", "fields_revealed", "recorded")
"""Top-level ``Episode`` fields a table row reads (a test checks them against the schema)."""


def record_id(record: dict) -> str:
    """``Episode.id`` computed from a raw record: ``seed{seed}_{family}_{difficulty}#{sample}``."""
    sc = record["scenario"]
    if sc.get("seed") is None and sc.get("source_id"):  # as Scenario.id: the source's own id
        return f"{sc['source_id']}#{record.get('sample', 0)}"
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
        "rubric": record.get("rubric"),
        "recorded": float(recorded["score"]) if recorded else None,
        "text": _search_text(record),
    }
    if breakdown:  # only the known components: a log's own names (``run``, ``score``) must not overwrite columns
        components = breakdown.get("components") or {}
        row.update({name: components[name] for name in KNOWN_COMPONENTS if name in components})
    return row


def episode_table(rows: Sequence[dict], runs: Sequence[str] = ()) -> pd.DataFrame:
    """A pandas table from ``record_row`` rows; ``runs`` orders the run category."""
    frame = pd.DataFrame(list(rows), columns=None if rows else TABLE_COLUMNS + ["scenario", "rubric", "text"])
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


def family_scores(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Mean score per run and family with its scenario-clustered 95% bootstrap interval, and the best episode
    (columns run, family, mean, lo, hi, max, n episodes, scenarios): a family's mean over a few scenarios is read with
    its width, and over one scenario has none (NaN)."""
    grouped = frame.groupby(["run", "family"], observed=True)
    out = grouped["score"].agg(["mean", "max", "count"]).reset_index().rename(columns={"count": "n"})
    out["scenarios"] = grouped["scenario"].nunique().to_numpy()
    intervals = [bootstrap_mean(rows["score"].to_numpy(), rows["scenario"].astype(str).tolist(), seed=seed)
                 for _, rows in grouped]
    out.insert(3, "lo", [iv.lo for iv in intervals])
    out.insert(4, "hi", [iv.hi for iv in intervals])
    return out


def component_means(frame: pd.DataFrame, components: Sequence[str], seed: int = 0) -> pd.DataFrame:
    """Mean of each rubric component per run with its scenario-clustered 95% bootstrap interval (long format:
    run, component, mean, lo, hi, n, scenarios), over every episode, gate-failed ones included, so the gate's own mean is
    the share that passed (``summary.json``'s components are over gate-passed episodes only); episodes without
    that component (still running) are left out."""
    rows = []
    for run, episodes in frame.groupby("run", observed=True):
        for component in (c for c in components if c in frame.columns):
            present = episodes[episodes[component].notna()]
            iv = bootstrap_mean(present[component].to_numpy(), present["scenario"].astype(str).tolist(), seed=seed)
            rows.append({"run": run, "component": component, "mean": iv.mean, "lo": iv.lo, "hi": iv.hi, "n": iv.n,
                         "scenarios": present["scenario"].nunique()})
    return pd.DataFrame(rows, columns=["run", "component", "mean", "lo", "hi", "n", "scenarios"])


def display_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The columns worth showing, scores to 3 decimals; ``recorded`` only when some row has one."""
    shown = [c for c in TABLE_COLUMNS if c != "recorded" or rows["recorded"].notna().any()]
    return rows[shown].round({"score": 3, "recorded": 3})


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""Cell starts a spreadsheet reads as a formula (OWASP's CSV-injection list)."""


def csv_cell(value):
    """A text cell a spreadsheet shows as text: one that starts like a formula gets a leading ``'``."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def export_csv(rows: pd.DataFrame, directory: str | Path | None = None) -> Path:
    """Write table rows to a fresh CSV file (by default in a fresh, bounded export folder) and return its
    path; text from logs (episode ids, run names) that starts like a formula is written with a leading
    ``'`` so it stays text."""
    out = Path(directory or export_folder()) / "episodes.csv"
    text = rows.select_dtypes(exclude="number").columns
    safe = rows.assign(**{c: rows[c].astype(object).map(csv_cell) for c in text})
    safe.to_csv(out, index=False)
    return out
