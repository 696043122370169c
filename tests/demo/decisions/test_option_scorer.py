"""The Decisions tab with the shipped option scorer: picker, Ask (head confidence beside max p, 255
options, its own limits), Calibration, Probe and /score, called through the handlers."""

import gradio as gr
import pytest
import torch

from core.decision.evaluation.evalsets import SOURCES
from demo.decisions import handlers as h

N_ERRORS = 4 + h.MAX_QUESTIONS  # state, model, model_b, builder, then one per row
TICKET = "Ticket 4471\nCustomer tier: BUSINESS\nMessage: I was charged twice."
MANY = "\n".join(f"o{i}: option number {i}" for i in range(255))


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    torch.set_num_threads(1)


def _fields(rows):
    return [v for i in range(h.MAX_QUESTIONS) for v in (rows[i] if i < len(rows) else ("choice", "", ""))]


def _errors(out) -> dict[int, str]:
    return {i: u["value"] for i, u in enumerate(out[:N_ERRORS]) if u["visible"]}


def test_the_picker_offers_it_with_its_design():
    labels, optional, _ = h.picker_choices("")
    assert ("option-scorer · option scorer (confidence head)", "option-scorer") in labels
    assert ("decision-rlcd", "decision-rlcd") in labels  # the letter models keep their plain label
    assert h.model_note("", "option-scorer").startswith("✓ option scorer (confidence head) · shipped")
    assert h.model_note("", "decision-rlcd").startswith("✓ letter readout · shipped")
    note = h.model_note("", "decision-smollm2-pooled-rlcd")  # the design once, where the model loads from a sentence
    assert note.count("pooled readout (frozen real base)") == 1 and ". Ready to load from checkpoints/" in note
    assert ("\n\nmeasured: accuracy 0.714 [0.687, 0.742], ECE 0.099 [0.079, 0.125] on 1,200 rows, natural test tickets "
            "(families no training row used) (`results/decision_smollm2_pooled_eval.json`)") in note


def test_ask_shows_the_heads_confidence_beside_max_p_next_to_a_letter_model():
    rows = [("choice", "Which team should handle this ticket?", "BIL: billing\nSEC: security"),
            ("noul", "Should someone be paged now?", "")]
    out = h.ask("", "option-scorer", "decision-rlcd", TICKET, 2, *_fields(rows))
    assert _errors(out) == {}
    fig, table, latency, raw = out[N_ERRORS:]
    mine = table[table["model"] == "option-scorer"]
    assert list(mine["confidence from"]) == ["confidence head"] * 2
    assert list(table[table["model"] == "decision-rlcd"]["confidence from"]) == ["rescaled max p", ""]  # noul: none
    for (_, row), qid in zip(mine.iterrows(), ["q1", "q2"]):
        ans = raw["option-scorer"][qid]
        assert row["System One confidence"] == round(ans["confidence"], 3) and row["max p"] == round(ans["max_p"], 3)
    assert raw["option-scorer"]["q1"]["confidence"] != raw["option-scorer"]["q1"]["max_p"]
    assert "one pass path" in latency and "option-scorer: 0% of the words" in latency  # familiarity applies


def test_a_255_option_question_works_alone_and_letter_models_say_26():
    out = h.ask("", "option-scorer", "", "Ticket 1: charged twice", 1, *_fields([("choice", "Which one?", MANY)]))
    assert _errors(out) == {}
    assert len(out[-1]["option-scorer"]["q1"]["probabilities"]) == 255
    assert abs(sum(out[-1]["option-scorer"]["q1"]["probabilities"].values()) - 1) < 1e-9
    plain = "\n".join(f"choice {i}" for i in range(255))  # one option per line: each is its own key
    assert _errors(h.ask("", "option-scorer", "", "Ticket 1", 1, *_fields([("choice", "Which?", plain)]))) == {}
    for a, b in (("decision-rlcd", ""), ("option-scorer", "decision-rlcd")):  # a letter model asked: 26
        errs = _errors(h.ask("", a, b, "Ticket 1: charged twice", 1, *_fields([("choice", "Which one?", MANY)])))
        assert list(errs) == [4] and "255 options; at most 26 for the letter-readout models" in errs[4]
    too_many = MANY + "\no255: one more"
    errs = _errors(h.ask("", "option-scorer", "", "Ticket 1", 1, *_fields([("choice", "Which?", too_many)])))
    assert list(errs) == [4] and "256 option(s); a choice question takes 2 to 255" in errs[4]


@pytest.mark.parametrize("state, rows, where, message", [
    ("word " * 9000, [("choice", "Which team?", "BIL: billing\nSEC: security")], 3,
     "over the 8,192-token limit; nothing was truncated"),                  # the whole request's token limit
    ("Ticket 1", [("choice", "Which team?", "billing\nbilling")], 4, "listed twice"),  # plain duplicate options
    ("Ticket 1", [("choice", "Which team?", "only one")], 4, "1 option(s)"),           # one option
])
def test_its_own_limits_are_clear_errors_and_no_model_runs(state, rows, where, message):
    out = h.ask("", "option-scorer", "", state, len(rows), *_fields(rows))
    errs = _errors(out)
    assert list(errs) == [where] and message in errs[where]
    assert out[-1] == {}  # no answers


def test_calibration_and_probe_accept_it():
    out = h.calibrate("", "option-scorer", "decision-rlcd", SOURCES[0], 10, None, False)
    assert not out[0]["visible"] and not out[1]["visible"]
    table = out[3]
    assert list(table.columns) == ["metric", "option-scorer", "decision-rlcd", h.PAIRED_COLUMN]
    accuracy = float(table.loc[table["metric"] == "accuracy", "option-scorer"].iloc[0].split()[0])
    assert accuracy > 0.6  # the trained scorer, not chance (two to four options here)
    _, _, _, probe = h.probe("", "option-scorer", "", 20)
    one_cue = float(probe.loc[probe["group"] == "one-cue department", "option-scorer"].iloc[0].split()[0])
    assert probe["group"].tolist()[0] == "one-cue department" and one_cue > 0.8


def test_score_api_answers_with_it_and_refuses_its_limits():
    questions = {"team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": "security"}},
                 "page": {"type": "noul", "instructions": "Page now?"}}
    out = h.score_api("", "option-scorer", TICKET, questions)
    assert list(out["answers"]) == ["team", "page"] and out["usage"]["decider_path"] == "one pass"
    core = h.CACHE.decider(h.lists.find_decision(None, "option-scorer")).scorer.score(TICKET, questions)
    for name, ans in core["answers"].items():
        assert {k: out["answers"][name][k] for k in ans} == ans  # the scorer's own answer, extras added
    whole = h.score_api("", "option-scorer", {"state": TICKET, "questions": questions}, {})
    assert whole["answers"] == out["answers"] and not out["familiarity"]["out_of_distribution"]
    with pytest.raises(gr.Error, match="8,192-token limit"):
        h.score_api("", "option-scorer", "word " * 9000, questions)
    big = {"q": {"type": "choice", "instructions": "Which?", "criteria": {f"k{i}": f"o {i}" for i in range(256)}}}
    with pytest.raises(gr.Error, match="2 to 255"):
        h.score_api("", "option-scorer", "s", big)
