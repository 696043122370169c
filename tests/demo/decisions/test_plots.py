"""Decisions tab figures: what each one shows, checked on the figure objects."""

import random

from core import calibration as cal
from core.decision import Choice
from core.decision.evaluation.evalsets import EvalItem
from core.decision.evaluation.reports import PUBLISHED_PROBE, model_report, probe_summary
from demo.decisions.plots import answer_figure, empty_figure, probe_figure, reliability_figure, selective_figure
from tests.fixtures.figure_text import PAYLOAD, assert_escaped

A = {"q1": {"type": "choice", "choice": "BIL", "probabilities": {"BIL": 0.7, "SEC": 0.3}},
     "q2": {"type": "noul", "noul": 0.52}}
B = {"q1": {"type": "choice", "choice": "SEC", "probabilities": {"BIL": 0.1, "SEC": 0.9}},
     "q2": {"type": "noul", "noul": 0.2}}
QUESTIONS = {"q1": "Which team?", "q2": "Page now?"}


def test_answer_bars_star_the_chosen_option_and_flag_close_calls():
    fig = answer_figure(QUESTIONS, {"a": A})
    assert len(fig.data) == 2 and [list(t.y) for t in fig.data] == [["BIL", "SEC"], ["true", "false"]]
    assert list(fig.data[0].text) == ["★ 70%", "30%"]
    titles = [a.text for a in fig.layout.annotations]
    assert "close call" not in titles[0] and "⚠ close call" in titles[1]  # 0.52 vs 0.48


def test_two_models_share_each_panel():
    fig = answer_figure(QUESTIONS, {"a": A, "b": B})
    assert [t.name for t in fig.data] == ["a", "a", "b", "b"]
    assert [t.showlegend for t in fig.data] == [True, False, True, False]
    assert list(fig.data[2].text) == ["10%", "★ 90%"]


def test_a_known_answer_is_a_tick_on_each_option_of_its_own_question_only():
    fig = answer_figure(QUESTIONS, {"a": A, "b": B}, {"q1": {"SEC": 0.5, "BIL": 0.5}})
    (tick,) = [t for t in fig.data if t.name == "known answer"]
    assert list(tick.y) == list(fig.data[0].y) and list(tick.x) == [0.5, 0.5] and tick.yaxis == fig.data[0].yaxis
    assert tick.marker.symbol == "line-ns-open" and tick.showlegend
    assert [t.name for t in answer_figure(QUESTIONS, {"a": A}, {}).data] == ["a", "a"]


def test_a_score_questions_known_level_is_ticked_on_its_row():
    """System One keys levels "0".."K-1" and names them in the legend; a known answer names the level."""
    levels = {"type": "score", "score": 1.2, "legend": {"0": "LEVEL_1", "1": "LEVEL_2", "2": "LEVEL_3"},
              "probabilities": {"0": 0.2, "1": 0.4, "2": 0.4}}
    fig = answer_figure({"q1": "Which level?"}, {"a": {"q1": levels}}, {"q1": {"LEVEL_2": 1.0}})
    (tick,) = [t for t in fig.data if t.name == "known answer"]
    assert list(tick.y) == ["0: LEVEL_1", "1: LEVEL_2", "2: LEVEL_3"] and list(tick.x) == [0.0, 1.0, 0.0]


def test_no_answers_gives_a_message_not_an_error():
    assert answer_figure(QUESTIONS, {}).layout.annotations[0].text.startswith("No answers yet")
    assert empty_figure("x").layout.annotations[0].text == "x"


def _report(name, seed):
    rng = random.Random(seed)
    items, probs = [], []
    for i in range(80):
        p = rng.uniform(0.5, 1.0)
        items.append(EvalItem(f"c{i}", "s", Choice("Which?", ["a", "b"]), 0 if rng.random() < p else 1,
                              ("two_cue", "department") if i % 2 else ("escalate",)))
        probs.append([p, 1 - p])
    return model_report(name, items, probs), items, probs


def test_reliability_diagram_has_bars_gap_counts_and_diagonal():
    rep, items, probs = _report("m", 0)
    fig = reliability_figure([rep])
    names = [t.name for t in fig.data]
    assert names == ["m: accuracy", "m: gap to confidence", "m: rows", "perfect calibration"]
    acc, gap, counts = fig.data[:3]
    full = [b for b in rep.bins if b.count]
    assert list(acc.y) == [b.accuracy for b in full]
    assert list(acc.error_y.array) == [b.acc_hi - b.accuracy for b in full]  # Wilson upper arm
    assert list(gap.base) == list(acc.y)
    assert sum(counts.y) == len(items) and counts.yaxis == "y2"  # counts in the second panel
    two = reliability_figure([rep, _report("n", 1)[0]])
    assert len(two.data) == 7


def test_selective_curve_names_aurc_and_probe_bars_show_ideals():
    rep, items, probs = _report("m", 2)
    fig = selective_figure([rep])
    assert list(fig.data[0].x) == cal.selective_curve(probs, [it.label for it in items]).coverage
    aurc = rep.metrics["aurc"]
    assert f"(AURC {aurc.mean:.3f} [{aurc.lo:.3f}, {aurc.hi:.3f}])" in fig.data[0].name  # the legend gives its interval
    s = probe_summary("m", items, probs)
    fig = probe_figure([s], PUBLISHED_PROBE)
    assert [t.name for t in fig.data][:2] == ["m", "ideal"]
    assert list(fig.data[1].y) == [1.0, 0.5, 0.9]
    assert "(ideal 0.50)" in fig.layout.xaxis.ticktext[1]
    assert {t.name for t in fig.data[2:]} == {f"published {a}" for a in PUBLISHED_PROBE}


def test_model_names_option_keys_and_questions_are_escaped_in_every_figure():
    answers = {PAYLOAD: {"q1": {"type": "choice", "choice": PAYLOAD, "probabilities": {PAYLOAD: 0.7, "SEC": 0.3}}}}
    assert_escaped(answer_figure({"q1": PAYLOAD}, answers))  # legend, hover, option keys, subplot titles
    report, items, probs = _report(PAYLOAD, 0)
    assert_escaped(reliability_figure([report]))  # legend entries of the model
    assert_escaped(selective_figure([report]))
    assert_escaped(probe_figure([probe_summary(PAYLOAD, items, probs)]))
