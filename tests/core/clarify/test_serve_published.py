"""The served environment speaks the published ClarifyRL protocol shapes, so the published client
programs (its ``client.py``, ``training/train_grpo.py``'s ``ClarifyEnv``, ``scripts/run_eval.py``,
``inference.py``) run against ``python -m core.clarify.serve`` unchanged.

The shape tests drive raw WebSocket messages with the published field sets written out below
(docs/scale_out.md); they need no published files. The last tests run the published programs
themselves, only where a copy of the published repository is found (``CLARIFYRL_SRC``, else
/tmp/clarify-rl); they skip otherwise.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv")

from websockets.sync.client import connect as ws_connect  # noqa: E402

from core.clarify.scenarios import generate_scenario  # noqa: E402
from core.clarify.service import INSTRUCTIONS, own_result  # noqa: E402
from tests.core.clarify.test_serve import ROOT, url  # noqa: E402,F401  (the module's v1 server)

PUBLISHED_RESET = {"type", "request", "task_id", "task_title", "family", "max_steps", "questions_remaining",
                   "instructions"}
"""The published reset observation's ``result`` keys (its ``tool_name`` is "reset", its reward 0.0)."""
PUBLISHED_TASK_INFO = {"request", "task_id", "task_title", "family", "questions_remaining", "instructions"}
PUBLISHED_RESOLUTION = {"type", "score", "breakdown", "expected_profile", "critical_fields", "required_keys",
                        "submitted_plan", "parse_error", "questions_asked", "fields_revealed"}
PUBLISHED_ENDED = {"error": "episode already ended", "episode_done": True}


def _ws(url: str):
    return ws_connect(url.replace("http", "ws") + "/ws", max_size=2**24)


def _send(ws, kind: str, data: dict) -> dict:
    ws.send(json.dumps({"type": kind, "data": data}))
    return json.loads(ws.recv(timeout=30))


def _call(ws, tool: str, **arguments) -> tuple[dict, dict]:
    """(the step's data, the tool result as the published clients extract it: structured_content)."""
    data = _send(ws, "step", {"type": "call_tool", "tool_name": tool, "arguments": arguments})["data"]
    return data, data["observation"]["result"]["structured_content"]


def test_reset_answers_the_published_observation_with_ours_beside_it(url):
    scenario = generate_scenario(10_000, "easy")
    with _ws(url) as ws:
        answer = _send(ws, "reset", {"task_id": "easy", "seed": 10_000})
    assert answer["type"] == "observation"
    data = answer["data"]
    assert data["reward"] == 0.0 and data["done"] is False  # float(reward) works
    obs = data["observation"]
    assert obs["tool_name"] == "reset"
    result = obs["result"]
    assert PUBLISHED_RESET <= set(result) and result["type"] == "task"
    assert (result["request"], result["family"], result["task_id"], result["task_title"]) == (
        scenario.request, scenario.family, "easy", scenario.title)
    assert (result["max_steps"], result["questions_remaining"], result["instructions"]) == (
        scenario.max_steps, scenario.max_questions, INSTRUCTIONS)
    assert obs["scenario_id"] == result["scenario_id"] == scenario.id  # ours, beside the published fields
    assert obs["task_info"]["required_keys"] == list(scenario.required_keys)


def test_tool_results_carry_the_published_fields_beside_ours(url):
    scenario = generate_scenario(10_001, "medium")
    with _ws(url) as ws:
        _send(ws, "reset", {"task_id": "medium", "seed": 10_001})
        _, info = _call(ws, "get_task_info")
        assert PUBLISHED_TASK_INFO <= set(info)
        assert (info["task_id"], info["task_title"], info["required_keys"]) == (
            "medium", scenario.title, list(scenario.required_keys))
        plan = {k: scenario.hidden_profile.get(k, "x") for k in scenario.required_keys}
        data, resolution = _call(ws, "propose_plan", plan=json.dumps(plan))
        assert PUBLISHED_RESOLUTION <= set(resolution) and resolution["type"] == "resolution"
        assert resolution["expected_profile"] == resolution["hidden_profile"] == dict(scenario.hidden_profile)
        assert resolution["submitted_plan"] == resolution["plan"] == plan
        assert data["done"] is True and data["reward"] == resolution["score"] > 0
        data, ended = _call(ws, "ask_question", question="Anything else?")
        assert ended == PUBLISHED_ENDED and data["reward"] == 0.0
    # a remote policy sees exactly ClarifyEnv's results: the published extras come off again
    assert own_result("propose_plan", resolution).keys() == set(resolution) - {"type", "expected_profile",
                                                                                "submitted_plan"}
    assert own_result("ask_question", ended) == {"error": "episode already ended"}


def published_copy() -> Path:
    """The published ClarifyRL repository's files, or skip (they are never part of this repo)."""
    root = Path(os.environ.get("CLARIFYRL_SRC", "/tmp/clarify-rl"))
    if not (root / "scripts" / "run_eval.py").is_file() or not (root / "training" / "train_grpo.py").is_file():
        pytest.skip(f"no copy of the published ClarifyRL programs at {root} (set CLARIFYRL_SRC)")
    return root


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=120)


def test_the_published_run_eval_completes_against_our_server(url, tmp_path, reference_dir):
    src = published_copy()
    out = tmp_path / "eval.json"
    done = _run(["scripts/run_eval.py", "--mode", "policy", "--limit", "6", "--env", url, "--out", str(out),
                 "--scenarios", str(reference_dir / "clarifyrl" / "eval_held_out.json")], src)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = json.loads(out.read_text())["results"]
    assert len(rows) == 6 and not any(r.get("error") for r in rows)
    for row in rows:
        scenario = generate_scenario(row["seed"], row["task_id"])
        assert row["request"] == scenario.request
        assert row["trace"][-1]["tool"] == "propose_plan" and row["trace"][-1]["done"] is True


WRAPPER = """
import random, sys
sys.path.insert(0, "training")
import train_grpo
random.seed(0)
env = train_grpo.ClarifyEnv()
print(env.reset())
env.propose_plan("{}")  # ends the episode, which closes the wrapper's socket
"""


def test_the_published_training_wrapper_builds_its_prompt_from_our_reset(url):
    src = published_copy()
    done = _run(["-c", WRAPPER], src, ENV_BASE_URL=url, MODEL_NAME="unused", HF_TOKEN="unused")
    assert done.returncode == 0, done.stderr[-2000:]
    prompt = done.stdout
    request = prompt.split("USER REQUEST: ", 1)[1].split("\n", 1)[0]
    family = prompt.split("Task family: ", 1)[1].split("\n", 1)[0]
    fields = prompt.split("Required plan fields: ", 1)[1].split("\n", 1)[0]
    assert request and family and fields != "unknown"
    from core.clarify.families import FAMILIES

    assert fields == ", ".join(FAMILIES[family].required)
    assert request in FAMILIES[family].requests


@pytest.fixture(scope="module")
def published_url(tmp_path_factory):
    """The published server itself (``server.app:app`` of the copy), or skip."""
    from tests.core.clarify.test_serve import server_process

    src = published_copy()
    env = {**os.environ, "PYTHONPATH": str(src), "GRADIO_ANALYTICS_ENABLED": "False"}
    with server_process(["-m", "uvicorn", "server.app:app", "--port", "{port}", "--log-level", "warning"],
                        tmp_path_factory.mktemp("published") / "server.log", cwd=src, env=env) as url:
        yield url


@pytest.mark.parametrize("name", ["oracle", "guess"])
def test_scripted_policies_submit_their_plan_to_the_published_server(published_url, name):
    from core.clarify.policies import make_policy
    from core.clarify.remote import connect, is_published_server, play_remote
    from core.runs.eval import episode_rng, play_episode
    from tests.core.clarify.test_serve import PUBLISHED_50

    client = connect(published_url)
    try:
        assert is_published_server(client)
        scenarios = PUBLISHED_50[:10]
        served = [play_remote(make_policy(name), s, client, episode_rng(0, s, 0)) for s in scenarios]
    finally:
        client.close()
    assert served == [play_episode(make_policy(name), s) for s in scenarios]  # rewards and ends checked per call
    assert all(e.termination == "plan" for e in served) and sum(e.score for e in served) > 0
