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
from pathlib import Path

import httpx
import pytest

pytest.importorskip("openenv.core.mcp_client")

from core.clarify.agent import TOOL_SCHEMAS  # noqa: E402
from core.clarify.environment import ENDED  # noqa: E402
from core.clarify.policies import make_policy  # noqa: E402
from core.clarify.remote import RemoteEnv, client_class, connect, play_remote, served_episode  # noqa: E402
from core.clarify.scenarios import generate_scenario, load_scenarios  # noqa: E402
from core.clarify.serve import create_service_app, server_config  # noqa: E402
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


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    port = free_port()
    log = (tmp_path_factory.mktemp("serve") / "server.log").open("w")  # a pipe nobody reads would fill up
    proc = subprocess.Popen([sys.executable, "-m", "core.clarify.serve", "--rubric", "v1", "--port", str(port),
                             "--max-sessions", "40"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        # the server logs nothing but its banner: no tracebacks, no warnings
        assert Path(log.name).read_text().splitlines()[1:] == []


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
    assert client.call_tool("get_task_info") == {"error": ENDED}
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
