"""Decisions tab handlers, called directly (no server): picker, builder, Ask, bad input, API."""

import gradio as gr
import pytest
import torch

from demo import decision_handlers as h
from tests.fixtures.tiny_decision import export_models

N_ERRORS = 4 + h.MAX_QUESTIONS  # state, model, model_b, builder, then one per row


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    torch.set_num_threads(1)
    return str(export_models(tmp_path_factory.mktemp("decision-models")))


def _fields(rows):
    values = []
    for i in range(h.MAX_QUESTIONS):
        values += list(rows[i]) if i < len(rows) else ["choice", "", ""]
    return values


def _errors(out) -> dict[int, str]:
    return {i: u["value"] for i, u in enumerate(out[:N_ERRORS]) if u["visible"]}


def test_model_choices_list_local_and_shipped(models_dir):
    a, b, note = h.model_choices(models_dir)
    keys = [k for _, k in a["choices"]]
    assert keys[:2] == ["tiny-a", "tiny-b"] and "decision-rlcd" in keys
    assert a["value"] == "tiny-a" and b["value"] == "" and b["choices"][0] == ("(none)", "")
    assert ("decision-rlcd (not available)", "decision-rlcd") in a["choices"]  # not trained in this checkout
    assert note.startswith("✓")
    assert "not trained yet" in h.model_note(models_dir, "decision-rlcd")


def test_example_then_ask_two_models_side_by_side(models_dir):
    state, n, *rest = h.load_example("Support ticket")
    fields = rest[h.MAX_QUESTIONS:]
    assert n == 3 and [u["visible"] for u in rest[:h.MAX_QUESTIONS]] == [True] * 3 + [False] * 3
    out = h.ask(models_dir, "tiny-a", "tiny-b", state, n, *fields)
    assert _errors(out) == {}
    fig, table, latency, raw = out[N_ERRORS:]
    assert set(raw) == {"tiny-a", "tiny-b"} and list(raw["tiny-a"]) == ["q1", "q2", "q3"]
    assert len(table) == 6 and set(table["model"]) == {"tiny-a", "tiny-b"}
    assert {t.name for t in fig.data} == {"tiny-a", "tiny-b"} and len(fig.data) == 6
    assert "tiny-a" in latency and " ms" in latency
    chosen = [t for t in fig.data if t.name == "tiny-a"][0]
    star = [txt for txt in chosen.text if txt.startswith("★")]
    assert len(star) == 1  # exactly one option marked chosen per question and model
    assert "p3_low" not in raw["tiny-a"]["q2"] and "score" in raw["tiny-a"]["q2"]
    assert "p_true" in raw["tiny-a"]["q3"]


TWENTY_SEVEN = "\n".join(f"option {i}" for i in range(27))


@pytest.mark.parametrize("state, rows, model, where, message", [
    ("ok state", [("choice", "Which?", "")], "tiny-a", 4, "0 option(s)"),                   # no options
    ("ok state", [("choice", "Which?", "just one")], "tiny-a", 4, "1 option(s)"),           # one option
    ("ok state", [("choice", "Which?", TWENTY_SEVEN)], "tiny-a", 4, "27 options"),           # 27 options
    ("ok state", [("choice", "Which?", "a"), ("choice", "Which?", "x\ny\nx")], "tiny-a", 5, "duplicates"),
    ("", [("choice", "Which?", "a\nb")], "tiny-a", 0, "the state is empty"),                  # empty state
    ("word " * 3000, [("choice", "Which?", "a\nb")], "tiny-a", 0, "this model takes at most"),  # over the limit
    ("ok state", [("choice", "Which?", "a\nb")], "decision-rlcd", 1, "not trained yet"),       # unavailable
    ("ok state", [("choice", "Which?", "a\nb")], "", 1, "pick a decision model"),             # none picked
    ("ok state", [("noul", "Page now", "")], "tiny-a", 4, "phrased as a question"),            # noul needs '?'
])
def test_bad_input_is_named_next_to_its_field(models_dir, state, rows, model, where, message):
    out = h.ask(models_dir, model, "", state, len(rows), *_fields(rows))
    errors = _errors(out)
    assert where in errors and message in errors[where], errors
    assert out[-1] == {}  # no answers shown beside an error
    # the tab keeps working: the next good request answers
    good = h.ask(models_dir, "tiny-a", "", "A customer was charged twice.", 1,
                 *_fields([("choice", "Which team?", "billing\nsecurity")]))
    assert _errors(good) == {} and set(good[-1]["tiny-a"]["q1"]["probabilities"]) == {"billing", "security"}


def test_state_preview_shows_a_record():
    err, record = h.state_preview('{"ticket": "late", "tier": 2}')
    assert not err["visible"] and record["visible"]
    assert record["value"].values.tolist() == [["ticket", "late"], ["tier", "2"]]
    err, record = h.state_preview('{"ticket": ')
    assert err["visible"] and "not valid JSON" in err["value"] and not record["visible"]
    err, record = h.state_preview("")
    assert not err["visible"]  # an empty box is not an error until Ask


def test_add_and_remove_questions_shift_rows():
    n, *vis = h.add_question(1)
    assert n == 2 and [u["visible"] for u in vis] == [True, True] + [False] * (h.MAX_QUESTIONS - 2)
    assert h.add_question(h.MAX_QUESTIONS)[0] == h.MAX_QUESTIONS
    fields = _fields([("choice", "one?", "a\nb"), ("score", "two?", "lo\nhi"), ("noul", "three?", "")])
    n, *rest = h.remove_question(1, 3, *fields)
    values = rest[h.MAX_QUESTIONS:]
    assert n == 2 and values[:6] == ["choice", "one?", "a\nb", "noul", "three?", ""]
    assert values[6:9] == ["choice", "", ""]


def test_score_api_matches_core_and_refuses_bad_input(models_dir):
    questions = {"team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": "security"}},
                 "lvl": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "high"]},
                 "page": {"type": "noul", "instructions": "Page now?"}}
    out = h.score_api(models_dir, "tiny-a", {"ticket": "charged twice"}, questions)
    assert list(out["answers"]) == ["team", "lvl", "page"] and out["usage"]["questions"] == 3
    decider = h.CACHE.get(next(e for e in h.models.entries(models_dir) if e.key == "tiny-a"))
    core = decider.score({"ticket": "charged twice"}, questions)
    core["usage"]["decider_path"] = core["usage"].pop("path")  # see score_api: gradio_client and "path"
    assert out == core
    with pytest.raises(gr.Error, match="at least 2"):
        h.score_api(models_dir, "tiny-a", "s", {"q": {"type": "choice", "instructions": "Which?", "criteria": {"a": "x"}}})
    with pytest.raises(gr.Error, match="unknown model"):
        h.score_api(models_dir, "nope", "s", questions)
    with pytest.raises(gr.Error, match="state is empty"):
        h.score_api(models_dir, "tiny-a", "  ", questions)
