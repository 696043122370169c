"""Replay runs: find logged runs on disk, load them safely, and slice them as tables.

A *run* is a folder under a replays directory holding ``episodes.jsonl`` (read through
``core.runs.episode_log``) and usually a ``summary.json`` written by ``python -m core.runs.eval``. Run names
are the folder's path relative to that directory (``clarifylab-heldout-v2/oracle``); a name from a
URL or an upload is only ever resolved against the runs that exist, so it cannot reach a file
outside the directory. Regenerate the shipped runs with ``python -m core.runs.replays regenerate``.
"""

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from core.runs.episode_log import EpisodeLogError, dump_episode, parse_line, scan_records, write_episodes
from core.runs.comparison import Comparison, RubricMismatch, compare_tables
from core.runs.session_runs import OWNED, dropped_message, export_folder, is_session_run
from core.runs.transcripts import inert
from core.runs.uploads import PER_SESSION, STORE
from core.runs.episode_table import Filters, episode_table, filter_table, record_row
from core.records import Episode

LOG_NAME = "episodes.jsonl"
SUMMARY_NAME = "summary.json"
SHIPPED_RUNS = Path(__file__).resolve().parents[2] / "replays"
"""The runs this repository ships (what pickers quote as a model's measured score)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*(/[A-Za-z0-9][A-Za-z0-9._+-]*){0,3}$")
"""Run names: up to four path parts of plain characters; no part may start with a dot."""


class RunNotFound(LookupError):
    """A run name that is malformed or names no run under the replays directory."""


VIEW_ERRORS = (RunNotFound, EpisodeLogError, RubricMismatch)
"""What opening a run or an episode can raise; handlers turn these into a message."""


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
    """Every run folder under ``root`` (an ``episodes.jsonl`` inside), sorted by name; live sessions'
    runs are private to their page (``core.runs.session_runs``), so they are never listed."""
    root = Path(root).resolve()
    if not root.is_dir():
        return []
    runs = []
    for log in sorted(root.rglob(LOG_NAME)):
        name = log.parent.relative_to(root).as_posix()
        if not _NAME.match(name) or is_session_run(name) or not log.resolve().is_relative_to(root):
            continue
        summary_path = log.parent / SUMMARY_NAME
        try:
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            summary = {}
        runs.append(_summary_info(name, summary if isinstance(summary, dict) else {}))
    return runs


def resolve_run(root: str | Path, name: str, owned: bool = False) -> Path:
    """The ``episodes.jsonl`` of run ``name``, never a path outside ``root``.

    A live session's run resolves only for its own page (``owned``); for any other caller it reads
    exactly as a run that does not exist.

    Raises:
        RunNotFound: the name is malformed, escapes ``root`` or names no run.
    """
    if not isinstance(name, str) or len(name) > 200 or not _NAME.match(name):
        raise RunNotFound(f"{name!r} is not a run name")
    base = Path(root).resolve()
    log = (base / name / LOG_NAME).resolve()
    if (is_session_run(name) and not owned) or not log.is_relative_to(base) or not log.is_file():
        raise RunNotFound(f"no run named {name!r}")
    return log


@dataclass(frozen=True)
class LoadedRun:
    """A run as the viewer holds it: its table, and each episode's JSON line until opened."""

    name: str
    table: pd.DataFrame
    lines: tuple[str, ...]
    """One JSON line per episode, in table order."""
    where: tuple[str, ...]
    """Each line's location (``file line N``) for error messages."""
    index: dict[str, int]
    """Episode id -> position."""
    problems: tuple[str, ...] = ()
    """Records skipped while reading (uploads read leniently on request)."""
    notes: tuple[str, ...] = ()
    """What reading changed in the kept records (repeated ids renumbered)."""

    def __len__(self) -> int:
        return len(self.lines)

    def episode(self, position: int) -> Episode:
        """The validated episode at ``position`` (EpisodeLogError names its line if malformed)."""
        return parse_line(self.lines[position], self.where[position])


def _bundle(name: str, scanned: Iterable[tuple[str, str, dict]], problems: Sequence[str] = (),
            notes: Sequence[str] = ()) -> LoadedRun:
    rows, lines, where = [], [], []
    for location, text, record in scanned:
        try:
            rows.append(record_row(name, record))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise EpisodeLogError(f"{location}: not an episode record ({type(exc).__name__}: {exc})") from None
        lines.append(text)
        where.append(location)
    index = {row["episode"]: i for i, row in enumerate(rows)}
    return LoadedRun(name, episode_table(rows, [name]), tuple(lines), tuple(where), index, tuple(problems),
                     tuple(notes))


def make_run(name: str, episodes: Sequence[Episode], problems: Sequence[str] = (),
             notes: Sequence[str] = ()) -> LoadedRun:
    """Bundle validated episodes (an upload, a conversion) under a run name."""
    lines = [dump_episode(ep) for ep in episodes]
    return _bundle(name, ((f"{name} episode {i + 1}", text, json.loads(text)) for i, text in enumerate(lines)),
                   problems, notes)


@lru_cache(maxsize=8)  # bounds the shipped runs held in memory (a 10,000-episode run is about 80 MB)
def _load_cached(name: str, path: str, mtime_ns: int, size: int) -> LoadedRun:
    return _bundle(name, scan_records(path))


def load_run(root: str | Path, name: str, owned: bool = False) -> LoadedRun:
    """One run on disk by name: a fast scan builds the table; episodes validate when opened.

    Cached until the file changes. Raises EpisodeLogError naming the line of a broken record.
    """
    log = resolve_run(root, name, owned)
    stat = log.stat()
    return _load_cached(name, str(log), stat.st_mtime_ns, stat.st_size)


UPLOAD_PREFIX = "upload:"


def upload_name(filename: str) -> str:
    """A display name for an uploaded log; never resolved against the disk."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(str(filename)).name)[:60] or "log"
    return UPLOAD_PREFIX + stem


def get_run(root: str | Path, name: str, uploads: dict | None = None) -> LoadedRun:
    """A run by name: an upload or a live-session run of this page, else a shipped run under ``root``.

    ``uploads`` maps a name to a ``LoadedRun``, to its key in ``core.runs.uploads.STORE``, or to
    ``OWNED`` for this page's own live-session runs on disk."""
    if not isinstance(name, str):  # a picker's None, or any JSON value an API caller sends
        raise RunNotFound(f"{name!r} is not a run name")
    if uploads and name in uploads:
        held = uploads[name]
        if held == OWNED:
            try:
                return load_run(root, name, owned=True)
            except RunNotFound:
                raise RunNotFound(dropped_message(name)) from None
        if isinstance(held, str):
            held = STORE.get(held)
            if held is None:
                raise RunNotFound(f"the upload {name!r} was closed to keep the server's memory bounded (a "
                                  f"session keeps its last {PER_SESSION} uploads); upload it again")
        return held
    if name.startswith(UPLOAD_PREFIX):
        raise RunNotFound(f"the upload {name!r} is not in this session (upload it again)")
    return load_run(root, name)


def runs_table(root: str | Path, names: Sequence[str], uploads: dict | None = None) -> pd.DataFrame:
    """The episode table of several runs, concatenated in the given order."""
    tables = [get_run(root, n, uploads).table for n in dict.fromkeys(names)]
    if not tables:
        return episode_table([])
    frame = pd.concat(tables, ignore_index=True)
    for col in ("family", "difficulty", "termination", "gate"):
        frame[col] = frame[col].astype("category")
    frame["run"] = pd.Categorical(frame["run"], categories=list(dict.fromkeys(names)))
    return frame


def known_runs(root: str | Path, names: Sequence[str], uploads: dict | None = None) -> tuple[list[str], list[str]]:
    """Split picked run names into those that exist (in order) and a message for each that does not."""
    known, problems = [], []
    for name in dict.fromkeys(names):
        try:
            if (uploads and name in uploads) or str(name).startswith(UPLOAD_PREFIX):
                get_run(root, name, uploads)
            else:
                resolve_run(root, name)
            known.append(name)
        except RunNotFound as exc:
            problems.append(str(exc))
    return known, problems


def find_episode(root: str | Path, run: str, episode_id: str, uploads: dict | None = None) -> Episode:
    """One episode of a run by its id (``scenario#sample``); RunNotFound names what is missing."""
    loaded = get_run(root, run, uploads)
    if episode_id not in loaded.index:
        raise RunNotFound(f"run {run!r} has no episode {episode_id!r}")
    return loaded.episode(loaded.index[episode_id])


def rows_episodes(root: str | Path, rows: pd.DataFrame, uploads: dict | None = None) -> list[Episode]:
    """The episodes behind table rows (for JSONL export), in row order."""
    return [find_episode(root, str(r), str(e), uploads) for r, e in zip(rows["run"], rows["episode"])]


def export_jsonl(episodes: Sequence[Episode], directory: str | Path | None = None) -> Path:
    """Write episodes to a fresh JSONL log (our format) and return its path (by default in a fresh,
    bounded export folder: ``core.runs.session_runs.export_folder``)."""
    out = Path(directory or export_folder()) / "episodes.jsonl"
    write_episodes(out, episodes)
    return out


# ---- view helpers (one call per UI event) -------------------------------------------------

def run_names(root: str | Path, uploads: dict | None = None) -> list[str]:
    """Shipped run names, then this session's uploads."""
    return [r.name for r in discover_runs(root)] + list(uploads or {})


LANDING_RUN = "clarifylab-heldout-v2/clarify-grpo"
"""The run a page opens on: the README's headline (the best shipped policy on our held-out set), not whichever
name sorts first."""


def landing_run(names: Sequence[str]) -> str | None:
    """The run a page shows before a visitor picks one: :data:`LANDING_RUN` when listed, else the first name."""
    return LANDING_RUN if LANDING_RUN in names else (names[0] if names else None)


def first_episode(root: str | Path, name: str) -> str | None:
    """The id of the first episode the episode table lists for run ``name`` (what a page opens with, so a visitor
    sees a transcript and its scores before picking); None for an empty or unreadable run."""
    try:
        episodes = load_run(root, name).table["episode"]
    except (RunNotFound, EpisodeLogError, KeyError):
        return None
    return str(episodes.iloc[0]) if len(episodes) else None


def companion_run(names: Sequence[str], run: str | None) -> str | None:
    """A default second run to compare with ``run``: the first other run in the same folder
    (same scenario set), else the first other run."""
    others = [n for n in names if n != run]
    if run is None or not others:
        return run
    folder = run.rpartition("/")[0]
    return next((n for n in others if n.rpartition("/")[0] == folder), others[0])


def filtered_rows(root: str | Path, names: Sequence[str], filters: Filters,
                  uploads: dict | None = None) -> pd.DataFrame:
    """The episode table of the named runs, filtered."""
    return filter_table(runs_table(root, names, uploads), filters)


def upload_note(run: LoadedRun) -> str:
    """A one-paragraph markdown report of an upload: what was kept and what was skipped."""
    note = f"✓ Opened **{inert(run.name)}**: {len(run)} episodes." + "".join(f" {inert(n)}." for n in run.notes)
    if run.problems:
        shown = "\n".join(f"- {inert(p)}" for p in run.problems[:10])
        more = f"\n- … and {len(run.problems) - 10} more" if len(run.problems) > 10 else ""
        note += f" Skipped {len(run.problems)} bad record(s), as asked:\n{shown}{more}"
    return note


def compare_named(root: str | Path, run_a: str, run_b: str, uploads: dict | None = None) -> Comparison:
    """``core.runs.comparison.compare_tables`` on two runs given by name (the CLI's own comparison)."""
    if not run_a or not run_b:
        raise RunNotFound("pick two runs to compare")
    return compare_tables(get_run(root, run_a, uploads).table, get_run(root, run_b, uploads).table,
                          name_a=run_a, name_b=run_b)


def compared_episodes(root: str | Path, run_a: str, run_b: str, scenario: str,
                      uploads: dict | None = None) -> tuple[Episode, Episode]:
    """The first episode of ``scenario`` in each of two runs (for side-by-side reading)."""
    if not isinstance(scenario, str):  # pandas compares a list or a dict element by element, or not at all
        raise RunNotFound(f"{scenario!r} is not a scenario id")
    pair = []
    for run in (run_a, run_b):
        rows = get_run(root, run, uploads).table
        match = rows.loc[rows["scenario"] == scenario, "episode"]
        if match.empty:
            raise RunNotFound(f"run {run!r} has no episode of scenario {scenario!r}")
        pair.append(find_episode(root, run, str(match.iloc[0]), uploads))
    return pair[0], pair[1]


def load_upload(path: str | Path, *, keep_valid: bool = False) -> LoadedRun:
    """An uploaded log (any format ``core.runs.importer`` reads) as a session run.

    Raises:
        EpisodeLogError: naming the problem (and line) when nothing usable can be read.
    """
    from core.runs.importer import read_log  # the importer pulls in the environment; only uploads need it

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
    return make_run(upload_name(path.name), report.episodes, report.problems, report.notes)


# ---- the shipped runs ---------------------------------------------------------------------

REPLAYED_POLICIES = ("oracle", "ask-required", "guess", "random")
"""The scripted policies whose runs ship under ``replays/`` (the shipped checkpoints are
``core.models.entries.SHIPPED_POLICIES``)."""
SHIPPED_SETS = (
    ("clarifylab-heldout-v2", ["--scenarios", "clarifylab-heldout", "--rubric", "v2"]),
    ("clarifyrl-heldout50-v1", ["--scenarios", "clarifyrl-heldout", "--limit", "50", "--rubric", "v1"]),
)
"""Folder -> ``core.runs.eval`` arguments: our held-out set under v2, and the published table's slice
(first 50 published held-out scenarios) under v1, the rubric that table used."""


def regenerate(root: str | Path = "replays") -> list[str]:
    """Re-run ``python -m core.runs.eval`` for every shipped run into ``root``; returns the run names."""
    from core.runs import eval as evaluation  # only regeneration needs the runner

    names = []
    for folder, spec in SHIPPED_SETS:
        for policy in REPLAYED_POLICIES:
            out = Path(root) / folder / policy
            argv = ["--policy", policy, *spec, "--seed", "0", "--out", out.as_posix(), "--no-progress"]
            if evaluation.main(argv) != 0:
                raise RuntimeError(f"core.runs.eval failed for {folder}/{policy}")
            names.append(f"{folder}/{policy}")
    return names


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m core.runs.replays",
                                     description="Shipped replay runs (see docs/app.md, Replays).")
    sub = parser.add_subparsers(dest="command", required=True)
    regen = sub.add_parser("regenerate", help="re-run core.runs.eval for every shipped run")
    regen.add_argument("--root", default="replays", help="replays directory to write into")
    sub.add_parser("list", help="list the runs under replays/ with their mean scores").add_argument(
        "--root", default="replays")
    args = parser.parse_args(argv)
    if args.command == "regenerate":
        print(f"regenerated {len(regenerate(args.root))} runs under {args.root}/")
        return 0
    for run in discover_runs(args.root):
        ci = f" [{run.ci[0]:.4f}, {run.ci[1]:.4f}]" if run.ci else ""
        print(f"{run.name:40s} {run.rubric} n={run.n} avg={run.avg_score}{ci}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
