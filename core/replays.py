"""Replay runs: find logged runs on disk, load them safely, and slice them as tables.

A *run* is a folder under a replays directory holding ``episodes.jsonl`` (read through
``core.episode_log``) and usually a ``summary.json`` written by ``python -m core.eval``. Run names
are the folder's path relative to that directory (``clarifylab-heldout-v2/oracle``); a name from a
URL or an upload is only ever resolved against the runs that exist, so it cannot reach a file
outside the directory. Regenerate the shipped runs with ``python -m core.replays regenerate``.
"""

import json
import re
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal, Sequence

import pandas as pd

from core.families import RUBRIC_WEIGHTS
from core.episode_log import read_episodes, write_episodes
from core.records import Episode
from core.stats import Interval, bootstrap_mean, paired_difference

LOG_NAME = "episodes.jsonl"
SUMMARY_NAME = "summary.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*(/[A-Za-z0-9][A-Za-z0-9._+-]*){0,3}$")
"""Run names: up to four path parts of plain characters; no part may start with a dot."""

TABLE_COLUMNS = ["run", "episode", "scenario", "family", "difficulty", "score", "gate",
                 "questions", "revealed", "profile", "termination", "recorded"]
"""Columns shown in the episode table (the frame also holds components and search text);
``recorded`` is the score an imported source log recorded, shown only when some row has one."""


class RunNotFound(LookupError):
    """A run name that is malformed or names no run under the replays directory."""


@dataclass(frozen=True)
class RunInfo:
    """One run as listed in the picker: who played, under which rubric, how well."""

    name: str
    policy: str
    rubric: str
    scenarios: str
    """The scenario spec the run was evaluated on (e.g. ``clarifyrl-heldout:50``)."""
    n: int | None
    avg_score: float | None
    ci: tuple[float, float] | None
    """95% bootstrap interval of the mean score, when the summary has one."""
    completion_rate: float | None
    command: str = ""


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


# ---- discovery and safe resolution -------------------------------------------------------


def _summary_info(name: str, summary: dict) -> RunInfo:
    ci = summary.get("avg_score_ci")
    if isinstance(ci, dict):
        ci = (ci.get("lo"), ci.get("hi"))
    ci = tuple(float(x) for x in ci) if ci and len(ci) == 2 and None not in ci else None
    avg = summary.get("avg_score")
    comp = summary.get("completion_rate")
    return RunInfo(
        name=name,
        policy=str(summary.get("policy", "?")),
        rubric=str(summary.get("rubric", "?")),
        scenarios=str(summary.get("scenarios", "")),
        n=summary.get("n"),
        avg_score=None if avg is None else float(avg),
        ci=ci,
        completion_rate=None if comp is None else float(comp),
        command=str(summary.get("command", "")),
    )


def discover_runs(root: str | Path) -> list[RunInfo]:
    """Every run folder under ``root`` (an ``episodes.jsonl`` inside), sorted by name."""
    root = Path(root).resolve()
    if not root.is_dir():
        return []
    runs = []
    for log in sorted(root.rglob(LOG_NAME)):
        name = log.parent.relative_to(root).as_posix()
        if not _NAME.match(name) or not log.resolve().is_relative_to(root):
            continue
        summary_path = log.parent / SUMMARY_NAME
        try:
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            summary = {}
        runs.append(_summary_info(name, summary if isinstance(summary, dict) else {}))
    return runs


def resolve_run(root: str | Path, name: str) -> Path:
    """The ``episodes.jsonl`` of run ``name``, never a path outside ``root``.

    Raises:
        RunNotFound: the name is malformed, escapes ``root`` or names no run.
    """
    if not isinstance(name, str) or len(name) > 200 or not _NAME.match(name):
        raise RunNotFound(f"{name!r} is not a run name")
    base = Path(root).resolve()
    log = (base / name / LOG_NAME).resolve()
    if not log.is_relative_to(base) or not log.is_file():
        raise RunNotFound(f"no run named {name!r}")
    return log


@dataclass(frozen=True)
class LoadedRun:
    """A run's episodes with their table and an id index (shared, read-only)."""

    name: str
    episodes: tuple[Episode, ...]
    table: pd.DataFrame
    index: dict[str, int]
    """Episode id -> position in ``episodes``."""
    problems: tuple[str, ...] = ()
    """Lines skipped while reading (uploads read leniently on request)."""


def make_run(name: str, episodes: Sequence[Episode], problems: Sequence[str] = ()) -> LoadedRun:
    """Bundle episodes under a run name with their table and id index."""
    episodes = tuple(episodes)
    return LoadedRun(name, episodes, episode_table({name: episodes}),
                     {ep.id: i for i, ep in enumerate(episodes)}, tuple(problems))


@lru_cache(maxsize=32)
def _load_cached(name: str, path: str, mtime_ns: int, size: int) -> LoadedRun:
    return make_run(name, read_episodes(path).episodes)


def load_run(root: str | Path, name: str) -> LoadedRun:
    """One shipped run by name (strict read; cached until the file changes)."""
    log = resolve_run(root, name)
    stat = log.stat()
    return _load_cached(name, str(log), stat.st_mtime_ns, stat.st_size)


UPLOAD_PREFIX = "upload:"


def upload_name(filename: str) -> str:
    """A display name for an uploaded log; never resolved against the disk."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(str(filename)).name)[:60] or "log"
    return UPLOAD_PREFIX + stem


def get_run(root: str | Path, name: str, uploads: dict[str, LoadedRun] | None = None) -> LoadedRun:
    """A run by name: an upload of this session, else a shipped run under ``root``."""
    if uploads and name in uploads:
        return uploads[name]
    if name.startswith(UPLOAD_PREFIX):
        raise RunNotFound(f"the upload {name!r} is not in this session (upload it again)")
    return load_run(root, name)


def runs_table(root: str | Path, names: Sequence[str], uploads: dict | None = None) -> pd.DataFrame:
    """The episode table of several runs, concatenated in the given order."""
    tables = [get_run(root, n, uploads).table for n in dict.fromkeys(names)]
    if not tables:
        return episode_table({})
    frame = pd.concat(tables, ignore_index=True)
    for col in ("family", "difficulty", "termination", "gate"):
        frame[col] = frame[col].astype("category")
    frame["run"] = pd.Categorical(frame["run"], categories=list(dict.fromkeys(names)))
    return frame


def find_episode(root: str | Path, run: str, episode_id: str, uploads: dict | None = None) -> Episode:
    """One episode of a run by its id (``scenario#sample``); RunNotFound names what is missing."""
    loaded = get_run(root, run, uploads)
    if episode_id not in loaded.index:
        raise RunNotFound(f"run {run!r} has no episode {episode_id!r}")
    return loaded.episodes[loaded.index[episode_id]]


def rows_episodes(root: str | Path, rows: pd.DataFrame, uploads: dict | None = None) -> list[Episode]:
    """The episodes behind table rows (for JSONL export), in row order."""
    return [find_episode(root, str(r), str(e), uploads) for r, e in zip(rows["run"], rows["episode"])]


def export_csv(rows: pd.DataFrame, directory: str | Path | None = None) -> Path:
    """Write the shown columns of table rows to a fresh CSV file and return its path."""
    out = Path(directory or tempfile.mkdtemp(prefix="clarifylab-")) / "episodes.csv"
    rows[[c for c in rows.columns if c != "text"]].to_csv(out, index=False)
    return out


def export_jsonl(episodes: Sequence[Episode], directory: str | Path | None = None) -> Path:
    """Write episodes to a fresh JSONL log (our format) and return its path."""
    out = Path(directory or tempfile.mkdtemp(prefix="clarifylab-")) / "episodes.jsonl"
    write_episodes(out, episodes)
    return out


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
        "score": round(episode.score, 4),
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
    for col in ("family", "difficulty", "termination", "gate", "run"):
        frame[col] = frame[col].astype("category")
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


# ---- view helpers (one call per UI event) -------------------------------------------------

COMPONENT_WEIGHTS = {f"{name}Rubric": w for name, w in RUBRIC_WEIGHTS.items()}
"""Published component name -> weight (v1 and v2 share the weights)."""
COMPONENTS = ("FormatCheckRubric", *COMPONENT_WEIGHTS)


def run_names(root: str | Path, uploads: dict | None = None) -> list[str]:
    """Shipped run names, then this session's uploads."""
    return [r.name for r in discover_runs(root)] + list(uploads or {})


def filtered_rows(root: str | Path, names: Sequence[str], filters: Filters,
                  uploads: dict | None = None) -> pd.DataFrame:
    """The episode table of the named runs, filtered."""
    return filter_table(runs_table(root, names, uploads), filters)


def display_columns(rows: pd.DataFrame) -> list[str]:
    """Table columns worth showing: ``recorded`` only when some row has a recorded score."""
    return [c for c in TABLE_COLUMNS if c != "recorded" or rows["recorded"].notna().any()]


def upload_note(run: LoadedRun) -> str:
    """A one-paragraph markdown report of an upload: what was kept and what was skipped."""
    note = f"✅ Opened **{run.name}**: {len(run.episodes)} episodes."
    if run.problems:
        shown = "\n".join(f"- {p}" for p in run.problems[:10])
        more = f"\n- … and {len(run.problems) - 10} more" if len(run.problems) > 10 else ""
        note += f" Skipped {len(run.problems)} bad record(s), as asked:\n{shown}{more}"
    return note


def compare_named(root: str | Path, run_a: str, run_b: str, uploads: dict | None = None) -> Comparison:
    """``compare_runs`` on two runs given by name."""
    if not run_a or not run_b:
        raise RunNotFound("pick two runs to compare")
    return compare_runs(get_run(root, run_a, uploads).episodes, get_run(root, run_b, uploads).episodes)


def comparison_note(comp: Comparison, run_a: str, run_b: str) -> str:
    """The paired difference in one sentence a reader can quote."""
    d = comp.difference
    if d.n == 0:
        return f"`{run_a}` and `{run_b}` share no scenario."
    sign = "higher" if d.lo > 0 else "lower" if d.hi < 0 else "not distinguishable from"
    return (f"On **{d.n}** shared scenarios, `{run_a}` − `{run_b}` = **{d.mean:+.3f}** "
            f"(95% paired bootstrap interval {d.lo:+.3f} to {d.hi:+.3f}): a is {sign} b. "
            f"Scenarios only in a: {comp.only_a}, only in b: {comp.only_b}.")
