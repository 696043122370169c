"""Live sessions' runs on disk: private to the browser session that played them, and bounded.

A live session writes its finished episodes as a run under ``<replays>/sessions/``. Those runs
hold a visitor's own typed answers, so they are never listed (``core.runs.replays`` skips the
folder) and open only for the page whose state names them (``OWNED`` in its runs). The folder is
bounded by count and bytes: after each save the least recently written runs beyond
``CLARIFYLAB_SESSION_RUNS`` (default 200) or ``CLARIFYLAB_SESSION_BYTES`` (default 100 MB) are
deleted, oldest first, so visitors cannot fill the disk.
"""

import os
import shutil
from pathlib import Path

SESSIONS_DIR = "sessions"
"""Sub-folder of the replays directory that holds live sessions' runs."""
OWNED = "session-run"
"""The value a page's runs map one of its own session runs to (its uploads map to store keys)."""
MAX_RUNS = int(os.environ.get("CLARIFYLAB_SESSION_RUNS", 200))
"""Session runs kept on disk; the oldest beyond this are deleted."""
MAX_BYTES = int(os.environ.get("CLARIFYLAB_SESSION_BYTES", 100 * 2**20))
"""Bytes of session runs kept on disk (a 6-question episode is about 10 kB, so 100 MB is ~10,000)."""


def is_session_run(name: str) -> bool:
    """Whether a run name lies in the sessions folder (a visitor's private run)."""
    return isinstance(name, str) and (name == SESSIONS_DIR or name.startswith(SESSIONS_DIR + "/"))


def dropped_message(name: str) -> str:
    """What the owner of a deleted session run reads instead of its episodes."""
    return (f"your session run {name!r} was deleted to keep the server's disk bounded (it keeps the "
            f"{MAX_RUNS} most recent session runs, {MAX_BYTES / 2**20:.0f} MB at most); its download "
            "in Live play is the copy to keep")


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())


def prune(replays_dir: str | Path, max_runs: int = MAX_RUNS, max_bytes: int = MAX_BYTES,
          keep: str | None = None) -> list[str]:
    """Delete the oldest session runs beyond ``max_runs`` or ``max_bytes``; returns their names, oldest first.

    ``keep`` (the run just written) is never deleted, so a save always leaves its own run.
    """
    base = Path(replays_dir).resolve() / SESSIONS_DIR
    if not base.is_dir():
        return []
    runs = [p for p in base.iterdir() if p.is_dir() and not p.is_symlink()]
    runs.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)  # newest first
    kept, total, dropped = 0, 0, []
    for run in runs:
        size = _size(run)
        name = f"{SESSIONS_DIR}/{run.name}"
        if name == keep or (kept < max_runs and total + size <= max_bytes):
            kept, total = kept + 1, total + size
            continue
        shutil.rmtree(run, ignore_errors=True)
        dropped.append(name)
    return dropped[::-1]  # oldest first
