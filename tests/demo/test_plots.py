"""Plot builders: right traces, fixed family colours, explicit empty states."""

import json
from pathlib import Path

import pandas as pd
import pytest

from core.clarify.rubrics import V3_WEIGHTS
from core.runs import episode_table as table
from core.runs.comparison import compare_tables
from demo import plots
from core.runs.episode_log import read_episodes
from core.records import Recorded, RewardBreakdown
from tests.fixtures.figure_text import PAYLOAD, assert_escaped

RUNS = Path(__file__).parents[1] / "fixtures" / "replay_runs" / "fixture-set"


@pytest.fixture(scope="module")
def frame():
    rows = [table.record_row(p, json.loads(ep.model_dump_json()))
            for p in ("oracle", "guess") for ep in read_episodes(RUNS / p / "episodes.jsonl").episodes]
    return table.episode_table(rows)


def test_family_bars_colour_by_family_and_pattern_by_run(frame):
    fig = plots.family_bars(table.family_scores(frame))
    bars = [t for t in fig.data if t.type == "bar" and t.legendgroup != "runs"]
    assert [b.name for b in bars] == ["oracle", "guess"]
    legend = [t.name for t in fig.data if t.legendgroup == "runs"]
    assert legend == ["oracle", "guess"]  # grey pattern swatches name the runs
    fams = list(bars[0].x)
    assert list(bars[0].marker.color) == [plots.FAMILY_COLORS[f] for f in fams]
    assert bars[0].marker.pattern.shape != bars[1].marker.pattern.shape
    scores = table.family_scores(frame)
    mine = scores[scores["run"] == "oracle"]
    assert list(bars[0].error_y.array) == pytest.approx(list(mine["hi"] - mine["mean"]), nan_ok=True)  # each mean's 95% interval
    assert list(bars[0].error_y.arrayminus) == pytest.approx(list(mine["mean"] - mine["lo"]), nan_ok=True)
    ticks = [t for t in fig.data if t.type == "scatter"]
    assert max(ticks[0].y) == pytest.approx(frame[frame.run == "oracle"].score.max())


def test_histograms_count_every_episode(frame):
    for fig in (plots.score_histogram(frame), plots.questions_histogram(frame)):
        assert sum(len(t.x) for t in fig.data if t.type == "histogram") == len(frame)


def test_component_bars_label_weights(frame):
    means = table.component_means(frame, table.COMPONENTS)
    fig = plots.component_bars(means, table.COMPONENT_WEIGHTS)
    assert "FieldMatch ×0.50" in list(fig.data[0].x) and "FormatCheck (gate)" in list(fig.data[0].x)
    first = means[means["run"] == means["run"].iloc[0]]  # error bars reach each component's interval
    assert list(fig.data[0].error_y.array) == pytest.approx(list(first["hi"] - first["mean"]))
    assert list(fig.data[0].error_y.arrayminus) == pytest.approx(list(first["mean"] - first["lo"]))


def test_breakdown_shares_add_up_to_the_score():
    bd = RewardBreakdown(rubric="v1", total=0.6, gate_passed=True,
                         components={"FormatCheckRubric": 1.0, "A": 1.0, "B": 0.5},
                         weights={"A": 0.4, "B": 0.4})
    fig = plots.breakdown_bars(bd)
    assert sum(fig.data[1].y) == pytest.approx(0.6)
    assert "gate passed" in fig.layout.title.text


def test_a_v3_question_cost_takes_its_share_below_zero():
    """FieldMatch 1.0 less 4 questions at 0.08: the cost's solid bar stands below the axis, in view."""
    bd = RewardBreakdown(rubric="v3", total=0.68, gate_passed=True, weights=V3_WEIGHTS,
                         components={"FormatCheckRubric": 1.0, "FieldMatchRubric": 1.0, "QuestionCostRubric": 0.32})
    fig = plots.breakdown_bars(bd)
    assert list(fig.data[1].y) == pytest.approx([1.0, -0.32]) and sum(fig.data[1].y) == pytest.approx(0.68)
    assert fig.layout.yaxis.range[0] < -0.32 < 0 < 1.0 < fig.layout.yaxis.range[1]


def test_breakdown_of_a_failed_gate_contributes_nothing():
    bd = RewardBreakdown(rubric="v1", total=0.0, gate_passed=False,
                         components={"FormatCheckRubric": 0.0, "A": 1.0}, weights={"A": 1.0})
    fig = plots.breakdown_bars(bd)
    assert list(fig.data[0].y) == [1.0] and list(fig.data[1].y) == [0.0]
    assert "FAILED" in fig.layout.title.text


@pytest.mark.parametrize("build", [
    lambda: plots.family_bars(pd.DataFrame(columns=["run", "family", "mean", "max", "n"])),
    lambda: plots.score_histogram(table.episode_table([])),
    lambda: plots.component_bars(pd.DataFrame(columns=["run", "component", "mean", "lo", "hi", "n"])),
    lambda: plots.breakdown_bars(None),
    lambda: plots.difference_bars(pd.DataFrame(), "a", "b"),
])
def test_empty_inputs_say_so(build):
    fig = build()
    assert len(fig.data) == 0 and fig.layout.annotations[0].text


def test_difference_bars_sorted(frame):
    comp = compare_tables(frame[frame.run == "oracle"], frame[frame.run == "guess"])
    fig = plots.difference_bars(comp.table, "oracle", "guess")
    order = list(fig.layout.xaxis.categoryarray)
    shown = {x: y for trace in fig.data for x, y in zip(trace.x, trace.y)}
    assert sorted(order) == sorted(comp.table["scenario"]) and [shown[x] for x in order] == sorted(comp.table["diff"])
    assert [t.name for t in fig.data] == list(dict.fromkeys(comp.table.sort_values("diff", kind="stable")["family"]))
    assert {t.marker.color for t in fig.data} == {plots.family_color(t.name) for t in fig.data}  # a legend entry a colour


def test_breakdown_overlays_recorded_components():
    bd = RewardBreakdown(rubric="v1", total=0.0, gate_passed=False,
                         components={"FormatCheckRubric": 0.0, "A": 0.0}, weights={"A": 1.0})
    rec = Recorded(source="published-trace", score=0.0, breakdown={"A": 0.4})  # a stale published value
    fig = plots.breakdown_bars(bd, recorded=rec)
    assert list(fig.data[2].y) == [0.4] and "recorded by published-trace" in fig.data[2].name
    assert len(plots.breakdown_bars(bd).data) == 2


def test_every_text_from_data_is_escaped_in_every_replays_figure(frame):
    rows = frame.assign(run=PAYLOAD, family=PAYLOAD)
    rows["run"] = pd.Categorical(rows["run"])
    assert_escaped(plots.family_bars(table.family_scores(rows)))
    assert_escaped(plots.score_histogram(rows))  # legend entries and hover text
    assert_escaped(plots.questions_histogram(rows))
    means = pd.DataFrame({"run": [PAYLOAD, "b"], "component": [PAYLOAD, "FieldMatchRubric"], "mean": [0.5, 0.2],
                          "lo": [0.4, 0.1], "hi": [0.6, 0.3], "n": [4, 4], "scenarios": [2, 2]})
    assert_escaped(plots.component_bars(means, {PAYLOAD: 0.5}))  # hover text names the run through meta
    bd = RewardBreakdown(rubric="v1", total=0.0, gate_passed=True, components={PAYLOAD: 0.0}, weights={PAYLOAD: 1.0})
    fig = plots.breakdown_bars(bd, recorded=Recorded(source=PAYLOAD, score=0.0, breakdown={PAYLOAD: 0.1}),
                               reasons={PAYLOAD: PAYLOAD})  # tick labels, "why 0" lines, recorded source
    assert_escaped(fig)
    diff = pd.DataFrame({"scenario": [PAYLOAD], "family": [PAYLOAD], "diff": [0.1]})
    assert_escaped(plots.difference_bars(diff, PAYLOAD, "b"))


def test_an_overlong_name_is_cut_in_a_figure_with_its_length():
    bd = RewardBreakdown(rubric="v1", total=0.0, gate_passed=True, components={"x" * 10**6: 0.0}, weights={"x" * 10**6: 1.0})
    tick = plots.breakdown_bars(bd).data[0].x[0]
    assert len(tick) < 300 and "of 1,000,000 characters" in tick


def test_a_mean_over_one_scenario_hovers_without_an_interval(frame):
    """One scenario has no interval (core.stats.MIN_UNITS); the hover says so and counts episodes and scenarios."""
    scores = table.family_scores(frame)
    fig = plots.family_bars(scores)
    texts = [t for trace in fig.data if trace.type == "bar" and trace.hovertext for t in trace.hovertext]
    single = scores[scores["scenarios"] == 1].iloc[0]
    assert any("(one scenario: no interval)" in t and f"{single.n} episode" in t and "over 1 scenario" in t
               for t in texts)
    assert plots.interval_text(0.25, 0.5) == "[0.250, 0.500]"
