"""Live sessions' runs on disk: private to the browser session that played them, and bounded.

A live session writes its finished episodes as a run under ``<replays>/sessions/``. Those runs
hold a visitor's own typed answers, so they are never listed (``core.runs.replays`` skips the
folder) and open only for the page whose state names them (``OWNED`` in its runs). The folder is
bounded by count and bytes: after each save the least recently written runs beyond
``CLARIFYLAB_SESSION_RUNS`` (default 200) or ``CLARIFYLAB_SESSION_BYTES`` (default 100 MB) are
deleted, oldest first, so visitors cannot fill the disk. The Replays tab's downloads (CSV and JSONL
exports) are bounded the same way: each export gets a fresh folder under the temporary directory, and
the oldest beyond ``CLARIFYLAB_EXPORTS`` (default 20) or ``CLARIFYLAB_EXPORT_BYTES`` (default 200 MB) go.
"""

import shutil
import tempfile
from pathlib import Path

from core.records import setting

SESSIONS_DIR = "sessions"
"""Sub-folder of the replays directory that holds live sessions' runs."""
OWNED = "session-run"
"""The value a page's runs map one of its own session runs to (its uploads map to store keys)."""
MAX_RUNS = setting("CLARIFYLAB_SESSION_RUNS", 200, least=1)
"""Session runs kept on disk; the oldest beyond this are deleted."""
MAX_BYTES = setting("CLARIFYLAB_SESSION_BYTES", 100 * 2**20, least=1)
"""Bytes of session runs kept on disk (a 6-question episode is about 10 kB, so 100 MB is ~10,000)."""
EXPORTS_DIR = "clarifylab-exports"
"""Sub-folder of the temporary directory that holds the export folders."""
MAX_EXPORTS = setting("CLARIFYLAB_EXPORTS", 20, least=1)
"""Export folders kept: gradio copies a download to its own cache as the handler returns, so only the
newest few are ever read from here."""
MAX_EXPORT_BYTES = setting("CLARIFYLAB_EXPORT_BYTES", 200 * 2**20, least=1)
"""Bytes of export folders kept (the JSONL of every shipped run is the largest export)."""


def is_session_run(name: str) -> bool:
    """Whether a run name lies in the sessions folder (a visitor's private run)."""
    return isinstance(name, str) and (name == SESSIONS_DIR or name.startswith(SESSIONS_DIR + "/"))


def dropped_message(name: str) -> str:
    """What the owner of a deleted session run reads instead of its episodes."""
    return (f"your session run {name!r} was deleted to keep the server's disk bounded (it keeps the "
            f"{MAX_RUNS} most recent session runs, {MAX_BYTES / 2**20:.0f} MB at most); its download "
            "in Live play is the copy to keep")


def _size(folder: Path) -> int:
    """Bytes of the files in ``folder``; 0 for a folder (or file) another call deleted meanwhile."""
    try:
        return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    except OSError:
        return 0


def _mtime(folder: Path) -> int:
    try:
        return folder.stat().st_mtime_ns
    except OSError:  # deleted meanwhile by a concurrent prune: it sorts as the oldest
        return 0


def prune_folders(base: Path, max_count: int, max_bytes: int, keep: Path | None = None) -> list[Path]:
    """Delete the least recently written folders in ``base`` beyond ``max_count`` or ``max_bytes``; returns
    them, oldest first. ``keep`` (the folder just written) is never deleted."""
    if not base.is_dir():
        return []
    folders = [p for p in base.iterdir() if p.is_dir() and not p.is_symlink()]
    folders.sort(key=_mtime, reverse=True)  # newest first
    kept, total, dropped = 0, 0, []
    for folder in folders:
        size = _size(folder)
        if folder == keep or (kept < max_count and total + size <= max_bytes):
            kept, total = kept + 1, total + size
            continue
        shutil.rmtree(folder, ignore_errors=True)
        dropped.append(folder)
    return dropped[::-1]  # oldest first


def prune(replays_dir: str | Path, max_runs: int = MAX_RUNS, max_bytes: int = MAX_BYTES,
          keep: str | None = None) -> list[str]:
    """Delete the oldest session runs beyond ``max_runs`` or ``max_bytes``; returns their names, oldest first.

    ``keep`` (the run just written) is never deleted, so a save always leaves its own run.
    """
    root = Path(replays_dir).resolve()
    dropped = prune_folders(root / SESSIONS_DIR, max_runs, max_bytes, keep=root / keep if keep else None)
    return [f"{SESSIONS_DIR}/{folder.name}" for folder in dropped]


def export_folder() -> Path:
    """A fresh folder for one download, so no visitor's file overwrites another's; the oldest export
    folders beyond ``MAX_EXPORTS`` or ``MAX_EXPORT_BYTES`` are deleted."""
    base = Path(tempfile.gettempdir()) / EXPORTS_DIR
    base.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=base))
    prune_folders(base, MAX_EXPORTS, MAX_EXPORT_BYTES, keep=folder)
    return folder
