"""``python -m core.decision.serve`` (transformers' serving machinery) answers as our local deciders (letter, pooled)."""

import time
from pathlib import Path

import pytest
import torch

from core.decision import system_one
from core.decision.endpoint import EndpointError, SystemOneEndpoint
from core.decision.export.published import load_decider
from core.decision.pooled import PooledHead, load_pooled
from core.decision.serve import MAX_NESTING, BodyLimit, nesting, serve
from tests.fixtures.served_export import served, served_process
from tests.fixtures.tiny_adapter_arm import build_tiny_llama, save_tiny_pooled
from tests.fixtures.tiny_decision import export_tiny

REQUEST = {"state": {"ticket": "Card charged twice, refund missing.", "customer": "Zoë"}, "questions": {
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": "security"}},
    "prio": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
    "page": {"type": "noul", "instructions": "Page someone now?"}}}

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("openai")


@pytest.mark.slow
def test_served_export_answers_with_the_local_deciders_probabilities(tmp_path):
    torch.set_num_threads(1)
    export = export_tiny(tmp_path / "tiny-a")
    local = load_decider(export).score(REQUEST)
    with served(export) as url:
        remote = SystemOneEndpoint(url, timeout=60).score(REQUEST)
        with pytest.raises(EndpointError, match="HTTP 422.*Question 'bad'"):  # the server's own validation
            SystemOneEndpoint(url, timeout=60).post({"state": "s", "questions": {"bad": {"type": "rank"}}})
    _same_answers(remote, local)
    # the server tokenizes one prompt per question, so the prefix counts once per question there
    n = len(REQUEST["questions"])
    assert remote["usage"]["input_tokens"] == local["usage"]["input_tokens"] + (n - 1) * local["usage"]["prefix_tokens"]


def _same_answers(remote: dict, local: dict) -> None:
    assert list(remote["answers"]) == list(REQUEST["questions"])
    for name, ans in remote["answers"].items():
        assert system_one.probabilities_of(ans) == pytest.approx(system_one.probabilities_of(local["answers"][name]),
                                                                 abs=1e-5)
        if "confidence" in ans:
            assert ans["confidence"] == pytest.approx(local["answers"][name]["confidence"], abs=1e-5)


@pytest.mark.slow
def test_a_served_pooled_readout_answers_with_the_local_deciders_probabilities(tmp_path):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    head = PooledHead(32)
    with torch.no_grad():
        head.m.normal_(), head.w.normal_()
    folder = save_tiny_pooled(tmp_path / "pooled", build_tiny_llama(tmp_path / "base"), head)
    local = load_pooled(folder).score(REQUEST)
    with served(folder) as url:
        remote = SystemOneEndpoint(url, timeout=60).score(REQUEST)
        with pytest.raises(EndpointError, match="HTTP 400.*the state is [0-9]+ tokens; the pooled readout reads at most"):
            SystemOneEndpoint(url, timeout=60).score({**REQUEST, "state": "word " * 5000})
    _same_answers(remote, local)
    assert remote["usage"]["input_tokens"] == local["usage"]["input_tokens"]  # one input per request: the state


def test_serve_refuses_a_folder_it_cannot_host(tmp_path):
    with pytest.raises(SystemExit, match="not one of our decision folders"):
        serve(tmp_path)
    (tmp_path / "pooled.json").write_text("{}")
    with pytest.raises(SystemExit, match="without its base's config.json"):
        serve(tmp_path)


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


@pytest.mark.slow
def test_huge_requests_are_refused_fast_without_memory_growth(tmp_path):
    import httpx

    if not Path("/proc/self/status").is_file():
        pytest.skip("needs /proc to read the server's memory")
    export = export_tiny(tmp_path / "tiny-b")
    question = {"page": {"type": "noul", "instructions": "Page someone now?"}}
    with served_process(export) as (url, proc):
        SystemOneEndpoint(url, timeout=60).score({"state": "warm up", "questions": question})
        before = _rss_bytes(proc.pid)
        start = time.monotonic()
        huge = httpx.post(url, json={"state": "x" * 20_000_000, "questions": question}, timeout=60)
        assert huge.status_code == 413 and "1,048,576 bytes" in huge.json()["detail"]
        # under the body cap but far over the token limit: refused before tokenizing, limit named
        big = httpx.post(url, json={"state": "word " * 180_000, "questions": question}, timeout=60)
        elapsed = time.monotonic() - start
        assert big.status_code == 400 and "more than 1536 tokens can hold" in big.text
        assert elapsed < 10.0 and _rss_bytes(proc.pid) - before < 400 * 2**20


def test_the_guard_closes_reset_and_refuses_deep_nesting_in_words():
    """What reaches transformers serve: not /reset (any client could unload the pinned model for all others) and not
    a body nested past MAX_NESTING (an 800-deep state hung its request in the model process's pickling)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    async def echo(request):
        return JSONResponse({"got": len(await request.body())})

    app = Starlette(routes=[Route("/v1/systemone", echo, methods=["POST"]), Route("/reset", echo, methods=["POST"])])
    client = TestClient(BodyLimit(app, max_bytes=4096))
    passed = client.post("/v1/systemone", json=REQUEST)  # a System One request reaches the app whole
    assert passed.status_code == 200 and passed.json()["got"] == len(passed.request.content)
    closed = client.post("/reset")
    assert closed.status_code == 403 and "/reset is closed" in closed.json()["detail"]
    deep = client.post("/v1/systemone", content=b'{"state": ' + b"[" * 800 + b"]" * 800 + b"}")
    assert deep.status_code == 400 and f"nested 801 levels deep; at most {MAX_NESTING}" in deep.json()["detail"]
    assert nesting(b'{"state": "[[[[ {{ inside a string", "q": {"a": [1]}}') == 3 and nesting(b"not json") == 0
    assert client.post("/v1/systemone", content=b"x" * 5000).status_code == 413



def test_a_port_out_of_range_is_refused_before_the_model_loads(capsys, tmp_path):
    from core.decision.serve import main

    with pytest.raises(SystemExit) as caught:
        main([str(tmp_path), "--port", "-1"])
    assert caught.value.code == 2 and "argument --port: invalid port value: '-1'" in capsys.readouterr().err
