"""Calibration reports: scoring items through a Decider, metric intervals, temperature, probe."""

import math
import random

import numpy as np
import pytest

from core import calibration as cal
from core.decision import Choice, Noul
from core.decision.evaluation.evalsets import EvalItem
from core.decision.evaluation.reports import (
    FAMILIES, OUTSIDE, RESAMPLES, EvaluationTooLong, clusters_of, evaluate, fit_temperature, metrics_rows,
    model_report, outside_note, probabilities, probe_summary, probe_view, resampling_note, scale, split_contexts,
)
from core.decision.questions import make_answer
from core.stats import bootstrap_mean


class FixedDecider:
    """A decision model that answers from a table: (state, question text) -> probabilities."""

    def __init__(self, table):
        self.table, self.calls = table, 0

    def decide(self, state, questions):
        self.calls += 1
        return [make_answer(q, self.table[(state, q.text)]) for q in questions]


def _items(n_contexts: int, rng: random.Random, temperature: float = 1.0):
    """Contexts with a true 3-way posterior; labels drawn from it; the model reports p^(1/temperature)."""
    items, table = [], {}
    for c in range(n_contexts):
        p = np.array([rng.random() + 0.05 for _ in range(3)])
        p /= p.sum()
        label = rng.choices(range(3), weights=p)[0]
        q = Choice("Which team?", ["billing", "security", "None of the above"])
        items.append(EvalItem(f"c{c}", f"state {c}", q, label, ("two_cue", "department") if c % 2 else ("one_cue", "department")))
        shown = p ** (1 / temperature)
        table[(f"state {c}", q.text)] = (shown / shown.sum()).tolist()
        items.append(EvalItem(f"c{c}", f"state {c}", Noul("Page now?"), c % 2, ("escalate",)))
        table[(f"state {c}", "Page now?")] = [0.9, 0.1]
    return items, FixedDecider(table)


def test_probabilities_share_one_call_per_context():
    items, decider = _items(5, random.Random(0))
    probs = probabilities(decider, items)
    assert decider.calls == 5 and len(probs) == 10
    assert probs[1] == [0.9, 0.1] and sum(probs[0]) == pytest.approx(1.0)


def test_an_evaluation_past_its_time_budget_stops_naming_the_model_and_how_far_it_got():
    items, decider = _items(5, random.Random(0))
    assert len(evaluate({"m": decider}, items, seconds=60).reports) == 1
    with pytest.raises(EvaluationTooLong, match=r"^m: stopped at context 0 of 5: .* \(budget 0 s\)$"):
        evaluate({"m": decider}, items, seconds=0)
    with pytest.raises(EvaluationTooLong, match=r"^m: stopped at context 0 of 5"):
        probe_view({"m": decider}, items, seconds=0)
    assert decider.calls == 5  # the budgeted runs stopped before any model call


def test_report_numbers_are_core_calibration_numbers():
    items, decider = _items(60, random.Random(1))
    probs = probabilities(decider, items)
    labels = [it.label for it in items]
    rep = model_report("m", items, probs)
    assert rep.metrics["accuracy"].mean == pytest.approx(cal.accuracy(probs, labels))
    assert rep.metrics["ece"].mean == pytest.approx(cal.ece(probs, labels))
    assert rep.metrics["brier"].mean == pytest.approx(cal.brier(probs, labels))
    assert rep.metrics["aurc"].mean == pytest.approx(cal.selective_curve(probs, labels).aurc)
    for key in ("accuracy", "ece", "brier", "classwise_ece", "aurc"):
        iv = rep.metrics[key]
        assert iv.lo <= iv.mean <= iv.hi, key
    assert [b.count for b in rep.bins] == [b.count for b in cal.reliability_bins(probs, labels)]
    nota_rows = [i for i, it in enumerate(items) if it.nota is not None and it.label == it.nota]
    expected = np.mean([int(np.argmax(probs[i])) == items[i].nota for i in nota_rows])
    assert rep.metrics["nota_recall"].mean == pytest.approx(expected)


def test_classwise_ece_ignores_option_order():
    rng = random.Random(2)
    items, decider = _items(40, rng)
    probs = probabilities(decider, items)
    shuffled, sprobs = [], []
    for it, p in zip(items, probs):  # the same beliefs with each choice question's options reversed
        if it.question.kind == "choice":
            q = Choice(it.question.text, list(reversed(it.question.options)))
            shuffled.append(EvalItem(it.context_id, it.state, q, len(p) - 1 - it.label, it.tags))
            sprobs.append(list(reversed(p)))
        else:
            shuffled.append(it)
            sprobs.append(p)
    a, b = model_report("a", items, probs), model_report("b", shuffled, sprobs)
    assert a.metrics["classwise_ece"].mean == pytest.approx(b.metrics["classwise_ece"].mean)


def test_undefined_nota_rates_show_a_dash():
    items = [EvalItem("c0", "s", Noul("Page now?"), 0), EvalItem("c1", "s1", Noul("Page now?"), 1)]
    rep = model_report("m", items, [[0.8, 0.2], [0.3, 0.7]])
    assert math.isnan(rep.metrics["nota_recall"].mean)
    rows = {r[0]: r[1] for r in metrics_rows([rep])}
    assert rows["NOTA recall"] == "—" and rows["accuracy"].startswith("1.000 [")


def test_an_ece_below_its_own_interval_is_marked_and_a_mean_never_is():
    """A set calibrated exactly (ECE 0: 16 of 20 right at 0.8, 12 of 20 at 0.6) reads an ECE above 0 on every
    resample, so its percentile interval sits wholly above the estimate: the cell says so."""
    rows = [(0.8, int(i >= 16)) for i in range(20)] + [(0.6, int(i >= 12)) for i in range(20)]
    items = [EvalItem(f"c{i}", f"s{i}", Noul("Page now?"), label) for i, (_, label) in enumerate(rows)]
    rep = model_report("m", items, [[p, 1 - p] for p, _ in rows])
    ece, acc = rep.metrics["ece"], rep.metrics["accuracy"]
    assert ece.mean == pytest.approx(0.0, abs=1e-12) and ece.lo > 0.0
    cells = {r[0]: r[1] for r in metrics_rows([rep])}
    assert cells["ECE (15 bins)"] == f"{ece.mean:.3f} [{ece.lo:.3f}, {ece.hi:.3f}] {OUTSIDE}"
    assert acc.lo <= acc.mean <= acc.hi and OUTSIDE not in cells["accuracy"]
    assert outside_note(metrics_rows([rep])).startswith(OUTSIDE) and outside_note([["accuracy", cells["accuracy"]]]) == ""


def test_temperature_undoes_overconfidence_on_held_out_contexts():
    items, decider = _items(300, random.Random(3), temperature=0.4)  # the model sharpens its beliefs
    choice = [i for i, it in enumerate(items) if it.question.kind == "choice"]
    sub = [items[i] for i in choice]
    probs = probabilities(decider, sub)
    t = fit_temperature(probs, [it.label for it in sub])
    assert 0.25 < 1 / t < 0.6  # recovers roughly the 0.4 sharpening
    fit, rest = split_contexts(sub, 0.5, seed=0)
    assert set(fit).isdisjoint(rest) and sorted(fit + rest) == list(range(len(sub)))
    assert split_contexts(sub, 0.5, seed=0) == (fit, rest)
    view = evaluate({"m": FixedDecider(decider.table)}, sub, temperature=True)
    ref = view.references[0]
    assert ref.raw.n == ref.scaled.n == len(rest) and ref.fit_rows == len(fit)
    assert ref.scaled.metrics["ece"].mean < ref.raw.metrics["ece"].mean
    assert ref.scaled.metrics["accuracy"].mean == ref.raw.metrics["accuracy"].mean  # T never changes the argmax
    assert "post-hoc" in ref.scaled.name


def test_scale_keeps_zeros_and_argmax():
    out = scale([[0.7, 0.3, 0.0]], 2.0)[0]
    assert out[2] == 0.0 and out[0] > out[1] and sum(out) == pytest.approx(1.0)
    assert out[0] < 0.7  # T > 1 softens


def test_probe_summary_groups_and_ideals():
    items, decider = _items(20, random.Random(4))
    s = probe_summary("m", items, probabilities(decider, items))
    assert s.ideal == {"one-cue department": 1.0, "two-cue department": 0.5, "escalate": 0.9}
    assert s.groups["escalate"].mean == pytest.approx(0.9) and s.groups["escalate"].n == 20
    assert s.groups["two-cue department"].n == 10


def test_the_resampling_note_names_the_families_that_decide_the_answers():
    q = Choice("Which team?", ("billing", "security"))
    synthetic = [EvalItem("c1", "s", q, 0, ("two_cue",)), EvalItem("c2", "t", q, 1)]
    assert resampling_note(synthetic) == "95% intervals resample whole contexts"
    natural = [EvalItem("t1", "s", q, 0, ("family:a", "urgency:u", "department")),
               EvalItem("t1", "s", q, 0, ("family:a", "urgency:u", "priority")),
               EvalItem("t2", "t", q, 1, ("family:b", "family:c", "urgency:u", "ambiguous", "department"))]
    note = resampling_note(natural)
    assert note.startswith("95% intervals resample whole contexts; these answers are decided by 3 issue and 1 urgency")
    assert "not about families never seen" in note


def _family_items(n_contexts: int, rng: random.Random):
    """``_items`` whose contexts are tickets of four issue families (c0, c4, ... the first) and one urgency family."""
    items, decider = _items(n_contexts, rng)
    tagged = [EvalItem(it.context_id, it.state, it.question, it.label,
                       (f"family:f{int(it.context_id[1:]) % 4}", "urgency:u",
                        "department" if isinstance(it.question, Choice) else "escalate")) for it in items]
    return tagged, decider


def test_clusters_are_contexts_or_the_family_deciding_each_answer():
    items, _ = _family_items(6, random.Random(0))
    assert clusters_of(items) == [it.context_id for it in items]
    issue = ["family:f0", "family:f1", "family:f2", "family:f3", "family:f0", "family:f1"]
    assert clusters_of(items, FAMILIES) == [c for f in issue for c in (f, "urgency:u")]  # department, then page-now
    q = Choice("Which team?", ("billing", "security"))
    assert clusters_of([EvalItem("t9", "s", q, 0)], FAMILIES) == ["context:t9"]  # names no family: its own context
    with pytest.raises(ValueError, match="intervals resample whole contexts or families; got 'tickets'"):
        clusters_of(items, "tickets")


def test_resampling_families_draws_whole_families():
    items, decider = _family_items(40, random.Random(2))
    probs = probabilities(decider, items)
    rep = model_report("m", items, probs, resample=FAMILIES)
    right = [float(np.argmax(p) == it.label) for p, it in zip(probs, items)]
    expected = bootstrap_mean(right, clusters_of(items, FAMILIES), resamples=RESAMPLES, seed=0)
    assert (rep.metrics["accuracy"].lo, rep.metrics["accuracy"].hi) == pytest.approx((expected.lo, expected.hi))
    assert rep.resampled == FAMILIES and model_report("m", items, probs).resampled == "contexts"
    plain, decider = _items(10, random.Random(5))  # no row names a family: contexts are what gets drawn
    assert model_report("m", plain, probabilities(decider, plain), resample=FAMILIES).resampled == "contexts"
    assert metrics_rows([rep])[-1] == ["rows (families resampled)", "80"]
    assert metrics_rows([model_report("m", items, probs)])[-1][0] == "rows (contexts resampled)"


def test_an_unknown_resampling_unit_is_refused_before_any_model_runs():
    items, decider = _family_items(4, random.Random(3))
    with pytest.raises(ValueError, match="got 'tickets'"):
        evaluate({"m": decider}, items, resample="tickets")
    assert decider.calls == 0
    view = evaluate({"m": decider}, items, resample=FAMILIES, temperature=True)
    assert {r.resampled for r in [*view.reports, view.references[0].raw, view.references[0].scaled]} == {FAMILIES}


def test_the_resampling_note_says_what_was_drawn():
    items, _ = _family_items(8, random.Random(4))
    assert resampling_note(items, FAMILIES) == (
        "95% intervals resample whole families: the 4 issue and 1 urgency families deciding these answers (few: wide "
        "intervals)")
    q = Choice("Which team?", ("billing", "security"))
    assert resampling_note([EvalItem("t1", "s", q, 0)], FAMILIES) == (
        "95% intervals resample whole contexts: these rows name no family")
    assert resampling_note(items).endswith("not about families never seen (resample families for that)")


def test_one_context_has_its_value_and_no_interval():
    """Three questions about one ticket are one resampling unit: the cell has the value, says why there is no
    interval, and is not marked as outside one."""
    items = [EvalItem("c0", "s", Noul("Page now?"), label) for label in (1, 0, 1)]
    rep = model_report("m", items, [[0.2, 0.8], [0.3, 0.7], [0.4, 0.6]])
    cells = {r[0]: r[1] for r in metrics_rows([rep])}
    assert cells["accuracy"] == "0.667 (one context: no interval)" and OUTSIDE not in cells["ECE (15 bins)"]


def test_paired_metrics_are_a_minus_b_on_shared_draws():
    """A is right on every row, B on every other one: accuracy differs by exactly +0.5, and because both are read on
    the same draws the interval is [+0.5, +0.5] whenever each context holds one right and one wrong B answer."""
    from core.decision.evaluation.reports import interval_cell, paired_metrics

    items = [EvalItem(f"c{i // 2}", "s", Noul("Page now?"), 1) for i in range(8)]
    right, half = [[0.1, 0.9]] * 8, [[0.1, 0.9], [0.9, 0.1]] * 4
    paired = paired_metrics(items, right, half)
    assert paired["accuracy"].mean == pytest.approx(0.5) and (paired["accuracy"].lo, paired["accuracy"].hi) == \
        pytest.approx((0.5, 0.5))
    assert paired["mean_confidence"].mean == pytest.approx(0.0)
    assert math.isnan(paired["nota_recall"].mean) and interval_cell(paired["nota_recall"], signed=True) == "—"
    same = paired_metrics(items, half, half)
    assert all(interval_cell(same[k], signed=True) == "+0.000 [+0.000, +0.000]" for k in ("accuracy", "ece", "brier", "aurc"))
    rows = metrics_rows([model_report("a", items, right), model_report("b", items, half)], paired)
    assert rows[0] == ["accuracy", rows[0][1], rows[0][2], "+0.500 [+0.500, +0.500]"] and rows[-1][-1] == "8"


def test_a_paired_difference_cell_is_signed_and_says_what_a_value_cell_says():
    from core.decision.evaluation.reports import interval_cell
    from core.stats import Interval

    assert interval_cell(Interval(-0.0671, -0.081, -0.051, 8), signed=True) == "-0.067 [-0.081, -0.051]"
    assert interval_cell(Interval(0.02, float("nan"), float("nan"), 1), signed=True) == "+0.020 (one context: no interval)"
    assert interval_cell(Interval(0.02, 0.03, 0.05, 8), signed=True) == f"+0.020 [+0.030, +0.050] {OUTSIDE}"
    assert interval_cell(Interval(0.02, 0.01, 0.05, 8)) == "0.020 [0.010, 0.050]"
