"""System One endpoints by URL, against a real HTTP server on 127.0.0.1 that misbehaves on request."""

import socket

import pytest

from core.decision import Choice, Noul, system_one
from core.decision.endpoint import EndpointError, SystemOneEndpoint, endpoint_url
from tests.fixtures.system_one_server import Server

QUESTIONS = {
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": "security"}},
    "page": {"type": "noul", "instructions": "Page someone now?"},
}
KEY = "sk-test-secret-123"


@pytest.fixture(scope="module")
def server(make_decider):
    srv = Server(make_decider())
    yield srv
    srv.httpd.shutdown()


def test_answers_match_the_servers_decider_and_carry_extras(server, make_decider, monkeypatch):
    server.mode = "ok"
    monkeypatch.setenv("S1_KEY", KEY)
    remote = SystemOneEndpoint(server.url, model="m", api_key_env="S1_KEY")
    got = remote.score({"state": "charged twice", "questions": QUESTIONS})
    assert server.seen_models[-1] == "m"
    local = make_decider().score("charged twice", QUESTIONS)
    for name in QUESTIONS:
        assert system_one.probabilities_of(got["answers"][name]) == pytest.approx(
            system_one.probabilities_of(local["answers"][name]), abs=1e-9)
        assert "max_p" in got["answers"][name] and "entropy_confidence" in got["answers"][name]
    assert got["usage"]["input_tokens"] == 7 and server.seen_auth[-1] == f"Bearer {KEY}"
    answers = remote.decide("charged twice", [Choice("Which team?", ["billing", "security"]), Noul("Page now?")])
    assert [a.kind for a in answers] == ["choice", "noul"] and KEY not in repr(remote)


@pytest.mark.parametrize("mode, fragment", [
    ("500", "answered HTTP 500 Internal Server Error: model crashed"),
    ("422", "answered HTTP 422 Unprocessable Entity: Question 'x': bad"),
    ("html", "not JSON: '<html>proxy login</html>'"),
    ("fewer", "answered 1 of 2 questions; no answer for 'team'"),
    ("shape", "the answer to 'team' needs 'probabilities' for exactly ['BIL', 'SEC']"),
    ("noanswers", "answered without an 'answers' object"),
    ("slow", "did not answer within 0.5 s (timeout)"),
])
def test_each_bad_endpoint_gives_a_clear_message_without_the_key(server, mode, fragment, monkeypatch):
    server.mode = mode
    monkeypatch.setenv("S1_KEY", KEY)
    with pytest.raises(EndpointError) as err:
        SystemOneEndpoint(server.url, api_key_env="S1_KEY", timeout=0.5).score("s", QUESTIONS)
    assert fragment in str(err.value) and KEY not in str(err.value)


def test_refused_connection_and_bad_urls():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(EndpointError, match="refused the connection"):
        SystemOneEndpoint(f"http://127.0.0.1:{port}/v1/systemone", timeout=2).score("s", QUESTIONS)
    assert endpoint_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1/systemone"
    named = SystemOneEndpoint("http://127.0.0.1:8000/v1/systemone#Qwen/Qwen2.5-0.5B-Instruct")
    assert named.model == "Qwen/Qwen2.5-0.5B-Instruct" and named.url == "http://127.0.0.1:8000/v1/systemone"
    with pytest.raises(EndpointError, match="not an http"):
        endpoint_url("ftp://x/v1/systemone")
    with pytest.raises(EndpointError, match="does not end with /v1/systemone"):
        endpoint_url("http://x/api/decide")
    with pytest.raises(EndpointError, match="environment variable, not in the URL"):
        endpoint_url(f"http://user:{KEY}@x/v1/systemone")
    with pytest.raises(EndpointError, match="NO_SUCH_VAR is not set"):
        SystemOneEndpoint("http://x/v1/systemone", api_key_env="NO_SUCH_VAR")


def test_bad_requests_are_refused_before_any_call():
    remote = SystemOneEndpoint("http://127.0.0.1:9/v1/systemone")  # never reached
    with pytest.raises(ValueError, match="Question 'x'"):
        remote.score("s", {"x": {"type": "rank"}})
