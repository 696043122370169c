"""The launched app through gradio_client: the Replays endpoints answer under stable api_names."""

from pathlib import Path

import pytest

from tests.app.harness import free_port, launched
from tests.fixtures.waiting import wait_until

FIXTURE = Path(__file__).parents[1] / "fixtures" / "replay_runs"
ORACLE, GUESS = "fixture-set/oracle", "fixture-set/guess"
FILTERS = dict(families=[], difficulties=[], score_min=0, score_max=1, gate="any", terminations=[], text="")


@pytest.fixture(scope="module")
def client():
    from gradio_client import Client

    import app

    with launched(app.build(FIXTURE)) as url:
        yield Client(url, verbose=False)


def test_named_endpoints(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/filter_episodes", "/show_episode", "/compare", "/compare_episode", "/overview",
            "/upload_log", "/export_csv", "/export_jsonl", "/replays_load"} <= names


def test_filter_and_show(client):
    table, picker, count = client.predict([ORACLE, GUESS], *FILTERS.values(), api_name="/filter_episodes")
    assert "**12** episodes" in count and len(table["data"]) == 12
    table, _, count = client.predict([GUESS], [], ["hard"], 0, 1, "fail", [], "", api_name="/filter_episodes")
    assert [row[0] for row in table["data"]] == ["seed6_meeting_scheduling_hard#0"]
    header, chat, marks, plot, link = client.predict(f"{GUESS}|seed6_meeting_scheduling_hard#0",
                                                     api_name="/show_episode")
    assert "unparseable" in header and "gate ✗" in header
    assert any("No parseable tool call" in str(m["content"]) for m in chat)
    assert plot is not None and "episode=seed6_meeting_scheduling_hard%230" in link


def test_path_traversal_is_refused(client):
    header, chat, _, _, link = client.predict("../../../etc|passwd", api_name="/show_episode")
    assert header.startswith("⚠") and chat == [] and link == ""


def test_compare(client):
    note, diff, _, scenarios, *_ = client.predict(ORACLE, GUESS, api_name="/compare")
    assert "6** shared scenarios" in note and len(diff["data"]) == 6


def test_export_csv(client):
    out = client.predict([ORACLE], *FILTERS.values(), api_name="/export_csv")
    path = out["value"] if isinstance(out, dict) else out
    assert Path(path).read_text().startswith("episode,family")


def test_main_prints_where_it_listens(tmp_path):
    import subprocess
    import sys
    import urllib.request

    port = free_port()
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--replays-dir", str(FIXTURE)],
                            cwd=Path(__file__).parents[2], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        line = proc.stdout.readline()
        while line and "listening" not in line:
            line = proc.stdout.readline()
        assert f"ClarifyLab listening on http://127.0.0.1:{port}" in line

        def page_status():
            try:
                return urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).status
            except OSError as exc:  # not serving yet
                return exc
        wait_until(page_status, lambda status: status == 200, what="the page to be served", timeout_s=60)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("env, argv, words", [
    ({"CLARIFYLAB_SESSION_RUNS": "abc"}, [], "ClarifyLab cannot start: CLARIFYLAB_SESSION_RUNS must be a whole number "
                                              ">= 1, got 'abc'"),
    ({"CLARIFYLAB_MODEL_MEMORY_MB": "2GB"}, [], "CLARIFYLAB_MODEL_MEMORY_MB must be a whole number >= 1, got '2GB'"),
    ({"GRADIO_SERVER_PORT": "x"}, [], "GRADIO_SERVER_PORT must be a whole number from 0 to 65535, got 'x'"),
    ({}, ["--port", "99999"], "argument --port: invalid port value: '99999'"),
])
def test_a_bad_operator_setting_stops_the_start_naming_it(env, argv, words):
    """An operator's typo stops ``python app.py`` at once, in one line that names the setting (not ``int()``'s
    traceback from inside an import, nor a bind error after the tabs were built)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "app.py", *argv], cwd=Path(__file__).parents[2], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})
    assert done.returncode != 0 and words in done.stderr and "Traceback" not in done.stderr


def test_a_space_start_checks_its_packaged_weights_serves_then_loads_the_decisions_default(tmp_path):
    """As a Space starts ``python app.py``: the packaged weights are checked before the tabs are built, the page is
    served, and only then is the Decisions default loaded, in the background, so a cold restart's first Ask is fast."""
    import os
    import subprocess
    import sys

    port = free_port()
    env = {**os.environ, "SPACE_ID": "lab/clarifylab", "CLARIFYLAB_PACKAGES_DIR": str(tmp_path / "packages")}
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--replays-dir", str(FIXTURE)],
                            cwd=Path(__file__).parents[2], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    try:
        lines = []
        while not lines or "loaded ahead" not in lines[-1]:
            line = proc.stdout.readline()
            assert line, f"app.py ended: {lines}"
            lines.append(line)
        said = [next(i for i, l in enumerate(lines) if text in l)
                for text in ("packaged weights: all installed", "ClarifyLab listening on", "loaded ahead")]
        assert said == sorted(said), lines
        assert "Decisions: decision-smollm2-pooled-rlcd loaded ahead of the first Ask in " in lines[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
