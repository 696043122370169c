"""gradio_client against the launched app: /score and /ask answered by the shipped option scorer."""

import pytest
import torch

from core.decision import system_one
from tests.app.harness import launched

QUESTIONS = {
    "team": {"type": "choice", "instructions": "Which department should handle this ticket?",
             "criteria": {"BIL": "BILLING", "SEC": "SECURITY"}},
    "urgency": {"type": "score", "instructions": "How urgent is it?", "criteria": ["low", "normal", "high"]},
    "page": {"type": "noul", "instructions": "Should an on-call engineer be paged immediately?"},
}
TICKET = "Ticket 4471\nCustomer tier: BUSINESS\nMessage: I was charged twice."


@pytest.fixture(scope="module")
def client():
    torch.set_num_threads(1)
    import app
    from gradio_client import Client

    with launched(app.build()) as url:
        yield Client(url, verbose=False)


def test_score_answers_with_the_heads_confidence_and_max_p(client):
    out = client.predict("option-scorer", TICKET, QUESTIONS, api_name="/score")
    assert list(out["answers"]) == ["team", "urgency", "page"]
    for qid, ans in out["answers"].items():
        assert sum(system_one.probabilities_of(ans).values()) == pytest.approx(1.0, abs=1e-6), qid
        assert 0.0 <= ans["confidence"] <= 1.0 and ans["max_p"] == max(system_one.probabilities_of(ans).values())
    assert out["answers"]["team"]["choice"] == "BIL"  # the docs' example: a billing ticket
    assert out["answers"]["team"]["confidence"] != out["answers"]["team"]["max_p"]  # the head, not max p
    assert out["usage"]["decider_path"] == "one pass" and out["usage"]["output_tokens"] == 0
    assert not out["familiarity"]["out_of_distribution"]


def test_a_255_option_question_and_the_token_limit_over_the_api(client):
    many = {"pick": {"type": "choice", "instructions": "Which code applies?",
                     "criteria": {f"c{i}": f"code number {i}" for i in range(255)}}}
    out = client.predict("option-scorer", "Order 12: code number 7 was applied.", many, api_name="/score")
    assert len(out["answers"]["pick"]["probabilities"]) == 255
    with pytest.raises(Exception, match="8,192-token limit"):
        client.predict("option-scorer", "word " * 9000, QUESTIONS, api_name="/score")
    rows = ["choice", "Which code applies?", "\n".join(f"c{i}: code number {i}" for i in range(255))]
    ask = client.predict("option-scorer", "", "Order 12: code number 7 was applied.", *rows,
                         *["choice", "", ""] * 5, api_name="/ask")
    assert len(ask[-1]["option-scorer"]["q1"]["probabilities"]) == 255
