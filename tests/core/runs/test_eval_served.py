"""A chat model's greedy run with and without ``--env-url`` writes the same run directory: every
episode record field by field (``raw`` and ``parse_error`` included) and the summary but for the
command line. The shipped tiny policy plays three published scenarios in process and against
``python -m core.clarify.serve``; its 20-token limit cuts some turns, so runs hold parse errors
(which end an episode locally, the wire carrying only calls) as well as plans."""

import json
from pathlib import Path

import pytest

pytest.importorskip("openenv.core.mcp_client")

from core.clarify.environment import render_call  # noqa: E402
from core.runs.eval import main, read_run  # noqa: E402
from tests.core.clarify.test_serve import server_process  # noqa: E402

POLICY = "model:checkpoints/clarify-grpo"
RUN = ["--policy", POLICY, "--scenarios", "clarifyrl-heldout", "--limit", "3", "--temperature", "0",
       "--max-new-tokens", "20", "--rubric", "v1", "--no-progress"]


def first_difference(a, b, path: str = "") -> str | None:
    """Where two JSON values first differ, as ``path: a != b``; None when equal (key order included)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{path or '.'} keys: {list(a)} != {list(b)}"
        return next((d for k in a if (d := first_difference(a[k], b[k], f"{path}.{k}")) is not None), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} length: {len(a)} != {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := first_difference(x, y, f"{path}[{i}]"))), None)
    if type(a) is not type(b) or a != b:
        return f"{path}: {a!r:.200} != {b!r:.200}"
    return None


def test_first_difference_names_the_field():
    a = {"turns": [{"raw": "x", "parse_error": None}], "score": 0.5}
    assert first_difference(a, json.loads(json.dumps(a))) is None
    assert first_difference(a, {**a, "turns": [{"raw": "x", "parse_error": "cut"}]}) == ".turns[0].parse_error: None != 'cut'"
    assert first_difference(a, {"score": 0.5, "turns": a["turns"]}).startswith(". keys:")
    assert first_difference({"n": 1}, {"n": 1.0}) == ".n: 1 != 1.0"


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def served_url(tmp_path_factory):
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with server_process(["-m", "core.clarify.serve", "--rubric", "v1", "--port", "{port}"], log) as url:
        yield url
    assert log.read_text().splitlines()[1:] == []  # its banner only: no tracebacks


def test_a_greedy_chat_model_run_is_the_same_served(served_url, tmp_path):
    assert main([*RUN, "--out", str(tmp_path / "local")]) == 0
    assert main([*RUN, "--env-url", served_url, "--out", str(tmp_path / "served")]) == 0
    local, served = records(tmp_path / "local"), records(tmp_path / "served")
    for k, (mine, theirs) in enumerate(zip(local, served)):
        difference = first_difference(mine, theirs, f"episode {k}")
        assert difference is None, f"in process != served at {difference}"
    assert len(local) == len(served) == 3
    # the runs hold what could differ: model text (not the server's rendered call), parse errors, plans
    turns = [t for e in read_run(tmp_path / "served") for t in e.turns]
    assert all(t.call is None or t.raw != render_call(t.call) for t in turns)
    assert any(t.parse_error for t in turns) and {e["termination"] for e in served} == {"plan", "unparseable"}
    summaries = [json.loads((tmp_path / run / "summary.json").read_text()) for run in ("local", "served")]
    commands = [s.pop("command") for s in summaries]  # the only field that may differ: it names --env-url
    assert first_difference(*summaries) is None and "--env-url" in commands[1] and "--env-url" not in commands[0]
