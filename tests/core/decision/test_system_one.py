"""System One shapes: our answers against transformers.decision's own parser and Question.answer."""

import random

import pytest
import torch
from transformers.decision import DecisionConfig, parse_questions

from core.decision import system_one
from core.decision.questions import QuestionError

QUESTIONS = {
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": None}},
    "prio": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
    "page": {"type": "noul", "instructions": "Page someone now?", "criteria": {"true": "wake on-call"}},
}


def _theirs(name, spec, probs):
    return parse_questions({name: spec}, DecisionConfig())[0].answer(probs)


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_every_field_and_both_confidences_match_question_answer(name):
    rng = random.Random(0)
    spec = QUESTIONS[name]
    q = system_one.question(name, spec)
    for _ in range(50):
        raw = [rng.random() ** 3 for _ in q.options]
        probs = [p / sum(raw) for p in raw]
        ours, theirs = system_one.answer(q, probs), _theirs(name, spec, probs)
        for key, value in theirs.items():  # every System One field, same value
            assert ours[key] == (pytest.approx(value, abs=1e-12) if isinstance(value, float) else value), key
        assert set(ours) - set(theirs) <= set(system_one.EXTRAS)  # the rest are our documented extras
        assert ours["max_p"] == pytest.approx(max(probs))


@pytest.mark.parametrize("kind, probs, expected", [
    ("choice", [0.5, 0.5], 0.0),            # uniform over 2: no confidence at all
    ("choice", [1.0, 0.0, 0.0], 1.0),       # one-hot
    ("choice", [0.6, 0.2, 0.2], 0.4),       # (0.6 - 1/3) / (2/3)
    ("choice", [0.25, 0.25, 0.5], 0.25),    # max p 0.5: (1/2 - 1/3) / (2/3), a quarter of the way
    ("score", [1 / 3] * 3, 0.0),            # uniform: best is level 0 (ties go first), E|i - 0| = 1 > 2/3, clipped
    ("score", [0.0, 1.0, 0.0], 1.0),        # one-hot level
    ("score", [0.5, 0.0, 0.5], 0.0),        # split between the ends: distance 1 > uniform 2/3, clipped
    ("choice", [1.0], 1.0),                 # one option
])
def test_system_one_confidence_table(kind, probs, expected):
    assert system_one.system_one_confidence(kind, probs) == pytest.approx(expected, abs=1e-12)


def test_max_p_is_not_system_one_confidence():
    q = system_one.question("team", QUESTIONS["team"])
    ans = system_one.answer(q, [0.75, 0.25])
    assert ans["max_p"] == 0.75 and ans["confidence"] == pytest.approx(0.5)


@pytest.mark.parametrize("specs", [
    {"q7": {"type": "rank", "instructions": "x", "criteria": {}}},                  # unknown type
    {"q7": {"type": "choice", "instructions": "x"}},                                 # choice without criteria
    {"q7": {"type": "choice", "instructions": "x", "criteria": ["a", "b"]}},        # choice criteria as a list
    {"q7": {"type": "score", "instructions": "x", "criteria": {"a": "b"}}},         # score criteria as a map
    {"q7": {"type": "noul", "instructions": "x?", "criteria": {"maybe": "x"}}},     # noul keys other than true/false
    {"q7": {"type": "choice", "criteria": {"a": "1", "b": "2"}, "extra": 1}},       # unknown field
    {"q7": "not an object"},                                                         # not a question at all
    {"q7": {"type": "choice", "criteria": {f"o{i}": None for i in range(27)}}},      # more options than labels
    {},                                                                              # no questions
    {"ok": QUESTIONS["team"], "q7": {"type": "score", "criteria": []}},              # one bad among good
])
def test_validation_errors_are_parse_questions_own(specs):
    with pytest.raises(ValueError) as theirs:
        parse_questions(specs, DecisionConfig())
    with pytest.raises(QuestionError) as ours:
        system_one.questions(specs)
    assert str(ours.value) == str(theirs.value)
    if specs:
        assert "'q7'" in str(ours.value)


def test_a_request_asks_at_most_max_questions():
    """Each request's work is bounded: a served model answers one request at a time."""
    page = QUESTIONS["page"]
    assert len(system_one.questions({f"q{i}": page for i in range(system_one.MAX_QUESTIONS)})) == system_one.MAX_QUESTIONS
    with pytest.raises(QuestionError, match=f"2,000 questions; at most {system_one.MAX_QUESTIONS} per request"):
        system_one.questions({f"q{i}": page for i in range(2000)})


@pytest.mark.parametrize("spec, fragment", [
    ({"type": "choice", "instructions": "x", "criteria": {"a": "same", "b": "same"}}, "duplicates option 1"),
    ({"type": "choice", "instructions": "Which?", "criteria": {"only": None}}, "1 option(s)"),
    ({"type": "noul", "instructions": "Page now"}, "phrased as a question"),
    ({"type": "choice", "criteria": {"a": None, "b": None}}, "question text is empty"),
])
def test_requests_transformers_accepts_but_our_readout_cannot_ask_name_the_question(spec, fragment):
    parse_questions({"q7": spec}, DecisionConfig())  # valid System One
    with pytest.raises(QuestionError) as err:
        system_one.question("q7", spec)
    assert "question 'q7'" in str(err.value) and fragment in str(err.value)


def test_primitives_read_descriptions_keys_and_notes():
    team = system_one.question("team", QUESTIONS["team"])
    assert team.options == ("BIL", "SEC") and team.primitive.options == ("billing", "SEC")
    prio = system_one.question("prio", QUESTIONS["prio"])
    assert prio.options == ("0", "1", "2") and prio.primitive.options == ("low", "mid", "high")
    page = system_one.question("page", QUESTIONS["page"])
    assert page.options == ("true", "false") and "true means: wake on-call" in page.primitive.text
    rich = system_one.question("r", {"type": "choice", "instructions": {"ask": "which?"},
                                     "criteria": {"a": {"x": 1}, "b": "plain"}})
    assert rich.primitive.text == '{"ask": "which?"}' and rich.primitive.options == ('{"x": 1}', "plain")


def test_decider_score_takes_the_whole_request_and_answers_in_shape(make_decider):
    decider = make_decider()
    request = {"state": {"ticket": "charged twice"}, "questions": QUESTIONS}
    whole, parts = decider.score(request), decider.score(request["state"], request["questions"])
    assert whole == parts and list(whole["answers"]) == list(QUESTIONS)
    assert whole["usage"]["output_tokens"] == 0 and whole["usage"]["input_tokens"] > 0
    for name, ans in whole["answers"].items():
        q = system_one.question(name, QUESTIONS[name])
        probs = system_one.option_probabilities(q, ans)
        theirs = _theirs(name, QUESTIONS[name], probs)
        assert set(theirs) <= set(ans) and ans["type"] == theirs["type"]
    direct = decider.decide(request["state"], [system_one.question(n, s).primitive for n, s in QUESTIONS.items()])
    assert list(direct[0].probs.values()) == pytest.approx(list(whole["answers"]["team"]["probabilities"].values()),
                                                           abs=1e-6)
    with pytest.raises(QuestionError, match="Question 'bad'"):
        decider.score({"state": "s", "questions": {"bad": {"type": "rank"}}})
    assert decider.score(__import__("json").dumps(request)) == whole  # its JSON, as the pipeline takes it
    with pytest.raises(QuestionError, match=r'A request is \{"state": \.\.\., "questions"'):
        decider.score({"questions": QUESTIONS})  # no state
    with pytest.raises(QuestionError, match="unknown request field"):
        decider.score({"state": "s", "questions": QUESTIONS, "stream": True})
    assert torch.get_num_threads() == 1
