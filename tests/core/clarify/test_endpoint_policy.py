"""EndpointPolicy against `transformers serve` (our shipped policy, 127.0.0.1) and a scripted double.

The real server shows the protocol works end to end (greedy episodes equal our in-process ones
token for token; a cut answer it answers 500 on 5.24 or 400 on 5.25, an unknown model 400). The
double, a tiny HTTP server in this file, scripts what a real one does only sometimes: 429s,
timeouts, malformed tool calls.
"""

import json
import random
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from core.clarify.endpoint_policy import EndpointError, EndpointPolicy, make_endpoint_policy
from core.clarify.environment import ClarifyEnv
from core.clarify.scenarios import load_scenarios
from core.models.entries import parse_spec
from core.records import Generation
from core.runs.eval import main as eval_main, read_run

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = "checkpoints/clarify-grpo"
SCENARIOS = load_scenarios("clarifyrl-heldout", 3)
GREEDY = Generation(temperature=0.0, max_new_tokens=120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask(question: str, call_id: str = "c1") -> dict:
    return {"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "ask_question", "arguments": json.dumps({"question": question})}}]}}]}


def text(content: str, finish: str = "stop") -> dict:
    return {"choices": [{"finish_reason": finish, "message": {"role": "assistant", "content": content}}]}


PLAN = text('<tool_call>\n{"name": "propose_plan", "arguments": {"plan": "{}"}}\n</tool_call>')


class Scripted:
    """An endpoint double: answers each POST with the next (status, body, delay) and keeps the requests."""

    def __init__(self, replies):
        self.replies, self.requests = list(replies), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((self.path, dict(self.headers), body))
                status, reply, delay = outer.replies.pop(0) if outer.replies else (500, {"error": "script over"}, 0)
                time.sleep(delay)
                data = json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def play(replies, **options):
    double = Scripted(replies)
    policy = EndpointPolicy(double.url, "m", Generation(temperature=0.5, top_p=0.9, max_new_tokens=50),
                            backoff_s=0.01, **options)
    env = ClarifyEnv(SCENARIOS[0])
    try:
        policy.play(env, random.Random(0))
    finally:
        double.close()
    return env, double.requests


def test_spec_names_base_url_and_model():
    assert parse_spec("openai:http://h:8000/v1/#Qwen/Qwen3-1.7B") == ("http://h:8000/v1", "Qwen/Qwen3-1.7B")
    for bad in ("openai:http://h:8000/v1", "openai:h:8000#m", "openai:http://h#"):
        with pytest.raises(ValueError, match="openai:BASE_URL#MODEL"):
            parse_spec(bad)


def test_requests_carry_our_protocol_and_sampling_and_the_key_stays_secret(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    env, requests = play([(200, ask("How many guests are coming?"), 0), (200, PLAN, 0)])
    assert env.termination == "plan" and [t.call.name for t in env.turns] == ["ask_question", "propose_plan"]
    path, headers, first = requests[0]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-secret-123"
    assert (first["temperature"], first["top_p"], first["max_tokens"], first["model"]) == (0.5, 0.9, 50, "m")
    assert [t["function"]["name"] for t in first["tools"]] == ["get_task_info", "ask_question", "propose_plan"]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    second = requests[1][2]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2]["tool_calls"][0]["id"] == second[3]["tool_call_id"] == "c1"
    assert json.loads(second[3]["content"])["questions_remaining"] == 5
    assert "sk-secret" not in env.episode("p").model_dump_json()


def test_429_and_500_are_retried_with_backoff(monkeypatch):
    import core.clarify.endpoint_policy as endpoint_policy

    waits = []  # the policy's own waits, recorded rather than slept (the scripted server keeps the real clock)
    monkeypatch.setattr(endpoint_policy, "time", SimpleNamespace(sleep=waits.append))
    env, requests = play([(429, {}, 0), (500, {}, 0), (200, PLAN, 0)], retries=2)
    assert env.termination == "plan" and len(requests) == 3
    assert waits == pytest.approx([0.01, 0.02])  # backoff_s, then twice it


@pytest.mark.parametrize("replies, options, error", [
    ([(500, {"detail": "boom"}, 0)] * 3, {"retries": 2}, "HTTP 500"),  # retries spent
    ([(200, PLAN, 1.0)], {"retries": 0, "timeout_s": 0.2}, "timed out"),
    ([(200, {"choices": [{"message": {"tool_calls": [{"function": {"name": "ask_question", "arguments": "{bad"}}]}}]}, 0)],
     {}, "malformed tool call arguments"),
    ([(200, text("I will keep talking and talking", finish="length"), 0)], {}, "hit max_tokens (50)"),  # endless
    ([(200, {"no": "choices"}, 0)], {}, "no choices[0].message"),
    # transformers serve >= 5.25: its parser could not read the model's (cut) tool call
    ([(400, {"detail": "json parser could not parse region as JSON.\nContent: '{\"name\": \"ask'"}, 0)], {},
     "could not read the model's answer"),
])
def test_bad_answers_end_the_episode_with_the_error_logged(replies, options, error):
    env, _ = play(replies, **options)
    assert env.done and env.termination == "unparseable" and env.score == 0.0
    assert error in env.turns[-1].parse_error


def test_refused_connection_ends_the_episode_with_the_error_logged():
    policy = EndpointPolicy(f"http://127.0.0.1:{free_port()}/v1", "m", retries=1, backoff_s=0.01)
    env = ClarifyEnv(SCENARIOS[0])
    policy.play(env, random.Random(0))
    assert env.termination == "unparseable" and "could not reach" in env.turns[0].parse_error


@pytest.mark.parametrize("status, said", [(401, "bad key"), (400, "model no/such-model is not served here")])
def test_other_4xx_fail_the_run_clearly(status, said):
    double = Scripted([(status, {"error": said}, 0)])
    try:
        with pytest.raises(EndpointError, match=f"HTTP {status}"):
            EndpointPolicy(double.url, "m").play(ClarifyEnv(SCENARIOS[0]), random.Random(0))
    finally:
        double.close()


# ---- against a real server: transformers serve with our shipped checkpoint ---------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not (ROOT / CHECKPOINT / "model.safetensors").exists():
        pytest.skip("the shipped checkpoint is not here")
    exe = Path(sys.executable).with_name("transformers")
    if not exe.exists():
        pytest.skip("no transformers command beside this Python")
    port = free_port()
    log = (tmp_path_factory.mktemp("tserve") / "serve.log").open("w")
    proc = subprocess.Popen([str(exe), "serve", CHECKPOINT, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, Path(log.name).read_text()[-2000:]
            assert time.monotonic() < deadline, "transformers serve did not come up"
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        yield url + "/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


def test_greedy_episodes_match_in_process_token_for_token(served):
    from core.clarify.chat_policy import load_chat_policy

    remote = make_endpoint_policy(f"openai:{served}#{CHECKPOINT}", GREEDY)
    local = load_chat_policy(CHECKPOINT, generation=GREEDY)
    for scenario in SCENARIOS:
        a, b = ClarifyEnv(scenario), ClarifyEnv(scenario)
        remote.play(a, random.Random(0))
        local.play(b, random.Random(0))
        assert [t.raw for t in a.turns] == [t.raw for t in b.turns]
        assert (a.termination, a.score) == (b.termination, b.score) and a.termination == "plan"


def test_eval_cli_plays_k_samples_concurrently_through_the_server(served, tmp_path):
    out = tmp_path / "run"
    assert eval_main(["--policy", f"openai:{served}#{CHECKPOINT}", "--scenarios", "clarifyrl-heldout", "--limit", "2",
                      "--samples", "2", "--temperature", "0.7", "--concurrency", "4", "--out", str(out)]) == 0
    episodes = read_run(out)
    assert [(e.scenario.id, e.sample) for e in episodes] == [(s.id, k) for s in SCENARIOS[:2] for k in range(2)]
    assert all(e.termination != "running" for e in episodes)
    assert sum(e.termination == "plan" for e in episodes) >= 3  # a trained policy mostly finishes with a plan
    assert episodes[0].generation.temperature == 0.7 and episodes[0].generation.extra["model"] == CHECKPOINT


def test_real_server_failures_end_the_episode_or_the_run(served):
    cut = make_endpoint_policy(f"openai:{served}#{CHECKPOINT}", Generation(temperature=0.0, max_new_tokens=3),
                               retries=1, backoff_s=0.01)
    env = ClarifyEnv(SCENARIOS[0])
    cut.play(env, random.Random(0))  # 3 tokens are no valid call: transformers serve answers 500
    # (once in a few runs on this loaded machine its uvicorn reset the connection instead)
    error = env.turns[0].parse_error
    assert env.termination == "unparseable" and ("HTTP 500" in error or "Connection reset" in error
                                                 or "could not read the model's answer" in error), error
    wrong = make_endpoint_policy(f"openai:{served}#no/such-model", GREEDY)
    with pytest.raises(EndpointError, match="HTTP 400"):  # the server is pinned to our checkpoint
        wrong.play(ClarifyEnv(SCENARIOS[0]), random.Random(0))
