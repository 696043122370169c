"""Live sessions' runs on disk: which names are private, and the count and byte bounds."""

import os
import shutil

import pytest

from core.runs import session_runs


@pytest.mark.parametrize("name, private", [
    ("sessions/live-0123456789ab-v1", True),   # a live session's run
    ("sessions", True),                        # the folder itself
    ("sessionsx/oracle", False),               # only the folder, not a prefix of a name
    ("clarifylab-heldout-v2/oracle", False),   # a shipped run
])
def test_which_runs_are_private(name, private):
    assert session_runs.is_session_run(name) is private


def _runs(root, sizes):
    """Session runs of the given byte sizes, oldest first (distinct modification times)."""
    names = []
    for i, size in enumerate(sizes):
        folder = root / "sessions" / f"live-{i:012x}-v1"
        folder.mkdir(parents=True)
        (folder / "episodes.jsonl").write_bytes(b"x" * size)
        os.utime(folder, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
        names.append(f"sessions/{folder.name}")
    return names


def test_the_oldest_runs_beyond_the_count_are_deleted(tmp_path):
    names = _runs(tmp_path, [10] * 5)
    assert session_runs.prune(tmp_path, max_runs=3, max_bytes=10**6) == names[:2]
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == [n.split("/")[1] for n in names[2:]]


def test_the_oldest_runs_beyond_the_bytes_are_deleted(tmp_path):
    names = _runs(tmp_path, [400, 400, 400])
    assert session_runs.prune(tmp_path, max_runs=100, max_bytes=1000) == names[:1]


def test_the_run_just_written_is_kept_whatever_its_size(tmp_path):
    names = _runs(tmp_path, [10, 5000])
    assert session_runs.prune(tmp_path, max_runs=1, max_bytes=100, keep=names[1]) == names[:1]
    assert session_runs.prune(tmp_path / "nothing-here") == []



def test_a_folder_deleted_meanwhile_by_another_prune_is_skipped(tmp_path, monkeypatch):
    names = _runs(tmp_path, [10] * 3)
    gone = tmp_path / names[0]
    real_is_dir = type(gone).is_dir

    def racing_is_dir(folder):  # a concurrent export's prune deletes the oldest run just after this check
        found = real_is_dir(folder)
        if folder.name == gone.name:
            shutil.rmtree(gone, ignore_errors=True)
        return found

    monkeypatch.setattr(type(gone), "is_dir", racing_is_dir)
    assert session_runs.prune(tmp_path, max_runs=1, max_bytes=10**6) == names[:2]
