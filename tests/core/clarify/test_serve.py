"""The served environment, driven by openenv-core's own MCPToolClient over WebSocket on 127.0.0.1.

One server runs `python -m core.clarify.serve` in a subprocess for the module; a second, small one
(2 sessions, 4 KiB messages, rubric v2) runs in a thread for the limit tests. Both stop after.
"""

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

pytest.importorskip("openenv.core.mcp_client")

from core.clarify.agent import TOOL_SCHEMAS  # noqa: E402
from core.clarify.environment import ENDED  # noqa: E402
from core.clarify.policies import make_policy  # noqa: E402
from core.clarify.remote import RemoteEnv, client_class, connect, play_remote, served_episode  # noqa: E402
from core.clarify.scenarios import generate_scenario, load_scenarios  # noqa: E402
from core.clarify.serve import SESSION_CLOSED, create_service_app, server_config, service_classes  # noqa: E402
from core.clarify.service import NO_EPISODE  # noqa: E402
from core.records import Episode  # noqa: E402
from core.runs.eval import episode_rng, play_episode  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
PUBLISHED_50 = load_scenarios("clarifyrl-heldout", 50)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen | None = None, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"no server at {url}")


@contextmanager
def server_process(command: list[str], log_path: Path, cwd: Path = ROOT, env: dict | None = None):
    """``python COMMAND`` serving on a free port (``{port}`` in the command), logging to a file (a
    pipe nobody reads would fill up); yields its URL, stops it after."""
    port = free_port()
    with log_path.open("w") as log:
        proc = subprocess.Popen([sys.executable, *(a.format(port=port) for a in command)], cwd=cwd, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_healthy(f"http://127.0.0.1:{port}", proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with server_process(["-m", "core.clarify.serve", "--rubric", "v1", "--port", "{port}", "--max-sessions", "40"],
                        log) as served_url:
        yield served_url
    # the server logs nothing but its banner: no tracebacks, no warnings
    assert log.read_text().splitlines()[1:] == []


@pytest.fixture(scope="module")
def small_url():
    port = free_port()
    app = create_service_app("v2", max_sessions=2)
    import uvicorn

    server = uvicorn.Server(server_config(app, "127.0.0.1", port, max_message_bytes=4096))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_healthy(f"http://127.0.0.1:{port}")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture()
def client(url):
    c = connect(url)
    yield c
    c.close()


def test_list_tools_are_our_tool_schemas(client):
    tools = client.list_tools()
    assert [(t.name, t.description, t.input_schema) for t in tools] == [
        (s["function"]["name"], s["function"]["description"], s["function"]["parameters"]) for s in TOOL_SCHEMAS]


@pytest.mark.parametrize("name", ["oracle", "guess"])
def test_scripted_policies_reproduce_in_process_episodes_on_the_published_50(client, name):
    policy = make_policy(name)
    served = [play_remote(policy, s, client, episode_rng(0, s, 0)) for s in PUBLISHED_50]
    local = [play_episode(policy, s) for s in PUBLISHED_50]
    assert [e.score for e in served] == [e.score for e in local]  # exactly, not approximately
    assert served == local  # every turn, result, reward, breakdown and termination


def test_call_tool_results_rewards_and_termination(client):
    client.reset(task_id="easy", seed=3)
    scenario = generate_scenario(3, "easy")
    info = client.call_tool("get_task_info")
    assert info["request"] == scenario.request and info["questions_remaining"] == 6
    # bad calls get the environment's own error result, cost a step and end nothing
    assert client.call_tool("nope", x=1) == {"error": "unknown tool 'nope'; the tools are get_task_info, ask_question, propose_plan"}
    assert "missing argument 'question'" in client.call_tool("ask_question")["error"]
    assert "question must be a string" in client.call_tool("ask_question", question=[1])["error"]
    from openenv.core.env_server.mcp_types import CallToolAction

    step = client.step(CallToolAction(tool_name="propose_plan", arguments={"plan": "[1]"}))
    assert step.done and step.reward == 0.0
    assert step.observation.result["data"]["parse_error"].startswith("plan must be a JSON object")
    assert client.call_tool("get_task_info") == {"error": ENDED, "episode_done": True}  # the published after-end reply
    episode = served_episode(client)
    assert episode.termination == "plan" and episode.scenario == scenario and len(episode.turns) == 5


def test_bad_reset_is_a_clear_error_and_the_session_survives(client):
    with pytest.raises(RuntimeError, match="unknown task_id 'medium-ish'"):
        client.reset(task_id="medium-ish")
    with pytest.raises(RuntimeError, match="unexpected \\['difficulty'\\]"):
        client.reset(difficulty="easy")
    client.reset(task_id="seed10001_support_triage_easy")
    assert served_episode(client).scenario == generate_scenario(10_001, "easy")


def test_a_fresh_session_has_no_episode(client):
    assert client.call_tool("ask_question", question="When?") == {"error": NO_EPISODE}
    with pytest.raises(ValueError, match="no episode yet"):
        served_episode(client)


class AskThenBabble:
    """A test double: one question, then a turn with no tool call (what a weak model does)."""

    name = "babble"

    def play(self, env, rng):
        from core.clarify.policies import act

        act(env, "ask_question", question="How many guests are coming?")
        env.step(None, raw="I think so", parse_error="no tool call found")


def test_a_turn_without_a_call_ends_the_served_episode_as_in_process(client):
    scenario = PUBLISHED_50[1]
    served = play_remote(AskThenBabble(), scenario, client, episode_rng(0, scenario, 0))
    assert served == play_episode(AskThenBabble(), scenario)
    assert served.termination == "unparseable" and len(served.turns) == 2


def test_a_served_episode_refuses_another_rubric(client):
    with pytest.raises(ValueError, match="rubric v1, not v2"):
        RemoteEnv(client, PUBLISHED_50[0], "v2")


async def _replay_interleaved(url: str, plans: list[list], *, concurrent: bool) -> list[Episode]:
    """Play each call list in its own session; concurrently, every session makes its k-th call in
    round k, all of a round's calls in flight at once. Returns each session's episode."""
    from openenv.core.env_server.mcp_types import CallToolAction

    clients = [client_class()(base_url=url) for _ in plans]
    try:
        for c, (scenario, _) in zip(clients, plans):
            await c.connect()
            await c.reset(task_id=scenario.id)
        rewards = [[] for _ in plans]

        async def one(i, k):
            call = plans[i][1][k]
            answer = await clients[i].step(CallToolAction(tool_name=call.name, arguments=call.arguments))
            rewards[i].append((answer.reward, answer.done))

        if concurrent:
            for k in range(max(len(p[1]) for p in plans)):
                await asyncio.gather(*(one(i, k) for i, p in enumerate(plans) if k < len(p[1])))
        else:
            for i, p in enumerate(plans):
                for k in range(len(p[1])):
                    await one(i, k)
        episodes = [Episode.model_validate((await c.state()).episode) for c in clients]
        return episodes, rewards
    finally:
        for c in clients:
            await c.close()


def test_32_interleaved_sessions_give_the_sequential_episodes(url):
    names = ["oracle", "guess", "ask-required", "random"]
    local = [play_episode(make_policy(names[i % 4]), s, seed=i) for i, s in enumerate(PUBLISHED_50[:32])]
    plans = [(e.scenario, [t.call for t in e.turns]) for e in local]
    together, r_together = asyncio.run(_replay_interleaved(url, plans, concurrent=True))
    alone, r_alone = asyncio.run(_replay_interleaved(url, plans, concurrent=False))
    assert together == alone
    assert r_together == r_alone == [[(t.reward, k == len(e.turns) - 1) for k, t in enumerate(e.turns)] for e in local]
    assert [e.model_copy(update={"policy": l.policy}) for e, l in zip(together, local)] == local


def _hold_session(url: str) -> subprocess.Popen:
    """A separate client process that opens a session and then just sits there."""
    code = ("import json, sys, time\nfrom websockets.sync.client import connect\n"
            f"with connect({url.replace('http', 'ws') + '/ws'!r}) as ws:\n"
            "    ws.send(json.dumps({'type': 'reset', 'data': {'task_id': 'easy', 'seed': 1}}))\n"
            "    print(json.loads(ws.recv())['type'], flush=True)\n    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "observation"
    return proc


def _reset_works(url: str) -> bool:
    """Whether a new session opens: the server answers a refused one with CAPACITY_REACHED."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect as ws_connect

    with ws_connect(url.replace("http", "ws") + "/ws") as ws:
        try:
            ws.send(json.dumps({"type": "reset", "data": {"task_id": "easy", "seed": 2}}))
        except ConnectionClosed:
            pass  # refused and closed before the reset went out; the refusal is still queued
        answer = json.loads(ws.recv(timeout=10))
    if answer["type"] == "error":
        assert answer["data"]["code"] == "CAPACITY_REACHED", answer
        return False
    return answer["type"] == "observation"


def test_session_cap_dropped_clients_and_oversized_messages(small_url):
    holders = [_hold_session(small_url), _hold_session(small_url)]
    try:
        assert not _reset_works(small_url)  # two of two sessions taken: the third is refused
        holders[0].kill()  # the client dies without closing: its session is freed
        holders[0].wait()
        deadline = time.monotonic() + 10
        while not _reset_works(small_url):
            assert time.monotonic() < deadline, "a dropped client's session was never freed"
            time.sleep(0.2)
        c = connect(small_url)
        c.reset(task_id="easy", seed=2)
        from websockets.exceptions import ConnectionClosedError

        with pytest.raises(ConnectionClosedError, match="1009 \\(message too big\\)"):  # 5 KB > the 4 KiB cap
            c.call_tool("ask_question", question="x" * 5000)
        c.close()
        assert _reset_works(small_url)  # and that session is freed too
    finally:
        for h in holders:
            h.kill()
            h.wait()


def test_small_server_scores_with_v2(small_url):
    c = connect(small_url)
    try:
        scenario = PUBLISHED_50[3]
        served = play_remote(make_policy("oracle"), scenario, c, episode_rng(0, scenario, 0), rubric="v2")
        assert served == play_episode(make_policy("oracle"), scenario, rubric="v2")
    finally:
        c.close()


def test_message_cap_and_rubric_are_checked_when_built():
    with pytest.raises(ValueError, match="rubric"):
        create_service_app("v4")
    with pytest.raises(ValueError, match="v3 scores cued requests, which the service does not serve"):
        create_service_app("v3")
    with pytest.raises(ValueError, match="max_sessions"):
        create_service_app("v1", max_sessions=0)
    with pytest.raises(ValueError, match="max_message_bytes"):
        server_config(None, "127.0.0.1", 1, max_message_bytes=10)


def test_eval_cli_with_env_url_writes_the_in_process_run(url, tmp_path, capsys):
    from core.runs.eval import main as eval_main, read_run, run_eval

    args = ["--policy", "random", "--scenarios", "clarifyrl-heldout", "--limit", "6", "--samples", "2", "--seed", "3"]
    assert eval_main([*args, "--env-url", url, "--out", str(tmp_path / "served")]) == 0
    local = run_eval("random", PUBLISHED_50[:6], samples=2, seed=3)
    assert read_run(tmp_path / "served") == local
    assert eval_main([*args, "--env-url", url, "--rubric", "v2", "--out", str(tmp_path / "v2")]) == 2
    assert "scores with rubric v1, not v2" in capsys.readouterr().err


class Wordy:
    """A test double that writes like a model: the oracle's calls, each wrapped in prose and a
    <tool_call> block, with a parse note; only the call goes over the wire."""

    name = "wordy"

    def play(self, env, rng):
        make_policy("oracle").play(_WordyEnv(env), rng)


class _WordyEnv:
    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        return getattr(self._env, name)

    def step(self, call, raw="", parse_error=None):
        text = f'Let me see.\n<tool_call>{{"name": "{call.name}", "arguments": {json.dumps(call.arguments)}}}</tool_call>'
        return self._env.step(call, text, "text after the call ignored")


def test_served_episodes_keep_the_policys_own_raw_text(url):
    from core.runs.eval import run_eval

    served = run_eval(Wordy(), PUBLISHED_50[:4], env_url=url)
    assert served == run_eval(Wordy(), PUBLISHED_50[:4])
    turns = [t for e in served for t in e.turns]
    assert all(t.raw.startswith("Let me see.\n<tool_call>") and t.parse_error for t in turns)


def test_http_reset_with_a_bad_field_is_a_422_naming_it(url):
    unknown = httpx.post(f"{url}/reset", json={"difficulty": "easy"}, timeout=30)
    assert unknown.status_code == 422 and "unexpected ['difficulty']" in unknown.json()["detail"]
    huge = httpx.post(f"{url}/reset", content='{"task_id": "easy", "seed": ' + "9" * 4000 + "}",
                      headers={"content-type": "application/json"}, timeout=30)
    assert huge.status_code == 422 and "seed" in huge.text
    fine = httpx.post(f"{url}/reset", json={"task_id": "easy", "seed": 3}, timeout=30)
    assert fine.status_code == 200 and fine.json()["observation"]["result"]["type"] == "task"


def test_a_session_idle_past_the_timeout_refuses_calls_before_any_reaper_runs():
    """The reaper frees a slot before it closes the environment; the environment's own clock refuses a call in
    between, and every call (reset, step, state) keeps a session alive."""
    env_cls, _ = service_classes()
    env = env_cls(idle_timeout_s=0.2)
    env.reset(task_id="easy", seed=1)
    for _ in range(3):  # calls 0.1 s apart: never idle past 0.2 s
        time.sleep(0.1)
        assert env.state.scenario_id is not None
    time.sleep(0.3)
    with pytest.raises(RuntimeError, match="closed by the server") as refused:
        env.state
    assert str(refused.value) == SESSION_CLOSED and env.closed
    with pytest.raises(RuntimeError, match="closed by the server"):
        env.reset(task_id="easy", seed=1)  # closed stays closed
    patient = env_cls()  # no timeout: never refused for idling
    patient.last_call -= 1e6
    assert patient.reset(task_id="easy", seed=1).scenario_id


REAP_DEADLINE_S = 60.0
"""The reaper looks every max(timeout / 4, 5) s; a loaded machine may take several rounds."""


def test_a_reaped_session_is_refused_and_the_cap_holds():
    import uvicorn
    from websockets.sync.client import connect as ws_connect

    port = free_port()
    server = uvicorn.Server(server_config(create_service_app("v1", max_sessions=1, session_timeout_s=1.0),
                                          "127.0.0.1", port))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base)
        with ws_connect(base.replace("http", "ws") + "/ws") as idle:
            idle.send(json.dumps({"type": "reset", "data": {"task_id": "easy", "seed": 1}}))
            assert json.loads(idle.recv(timeout=30))["type"] == "observation"
            deadline = time.monotonic() + REAP_DEADLINE_S
            while not _reset_works(base):  # refused (cap 1) until the reaper frees the idle session
                assert time.monotonic() < deadline, "the idle session was never reaped"
            idle.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "get_task_info",
                                                           "arguments": {}}}))
            answer = json.loads(idle.recv(timeout=30))
        assert answer["type"] == "error" and "closed by the server" in answer["data"]["message"]
    finally:
        server.should_exit = True
        thread.join(timeout=30)



def test_a_port_out_of_range_is_refused_before_the_server_is_built(capsys):
    from core.clarify.serve import main

    with pytest.raises(SystemExit) as caught:
        main(["--port", "99999"])
    assert caught.value.code == 2 and "argument --port: invalid port value: '99999'" in capsys.readouterr().err


@pytest.mark.parametrize("timeout", ["-1", "nan", "inf"])
def test_a_session_timeout_that_is_no_duration_is_named(timeout, capsys):
    from core.clarify.serve import main

    assert main(["--port", "0", "--session-timeout", timeout]) == 2
    assert "error: the session timeout must be a number of seconds > 0" in capsys.readouterr().err
