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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import pandas as pd

from core.episode_log import EpisodeLogError, read_episodes, write_episodes
from core.episode_table import Comparison, Filters, compare_runs, episode_table, filter_table
from core.records import Episode

LOG_NAME = "episodes.jsonl"
SUMMARY_NAME = "summary.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*(/[A-Za-z0-9][A-Za-z0-9._+-]*){0,3}$")
"""Run names: up to four path parts of plain characters; no part may start with a dot."""


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


def export_jsonl(episodes: Sequence[Episode], directory: str | Path | None = None) -> Path:
    """Write episodes to a fresh JSONL log (our format) and return its path."""
    out = Path(directory or tempfile.mkdtemp(prefix="clarifylab-")) / "episodes.jsonl"
    write_episodes(out, episodes)
    return out


# ---- view helpers (one call per UI event) -------------------------------------------------

def run_names(root: str | Path, uploads: dict | None = None) -> list[str]:
    """Shipped run names, then this session's uploads."""
    return [r.name for r in discover_runs(root)] + list(uploads or {})


def filtered_rows(root: str | Path, names: Sequence[str], filters: Filters,
                  uploads: dict | None = None) -> pd.DataFrame:
    """The episode table of the named runs, filtered."""
    return filter_table(runs_table(root, names, uploads), filters)


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


def load_upload(path: str | Path, *, keep_valid: bool = False) -> LoadedRun:
    """An uploaded log (any format ``core.episodes`` reads) as a session run.

    Raises:
        EpisodeLogError: naming the problem (and line) when nothing usable can be read.
    """
    from core.episodes import read_log  # the importer pulls in the environment; only uploads need it

    path = Path(path)
    try:
        _, report = read_log(path, keep_valid=keep_valid)
    except EpisodeLogError as exc:
        per_record = re.search(r" (line|record) \d+", str(exc)) is not None
        hint = " · tick “keep valid episodes” to skip bad records" if per_record and not keep_valid else ""
        raise EpisodeLogError(f"{exc}{hint}") from None
    if not report.episodes:
        first = report.problems[0] if report.problems else "no records"
        raise EpisodeLogError(f"{path.name}: no valid episode ({len(report.problems)} bad: {first})")
    return make_run(upload_name(path.name), report.episodes, report.problems)
