"""The test-waiting helpers: the deadline scale is checked, and a wait that runs out says what it saw."""

import threading

import pytest

from tests.fixtures import waiting


@pytest.mark.parametrize("raw, scale", [("1", 1.0), ("2.5", 2.5), ("0.5", 0.5)])
def test_the_scale_reads_a_positive_number(raw, scale):
    assert waiting.wait_scale(raw) == scale


@pytest.mark.parametrize("raw, message", [
    ("fast", "must be a number"),   # not a number
    ("0", "positive"),              # would make every wait fail at once
    ("-2", "positive"),
    ("inf", "positive"),            # would make a failing wait hang forever
])
def test_the_scale_refuses_what_is_not_a_positive_number(raw, message):
    with pytest.raises(ValueError, match=message):
        waiting.wait_scale(raw)


def test_wait_until_returns_the_value_that_satisfied_it():
    seen = iter(range(100))
    assert waiting.wait_until(lambda: next(seen), lambda n: n >= 3, what="three", poll_s=0) == 3


def test_a_wait_that_runs_out_names_what_it_waited_for_and_last_saw(monkeypatch):
    monkeypatch.setattr(waiting, "WAIT_SCALE", 1.0)
    with pytest.raises(pytest.fail.Exception, match=r"waited 0.1 s for the answer; last saw 'not yet'"):
        waiting.wait_until(lambda: "not yet", lambda v: v == "done", what="the answer", timeout_s=0.1)


def test_waiting_for_threads_joins_them_and_fails_on_one_that_keeps_running():
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name="test-worker", daemon=True)
    worker.start()
    with pytest.raises(pytest.fail.Exception, match="'test-worker' thread to end"):
        waiting.wait_for_threads_to_end("test-worker", timeout_s=0.05)
    release.set()
    waiting.wait_for_threads_to_end("test-worker")
    assert not worker.is_alive()
