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


def test_every_documented_endpoint_takes_the_documented_names(client):
    """docs/app.md lists /ask, /load_example, /decision_models, /calibrate, /probe and /score; each is
    called here as a gradio_client user would, with no page loaded first (the pickers are filled
    when the app is built, so the shipped and local model names are valid choices)."""
    client.predict(api_name="/decision_models")
    state, *_ = client.predict("Support ticket", api_name="/load_example")
    assert state.strip()
    # The docs' own /score example, word for word.
    out = client.predict(
        "decision-rlcd", "Ticket 4471\nCustomer tier: BUSINESS\nMessage: I was charged twice.",
        {"team": {"type": "choice", "instructions": "Which department should handle this ticket?",
                  "criteria": {"BIL": "BILLING", "SEC": "SECURITY"}},
         "page": {"type": "noul", "instructions": "Should an on-call engineer be paged immediately?"}},
        api_name="/score")
    assert set(out["answers"]["team"]["probabilities"]) == {"BIL", "SEC"}
    assert not out["familiarity"]["out_of_distribution"]  # training-like, as the docs say
    natural = client.predict("decision-rlcd", "Card charged twice, refund missing.",
                             {"team": {"type": "choice", "instructions": "Which team?",
                                       "criteria": {"BIL": "billing", "SEC": "security"}}}, api_name="/score")
    assert natural["familiarity"]["out_of_distribution"]  # natural text: the answer comes with its warning
    blank_rows = ["choice", "", ""] * 5  # the builder's other five rows (the API shows all six)
    ask = client.predict("decision-rlcd", "", "Ticket: charged twice.", "choice", "Which team?",
                         "billing\nsecurity", *blank_rows, api_name="/ask")
    assert set(ask[-1]["decision-rlcd"]["q1"]["probabilities"]) == {"billing", "security"}
    cal = client.predict("tiny-a", "", "our test split", 10, None, False, api_name="/calibrate")
    assert "rows from our test split" in cal[2] and cal[3]["data"]
    cal = client.predict("tiny-a", "", "natural tickets (held-out families)", 10, None, False, "families",
                         api_name="/calibrate")
    assert "resample whole families" in cal[2] and cal[3]["data"][-1][0] == "rows (families resampled)"
    cal = client.predict("tiny-a", "", "natural tickets (held-out families)", 10, None, False, "contexts", 1,
                         api_name="/calibrate")
    assert ", draw 1 · " in cal[2] and cal[3]["data"]
    cal = client.predict("tiny-a", "", "natural tickets (held-out families)", 10, None, False, "contexts", 1,
                         "every cyclic order (letter readouts)", api_name="/calibrate")
    assert ", draw 1 · every choice read in each cyclic order of its options · " in cal[2] and cal[3]["data"]
    cal = client.predict("tiny-a", "", "natural tickets (held-out families)", 10, None, False, "contexts", -3,
                         api_name="/calibrate")
    assert "draw must be a whole number from 0 to 9999" in str(cal[0]) and "-3" in str(cal[0])
    probe = client.predict("tiny-b", "", 20, api_name="/probe")
    assert probe[-1]["data"]


@pytest.mark.parametrize("state, questions, message", [
    (["not", "text"], QUESTIONS, "state must be text or a JSON object"),      # a non-text state
    (42, QUESTIONS, "got int"),
    ("state", ["a list"], "questions must be a JSON object"),
    ("word " * 5000, QUESTIONS, "tokens"),                                     # over the token limit
])
def test_score_errors_say_why(client, state, questions, message):
    with pytest.raises(Exception, match=message) as caught:
        client.predict("tiny-a", state, questions, api_name="/score")
    assert "truncate=True" not in str(caught.value)  # the API offers no truncate option


def test_the_tab_and_the_warm_up_read_the_same_folder():
    """``--decision-models`` wins, else ``--models-dir``; none leaves the shipped models alone."""
    import app

    assert app.decisions_folder("exports", "checkpoints-of-mine") == "exports"
    assert app.decisions_folder(None, "checkpoints-of-mine") == "checkpoints-of-mine"
    assert app.decisions_folder("", None) == ""
