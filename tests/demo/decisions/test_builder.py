"""The Decisions tab's core: builder rows -> typed questions, state parsing, limits, one Ask."""

import pytest
import torch

from core.decision import Decider, Limits, system_one
from core.decision.questions import QuestionError
from core.decision.random_model import letter_tokenizer, random_body, random_rows
from demo.decisions.builder import QuestionRow, ask, build_questions, parse_options, parse_state, reading
from demo.decisions.examples import EXAMPLES, find_example

TWENTY_SEVEN = "\n".join(f"option {i}" for i in range(27))


@pytest.fixture(scope="module")
def decider():
    torch.set_num_threads(1)
    tok = letter_tokenizer()
    body = random_body(len(tok), seed=0, hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8)
    return Decider(body, random_rows(32, seed=1), tok, limits=Limits(max_state_tokens=80, max_suffix_tokens=60))


@pytest.mark.parametrize("kind, text, expected", [
    ("choice", "billing\n security \n\n", ["billing", "security"]),            # plain lines, blanks dropped
    ("choice", "BIL: billing\nSEC: security", {"BIL": "billing", "SEC": "security"}),  # every line a pair
    ("choice", "BIL: billing\njust text", ["BIL: billing", "just text"]),      # mixed: plain options
    ("choice", "Note that: x\ny", ["Note that: x", "y"]),                      # a key holds no spaces
    ("score", "low\nhigh", ["low", "high"]),                                    # levels keep their order
    ("noul", "", None),                                                         # yes/no needs no options
    ("noul", "True: page\nfalse: wait", {"true": "page", "false": "wait"}),    # notes, any case
])
def test_parse_options(kind, text, expected):
    assert parse_options(kind, text) == expected


@pytest.mark.parametrize("kind, text, message", [
    ("choice", "k: a\nk: b", "used twice"),     # duplicate keys are refused, not merged
    ("noul", "yes: x", "true: ..."),            # only true/false notes
])
def test_parse_options_refuses(kind, text, message):
    with pytest.raises(QuestionError, match=message):
        parse_options(kind, text)


@pytest.mark.parametrize("options, message", [
    ("", "0 option(s)"),                         # no options
    ("only one", "1 option(s)"),                 # one option
    (TWENTY_SEVEN, "27 options; at most 26"),    # one too many for the letters A..Z
    ("same\nother\nsame", "duplicates option 1"),  # duplicate options
    ("a: x\nb: x", "duplicates option 1"),       # duplicate descriptions under different keys
])
def test_bad_options_get_a_message_for_their_row(options, message):
    rows = [QuestionRow("choice", "Fine question?", "yes\nno"), QuestionRow("choice", "Which?", options)]
    built = build_questions(rows)
    assert list(built.questions) == ["q1"] and list(built.errors) == ["q2"]
    assert message in built.errors["q2"] and not built.errors["q2"].startswith("question 'q2'")
    assert not built.ok


def test_build_questions_types_and_blank_rows():
    rows = [QuestionRow("choice", "Which team?", "BIL: billing\nSEC: security"), QuestionRow("choice", "", ""),
            QuestionRow("score", "How urgent?", "low\nmid\nhigh"), QuestionRow("noul", "Page now?", "")]
    built = build_questions(rows)
    assert built.ok and list(built.questions) == ["q1", "q3", "q4"]  # ids follow row positions
    assert built.questions["q1"]["criteria"] == {"BIL": "billing", "SEC": "security"}
    assert built.questions["q3"] == {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]}
    assert "criteria" not in built.questions["q4"]
    assert "phrased as a question" in build_questions([QuestionRow("noul", "Page now", "")]).errors["q1"]
    assert "unknown question type" in build_questions([QuestionRow("poll", "Which?", "a\nb")]).errors["q1"]


@pytest.mark.parametrize("text, expected", [
    ("  A customer writes.  ", "A customer writes."),                # text is stripped
    ('{"ticket": "late", "tier": 2}', {"ticket": "late", "tier": 2}),  # a JSON object is a record
    ("[1, 2]", "[1, 2]"),                                             # other text stays text
])
def test_parse_state(text, expected):
    assert parse_state(text) == expected


@pytest.mark.parametrize("text, message", [
    ("", "the state is empty"),
    ("   \n ", "the state is empty"),
    ('{"ticket": ', "not valid JSON"),
    ("{}", "state is empty"),  # a record with no fields renders to nothing
    ('{"a":' + "[" * 100_000, "nested too deeply"),  # json recurses once per bracket: a RecursionError
])
def test_parse_state_refuses(text, message):
    with pytest.raises(QuestionError, match=message):
        parse_state(text)


def test_request_errors_name_the_part_over_the_limit(decider):
    q = {"q1": {"type": "choice", "instructions": "Which?", "criteria": {"a": "x", "b": "y"}}}
    assert decider.limit_errors("short state", q) == {}
    errors = decider.limit_errors("word " * 200, q)
    assert list(errors) == ["state"] and "at most 80" in errors["state"]
    long_q = {"q1": {"type": "choice", "instructions": "Which " * 80 + "?", "criteria": {"a": "x", "b": "y"}}}
    errors = decider.limit_errors("short state", long_q)
    assert list(errors) == ["q1"] and "at most 60" in errors["q1"]
    huge_q = {"q1": {"type": "choice", "instructions": "Which " * 20_000 + "?", "criteria": {"a": "x", "b": "y"}}}
    errors = decider.limit_errors("short state", huge_q)  # the state once read as over a limit of -119,000
    assert list(errors) == ["q1"] and "characters, more than 60 tokens can hold" in errors["q1"]


def test_a_part_no_tokenization_fits_is_named_untokenized(decider, monkeypatch):
    """A state of megabytes is refused from its length in characters: tokenizing it took seconds an edit."""
    monkeypatch.setattr(decider, "overruns", lambda *a: pytest.fail("tokenized a hopeless request"))
    q = {"q1": {"type": "choice", "instructions": "Which?", "criteria": {"a": "x", "b": "y"}}}
    errors = decider.limit_errors("word " * 800_000, q)  # 3,999,999 once stripped
    assert list(errors) == ["state"] and "the state is 3,999,999 characters, more than 80 tokens" in errors["state"]
    assert errors["state"].endswith("Shorten it (nothing is cut silently).") and "truncate" not in errors["state"]


def test_reading_margin_and_close_flag():
    close = reading("q1", {"type": "choice", "probabilities": {"a": 0.48, "b": 0.45, "c": 0.07}})
    clear = reading("q1", {"type": "choice", "probabilities": {"a": 0.2, "b": 0.8}})
    assert close.close and close.margin == pytest.approx(0.03)
    assert not clear.close and clear.margin == pytest.approx(0.6)


def test_ask_scores_every_example_under_two_models(decider):
    other = Decider(decider.body, random_rows(32, seed=5), decider.tokenizer)
    for ex in EXAMPLES:
        result = ask({"a": other, "b": Decider(decider.body, random_rows(32, seed=6), decider.tokenizer)},
                     ex.state, ex.rows)
        assert not result.errors, (ex.name, result.errors)
        assert set(result.answers) == {"a", "b"} and set(result.seconds) == {"a", "b"}
        for answers in result.answers.values():
            assert list(answers) == list(result.questions)
            for ans in answers.values():
                assert sum(system_one.probabilities_of(ans).values()) == pytest.approx(1.0, abs=1e-5)
        assert result.answers["a"] != result.answers["b"]  # different letter rows, different beliefs


def test_ask_stops_before_any_model_on_errors(decider):
    ex = find_example("Support ticket")
    result = ask({"m": decider}, "", ex.rows)
    assert list(result.errors) == ["state"] and not result.answers
    result = ask({"m": decider}, "state", [QuestionRow("choice", "", "")])
    assert "add at least one question" in result.errors["questions"]
    result = ask({"m": decider}, "word " * 200, ex.rows)  # over the 80-token prefix limit
    assert "state" in result.errors and not result.answers


def test_ask_parses_each_question_once(decider, monkeypatch):
    import transformers.decision

    calls = []
    real = transformers.decision.parse_questions
    monkeypatch.setattr(transformers.decision, "parse_questions", lambda specs, cfg: calls.append(list(specs)) or
                        real(specs, cfg))
    ex = find_example("Support ticket")
    models = {k: Decider(decider.body, random_rows(32, seed=s), decider.tokenizer) for k, s in (("a", 5), ("b", 6))}
    result = ask(models, ex.state, ex.rows)
    assert not result.errors and set(result.answers) == {"a", "b"}
    assert calls == [[f"q{i + 1}"] for i in range(len(ex.rows))]  # one parse per row, shared by both models
