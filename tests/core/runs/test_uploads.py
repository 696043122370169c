"""The upload store: uploads per session and bytes overall stay under their bounds."""

from pathlib import Path

from core.runs.replays import RunNotFound, get_run, load_run
from core.runs.uploads import UploadStore, run_bytes, session_of

import pytest

FIXTURES = Path(__file__).parents[2] / "fixtures" / "replay_runs"


@pytest.fixture(scope="module")
def run():
    return load_run(FIXTURES, "fixture-set/guess")


def test_a_session_keeps_its_newest_uploads(run):
    store = UploadStore(per_session=2, total_bytes=10**9)
    keys = [store.put("s1", run) for _ in range(3)]
    other = store.put("s2", run)
    assert [store.holds(k) for k in keys] == [False, True, True] and store.holds(other)


def test_all_sessions_together_stay_under_the_byte_budget(run):
    size = run_bytes(run)
    store = UploadStore(per_session=10, total_bytes=3 * size)
    keys = [store.put(f"s{i}", run) for i in range(10)]
    assert len(store) == 3 and store.bytes() <= 3 * size
    assert [store.holds(k) for k in keys] == [False] * 7 + [True] * 3  # least recently used go first


def test_a_dropped_or_released_upload_reads_as_upload_again(run, monkeypatch):
    from core.runs import replays

    store = UploadStore()
    monkeypatch.setattr(replays, "STORE", store)
    key = store.put(session_of([]), run)
    assert get_run(FIXTURES, "upload:a", {"upload:a": key}) is run
    assert session_of([key]) == key.split(":")[0]
    store.release([key])
    with pytest.raises(RunNotFound, match="upload it again"):
        get_run(FIXTURES, "upload:a", {"upload:a": key})
