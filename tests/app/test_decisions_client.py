"""gradio_client against the launched app: the System One /score endpoint and the UI's /ask."""

import pytest
import torch

from core.decision import system_one
from tests.app.harness import launched
from tests.fixtures.tiny_decision import export_models

QUESTIONS = {
    "team": {"type": "choice", "instructions": "Which team should handle this?",
             "criteria": {"BIL": "billing", "SEC": "security", "INF": "infrastructure"}},
    "urgency": {"type": "score", "instructions": "How urgent is it?", "criteria": ["low", "normal", "high", "critical"]},
    "page": {"type": "noul", "instructions": "Should someone be paged now?",
             "criteria": {"true": "page on-call", "false": "wait"}},
}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    torch.set_num_threads(1)
    import app
    from gradio_client import Client

    with launched(app.build(decision_models=str(export_models(tmp_path_factory.mktemp("models"))))) as url:
        yield Client(url, verbose=False)


def test_three_question_request_sums_to_one(client):
    out = client.predict("tiny-a", "Ticket: charged twice, refund missing.", QUESTIONS, api_name="/score")
    assert list(out["answers"]) == ["team", "urgency", "page"]
    for qid, ans in out["answers"].items():
        probs = system_one.probabilities_of(ans)
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-5), qid
        assert system_one.top_option(ans) in probs
    assert set(out["answers"]["team"]["probabilities"]) == {"BIL", "SEC", "INF"}
    assert 0.0 <= out["answers"]["urgency"]["score"] <= len(out["answers"]["urgency"]["probabilities"]) - 1
    assert out["answers"]["page"]["p_true"] == pytest.approx(out["answers"]["page"]["noul"])
    assert out["usage"]["questions"] == 3 and not out["usage"]["state_truncated"]


def test_record_state_and_bad_request_over_the_api(client):
    out = client.predict("tiny-b", {"ticket": "login from a new device", "tier": "FREE"}, QUESTIONS, api_name="/score")
    assert set(out["answers"]) == set(QUESTIONS)
    bad = {"q": {"type": "choice", "instructions": "Which?", "criteria": {"a": "same", "b": "same"}}}
    with pytest.raises(Exception, match="duplicates option 1"):
        client.predict("tiny-a", "state", bad, api_name="/score")


def test_ui_endpoints_are_named(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/score", "/ask", "/load_example", "/decision_models", "/calibrate", "/probe"} <= names
