"""Our exports in transformers' own pipeline: pipeline("decision", model=EXPORT) equals our Decider (letter and pooled)."""

import pytest
import torch
from transformers import pipeline

import core.decision.auto_model  # noqa: F401  (registers our exports as decision models)
from core.decision import system_one
from core.decision.auto_model import LetterReadoutForDecision, PooledReadoutForDecision
from core.decision.export.published import load_decider
from core.decision.pooled import PooledHead, load_pooled
from tests.fixtures.tiny_adapter_arm import build_tiny_llama, save_tiny_pooled
from tests.fixtures.tiny_chat import build_tiny_chat
from tests.fixtures.tiny_decision import export_tiny

REQUESTS = [
    {"state": "Card charged twice, refund missing.", "questions": {
        "team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": None, "INF": "infra"}},
        "prio": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high", "critical"]},
        "page": {"type": "noul", "instructions": "Page someone now?", "criteria": {"true": "wake on-call"}}}},
    {"state": {"ticket": "Login fails after reset — Zoë", "tries": 3, "tags": ["auth", "sso"]}, "questions": {
        "ok": {"type": "noul", "instructions": "Is it resolved?"},
        "who": {"type": "choice", "instructions": {"ask": "which queue?"}, "criteria": {"a": {"x": 1}, "b": "plain"}}}},
]


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    torch.set_num_threads(1)
    return export_tiny(tmp_path_factory.mktemp("exports") / "tiny-a")


@pytest.mark.parametrize("request_", REQUESTS)
def test_pipeline_answers_with_our_deciders_probabilities(export_dir, request_):
    pipe = pipeline("decision", model=str(export_dir))
    assert isinstance(pipe.model, LetterReadoutForDecision)
    _same_answers(pipe(request_), load_decider(export_dir).score(request_)["answers"])


def _same_answers(theirs: dict, ours: dict) -> None:
    assert list(theirs) == list(ours)
    for name, answer in theirs.items():
        assert system_one.probabilities_of(answer) == pytest.approx(system_one.probabilities_of(ours[name]), abs=1e-5)
        for key, value in answer.items():  # every System One field, the same definitions
            assert ours[name][key] == (value if isinstance(value, (str, dict)) and key != "probabilities"
                                       else pytest.approx(value, abs=1e-5)), key


@pytest.fixture(scope="module", params=["alone", "in_context"])
def pooled_dir(tmp_path_factory, request):
    root = tmp_path_factory.mktemp("pooled")
    torch.manual_seed(0)
    head = PooledHead(32)
    with torch.no_grad():
        head.m.normal_(), head.w.normal_()
    return save_tiny_pooled(root / "arm", build_tiny_llama(root / "base"), head, options_read=request.param)


@pytest.mark.parametrize("request_", REQUESTS)
def test_pipeline_answers_with_the_pooled_deciders_probabilities(pooled_dir, request_):
    # options read alone (kept across requests) or in context (read after each request's state)
    pipe = pipeline("decision", model=str(pooled_dir))
    assert isinstance(pipe.model, PooledReadoutForDecision)
    _same_answers(pipe(request_), load_pooled(pooled_dir).score(request_)["answers"])


def test_a_pooled_request_over_its_limits_is_refused_naming_the_part(pooled_dir):
    pipe = pipeline("decision", model=str(pooled_dir))
    with pytest.raises(ValueError, match="the state is [0-9]+ tokens; the pooled readout reads at most 4096"):
        pipe({"state": "word " * 5000, "questions": {"page": {"type": "noul", "instructions": "Page now?"}}})


def test_other_folders_of_the_same_body_type_still_load_as_causal_lms(tmp_path):
    pipe = pipeline("decision", model=str(build_tiny_chat(tmp_path / "chat")))
    assert not isinstance(pipe.model, LetterReadoutForDecision)
    answer = pipe({"state": "s", "questions": {"q": {"type": "choice", "criteria": {"a": None, "b": None}}}})
    assert sum(answer["q"]["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)


def test_bad_requests_are_refused_in_the_pipeline_with_named_questions(export_dir):
    pipe = pipeline("decision", model=str(export_dir))
    with pytest.raises(ValueError, match="Question 'bad'"):
        pipe({"state": "s", "questions": {"bad": {"type": "rank"}}})
    with pytest.raises(ValueError, match="question 'n': a noul must be phrased as a question"):
        pipe({"state": "s", "questions": {"n": {"type": "noul", "instructions": "Page now"}}})


def test_importing_core_decision_after_transformers_registers_our_exports(export_dir):
    import subprocess
    import sys
    from pathlib import Path

    code = ("import transformers, core.decision\n"
            f"pipe = transformers.pipeline('decision', model={str(export_dir)!r})\n"
            "print(type(pipe.model).__name__)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(Path(__file__).resolve().parents[3]))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "LetterReadoutForDecision"


PLAIN_PIPELINE = """
import sys, transformers
pipe = transformers.pipeline("decision", model=sys.argv[1])
pipe({"state": "Card charged twice.", "questions": {"page": {"type": "noul", "instructions": "Page now?"}}})
"""


@pytest.mark.slow
def test_a_plain_pipeline_without_our_import_refuses_saying_what_to_import(export_dir):
    import os
    import subprocess
    import sys

    from core.decision.export.published import GUARD_TEMPLATE

    assert (export_dir / GUARD_TEMPLATE).is_file()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", PLAIN_PIPELINE, str(export_dir)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode != 0
    assert "`import core.decision.auto_model`" in done.stderr and "rlcd-decision-only-v1" in done.stderr


def test_an_adapter_arm_answers_through_the_pipeline_as_its_decider(tmp_path):
    """A LoRA arm over a real base (here a tiny random Llama) in transformers' own pipeline."""
    from core.decision.export.adapter import load_adapter_decider
    from tests.fixtures.tiny_adapter_arm import build_tiny_llama, export_tiny_arm

    arm = export_tiny_arm(tmp_path / "arm", build_tiny_llama(tmp_path / "base"))
    before = load_adapter_decider(arm)  # holds the shared base the pipeline's model is built over
    ours = before.score(REQUESTS[0])["answers"]
    pipe = pipeline("decision", model=str(arm))
    assert isinstance(pipe.model, LetterReadoutForDecision)
    theirs = pipe(REQUESTS[0])
    assert before.score(REQUESTS[0])["answers"] == ours  # building the pipeline re-initialised no shared weight
    assert list(theirs) == list(ours)
    for name, answer in theirs.items():
        assert system_one.probabilities_of(answer) == pytest.approx(system_one.probabilities_of(ours[name]), abs=1e-5)
