"""The one-pass option scorer: independence, equality with per-question passes, limits, validation."""

import json
import random

import pytest
import torch

from core.decision.option.model import OptionModel, Settings
from core.decision.option.request import (
    OptionRequestError,
    load_request,
    parse_questions,
)
from core.decision.option.scorer import OptionScorer
from core.decision.random_model import random_body

STATE = "Ticket 7\nMessage: I was charged twice; the servers are unreachable.\nNote: urgent please."
POOL = {
    "team": {"type": "choice", "instructions": "Which team owns this?",
             "criteria": {"k9": "billing: charges and refunds", "zz": "infrastructure", "q_1": None}},
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["can wait", "this week", "today"]},
    "page": {"type": "noul", "instructions": "Page on-call?", "criteria": {"true": "wake someone"}},
    "tier": {"type": "choice", "instructions": "Customer tier?", "criteria": {"a": "free", "b": "paid"}},
    "tone": {"type": "choice", "instructions": None, "criteria": {"calm": None, "angry": "shouting", "sad": None,
                                                                   "mixed": {"note": "both"}}},
    "refund": {"type": "noul", "instructions": "Is a refund due?"},
}


@pytest.fixture(scope="module")
def scorer(letter_tok):
    body = random_body(len(letter_tok), seed=3, hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8)
    return OptionScorer(OptionModel(body, head_hidden=16), letter_tok)


def _probs(scorer, questions, path="packed"):
    enc = scorer.prepare(STATE, questions)
    return dict(zip(questions, scorer.probabilities(enc, scorer.outputs(enc, path))))


def test_answers_never_depend_on_the_other_questions(scorer):
    alone = {name: _probs(scorer, {name: spec})[name] for name, spec in POOL.items()}
    rng = random.Random(0)
    worst = 0.0
    for _ in range(8):  # random subsets in random order
        names = rng.sample(list(POOL), rng.randint(2, len(POOL)))
        got = _probs(scorer, {n: POOL[n] for n in names})
        worst = max(worst, max(abs(a - b) for n in names for a, b in zip(got[n], alone[n])))
    assert worst <= 1e-6


def test_reordering_options_only_reorders_their_probabilities(scorer):
    spec = POOL["tone"]
    flipped = {**spec, "criteria": dict(reversed(list(spec["criteria"].items())))}
    a = dict(zip(spec["criteria"], _probs(scorer, {"t": spec})["t"]))
    b = dict(zip(flipped["criteria"], _probs(scorer, {"t": flipped})["t"]))
    assert max(abs(a[k] - b[k]) for k in a) <= 1e-6


def test_one_pass_equals_per_question_and_per_option_passes(scorer):
    enc = scorer.prepare(STATE, POOL)
    packed, single = scorer.outputs(enc), scorer.outputs(enc, "per_question")
    p1, p2 = scorer.probabilities(enc, packed), scorer.probabilities(enc, single)
    assert max(abs(a - b) for x, y in zip(p1, p2) for a, b in zip(x, y)) <= 1e-5
    # each option alone after the state and its header, no custom mask at all
    for logits, valid, ref in zip(packed.logits, packed.valid, scorer.per_option_logits(enc)):
        assert (logits[valid] - ref).abs().max().item() <= 1e-5


def test_answers_have_the_system_one_shapes(scorer):
    out = scorer.score(STATE, POOL)
    a = out["answers"]
    assert set(a["team"]) == {"type", "choice", "confidence", "probabilities", "max_p"}
    assert set(a["urgency"]) == {"type", "score", "legend", "confidence", "probabilities", "max_p"}
    assert set(a["page"]) == {"type", "noul", "confidence", "max_p"}
    assert list(a["team"]["probabilities"]) == ["k9", "zz", "q_1"]
    assert abs(sum(a["team"]["probabilities"].values()) - 1) < 1e-9
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] == 0
    max_p = OptionScorer(scorer.model, scorer.tokenizer, Settings(confidence_mode="max_p"))
    b = max_p.score(STATE, POOL)["answers"]["team"]
    assert b["confidence"] == b["max_p"] == max(b["probabilities"].values())


def test_255_options_work_and_256_are_refused(scorer):
    crit = {f"opt{i}": f"choice number {i}" for i in range(255)}
    probs = _probs(scorer, {"big": {"type": "choice", "criteria": crit}})["big"]
    assert len(probs) == 255 and abs(sum(probs) - 1) < 1e-9
    with pytest.raises(OptionRequestError, match=r"question 'big': 256 option\(s\); a choice question takes 2 to 255"):
        scorer.prepare(STATE, {"big": {"type": "choice", "criteria": {**crit, "one_more": None}}})


def _sized_request(scorer, total: int):
    """A state of " A" (one token each) sized so that state + question is exactly ``total`` tokens."""
    big = OptionScorer(scorer.model, scorer.tokenizer, Settings(max_tokens=10**9))
    q = {"q": POOL["team"]}
    base = big.prepare("A", q).n_tokens
    state = "A" + " A" * (total - base)
    enc = big.prepare(state, q)
    assert enc.n_tokens == total
    return state, q, enc


def test_8192_tokens_answered_8193_refused_with_counts(scorer):
    state, q, enc = _sized_request(scorer, 8193)
    with pytest.raises(OptionRequestError) as err:
        scorer.prepare(state, q)
    msg = str(err.value)
    assert f"request is 8,193 tokens (state {len(enc.state):,}; questions: 'q' {enc.questions[0].n_tokens:,})" in msg
    assert "8,192-token limit" in msg and "nothing was truncated" in msg
    state, q, _ = _sized_request(scorer, 8192)
    assert scorer.prepare(state, q).n_tokens == 8192


@pytest.mark.parametrize("questions, message", [
    # choice criteria must map keys to descriptions
    ({"t": {"type": "choice", "criteria": ["a", "b"]}}, r"question 't': choice criteria must be an object"),
    # a description must be text, an object, a list or null
    ({"t": {"type": "choice", "criteria": {"a": 3, "b": None}}}, r"question 't': option 'a' has criteria of type int"),
    # keys equal after stripping
    ({"t": {"type": "choice", "criteria": {"a": None, "a ": None}}}, r"question 't': option 2 repeats the key 'a'"),
    # repeated score levels
    ({"u": {"type": "score", "criteria": ["low", "low"]}}, r"question 'u': option 2 repeats the level description"),
    # a score needs a list
    ({"u": {"type": "score", "criteria": {"a": "low"}}}, r"question 'u': score criteria must be a list"),
    # noul criteria keys
    ({"p": {"type": "noul", "criteria": {"yes": "x"}}}, r"question 'p': noul criteria are optional"),
    # unknown type, unknown field
    ({"p": {"type": "rank", "criteria": {}}}, r"question 'p': `type` must be one of choice, score, noul"),
    ({"p": {"type": "noul", "text": "?"}}, r"question 'p': unknown field\(s\) \['text'\]"),
    # one option is not a question
    ({"t": {"type": "choice", "criteria": {"a": None}}}, r"question 't': 1 option\(s\)"),
    # no questions
    ({}, r"`questions` maps names to questions"),
])
def test_bad_questions_are_refused_naming_the_question(scorer, questions, message):
    with pytest.raises(OptionRequestError, match=message):
        scorer.prepare(STATE, questions)


def test_every_bad_question_is_listed_at_once():
    with pytest.raises(OptionRequestError) as err:
        parse_questions({"a": {"type": "x"}, "ok": POOL["page"], "b": {"type": "choice"}})
    assert "question 'a'" in str(err.value) and "question 'b'" in str(err.value) and "'ok'" not in str(err.value)


@pytest.mark.parametrize("state", ["", "   \n", {}, [], None])
def test_empty_state_is_refused(scorer, state):
    with pytest.raises(OptionRequestError, match="state"):
        scorer.prepare(state, {"p": POOL["page"]})


def test_duplicate_keys_in_request_json_are_refused():
    body = '{"state": "s", "questions": {"p": {"type": "noul"}, "p": {"type": "noul"}}}'
    with pytest.raises(OptionRequestError, match="duplicate question 'p'"):
        load_request(body)
    body = '{"state": "s", "questions": {"t": {"type": "choice", "criteria": {"a": null, "a": "x"}}}}'
    with pytest.raises(OptionRequestError, match="duplicate key 'a'"):
        load_request(body)
    state, questions = load_request(json.dumps({"state": "s", "questions": {"p": {"type": "noul"}}}))
    assert state == "s" and list(questions) == ["p"]


def test_request_text_cannot_write_the_marker(scorer):
    enc = scorer.prepare(f"a {scorer.tokenizer.eos_token} b", {"p": POOL["page"]})
    assert scorer.marker not in enc.state
    assert all(opt.count(scorer.marker) == 1 and opt[-1] == scorer.marker for opt in enc.questions[0].options)
    assert torch.is_tensor(scorer.outputs(enc).logits)


def test_decide_serves_the_letter_deciders_interface(scorer):
    from core.decision import Choice, Noul, Score
    from core.decision.evaluation.reports import probabilities

    qs = [Choice("Which team?", ["billing", "security"]), Score("How urgent?", ["low", "high"]), Noul("Page?")]
    answers = scorer.decide(STATE, qs)
    assert [a.kind for a in answers] == ["choice", "score", "noul"] and list(answers[0].probs) == ["billing", "security"]
    direct = _probs(scorer, {"t": {"type": "choice", "instructions": "Which team?",
                                   "criteria": {"billing": "billing", "security": "security"}}})["t"]
    assert max(abs(a - b) for a, b in zip(answers[0].probs.values(), direct)) <= 1e-6

    class Item:  # the two fields reports.probabilities reads, plus the question
        def __init__(self, q):
            self.context_id, self.state, self.question = "c", STATE, q

    assert len(probabilities(scorer, [Item(q) for q in qs])[2]) == 2
