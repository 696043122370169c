"""Question validation (messages name the question and option), answer fields, typed criteria."""

import json
import math

import pytest

from core.decision.questions import (
    Choice, Noul, QuestionError, Score, entropy_confidence, make_answer, question_from_dict, render_state,
)


@pytest.mark.parametrize("build, fragment", [
    # fewer than 2 options
    (lambda: Choice("Which?", ["only"], qid="q1"), "question 'q1': 1 option(s)"),
    # more than 26 options
    (lambda: Choice("Which?", [f"o{i}" for i in range(27)], qid="q2"), "question 'q2': 27 options; at most 26"),
    # an empty option, named by position
    (lambda: Score("How much?", ["low", "  ", "high"], qid="s"), "question 's': option 2 is empty"),
    # a multi-line option
    (lambda: Choice("Which?", ["a", "b\nc"], qid="m"), "question 'm': option 2"),
    # duplicates after strip name both options
    (lambda: Choice("Which?", ["red", " red "], qid="d"), "option 2 ('red') duplicates option 1"),
    # empty question text
    (lambda: Choice("  ", ["a", "b"], qid="e"), "question 'e': the question text is empty"),
    # noul with other options
    (lambda: Noul("Is it?", ("yes", "no"), qid="n"), "exactly ['true', 'false']"),
    # noul not phrased as a question
    (lambda: Noul("Page the engineer", qid="n2"), "must be phrased as a question"),
    # no qid: the message quotes the question text
    (lambda: Choice("Which colour is it?", ["a"]), "question 'Which colour is it?'"),
    # unknown primitive from a dict
    (lambda: question_from_dict("u", {"kind": "multi", "text": "x", "options": ["a", "b"]}), "unknown primitive 'multi'"),
    # a string instead of a list of options
    (lambda: Choice("Which?", "ab", qid="s2"), "options must be a list"),
])
def test_validation_messages(build, fragment):
    with pytest.raises(QuestionError) as err:
        build()
    assert fragment in str(err.value)


def test_options_are_stripped_and_order_kept():
    q = Choice("Which?", [" b ", "a"])
    assert q.options == ("b", "a")


@pytest.mark.parametrize("probs, expected", [
    ([0.5, 0.5], 0.0),  # uniform over 2
    ([1.0, 0.0, 0.0], 1.0),  # one-hot; 0 log 0 = 0
    ([0.25] * 4, 0.0),  # uniform over 4
    ([0.9, 0.1], 1 - (-(0.9 * math.log(0.9) + 0.1 * math.log(0.1))) / math.log(2)),  # by hand
])
def test_entropy_confidence(probs, expected):
    assert entropy_confidence(probs) == pytest.approx(expected, abs=1e-12)


def test_answer_fields_per_primitive():
    c = make_answer(Choice("Which?", ["x", "y", "z"]), [0.2, 0.5, 0.3]).to_dict()
    assert c["value"] == "y" and c["confidence"] == 0.5 and list(c["probs"]) == ["x", "y", "z"]
    assert "score" not in c and "p_true" not in c
    s = make_answer(Score("How?", ["lo", "mid", "hi"]), [0.2, 0.3, 0.5]).to_dict()
    assert s["score"] == pytest.approx((0.3 * 1 + 0.5 * 2) / 2)
    n = make_answer(Noul("Is it?"), [0.3, 0.7]).to_dict()
    assert n["p_true"] == 0.3 and n["confidence"] == 0.7 and n["value"] == "false"
    json.dumps([c, s, n])  # plain JSON


def test_ties_go_to_the_earlier_option():
    assert make_answer(Choice("W?", ["a", "b"]), [0.5, 0.5]).value == "a"


def test_render_state():
    assert render_state({"a": 1, "b": "two", "c": [1, 2]}) == "a: 1\nb: two\nc: [1, 2]"
    with pytest.raises(QuestionError, match="state is empty"):
        render_state("   ")


@pytest.mark.parametrize("make, message", [
    (lambda: Choice("Which\ud800?", ["a", "b"]), r"the question text holds a lone surrogate \(\\ud800\) at character 6"),
    (lambda: Choice("Which?", ["a", "b\udc00"]), r"option 2 holds a lone surrogate \(\\udc00\) at character 2"),
    (lambda: render_state({"ticket": "late\ud800"}), r"the state holds a lone surrogate \(\\ud800\) at character 13"),
])
def test_text_no_tokenizer_can_encode_is_refused_by_name(make, message):
    """JSON's "\\ud800" decodes to a lone surrogate; a tokenizer raised a TypeError on it from deep inside."""
    with pytest.raises(QuestionError, match=message):
        make()
