"""The one paired comparison of two runs (``core.runs.comparison``), on tiny hand-made runs.

Each run is a few episode-table rows (scenario, score, rubric), so every number below can be checked
by hand: samples are averaged per scenario first, only shared scenarios are paired, and the
difference is a - b. Runs of different rubric versions are refused.
"""

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from core.clarify.scenarios import load_scenarios
from core.runs.comparison import (RubricMismatch, compare_episodes, compare_tables, comparison_note, largest_gap,
                                  run_rubric)
from core.runs.eval import run_eval
from core.runs.replays import get_run

FIXTURE = Path(__file__).parents[2] / "fixtures" / "replay_runs"
ORACLE, GUESS = "fixture-set/oracle", "fixture-set/guess"


def run(*rows, rubric: str | None = "v1") -> pd.DataFrame:
    """An episode table from (scenario, score) pairs; ``rubric=None`` leaves the column out."""
    frame = pd.DataFrame([{"scenario": s, "family": "event_planning", "difficulty": "easy", "score": score,
                           "episode": f"{s}#{i}"} for i, (s, score) in enumerate(rows)])
    return frame if rubric is None else frame.assign(rubric=rubric)


@pytest.mark.parametrize("a, b, diffs, mean, only", [
    # one shared scenario: the difference is a - b
    (run(("s1", 1.0)), run(("s1", 0.5)), [0.5], 0.5, (0, 0)),
    # a worse than b: the sign follows a - b
    (run(("s1", 0.25)), run(("s1", 0.75)), [-0.5], -0.5, (0, 0)),
    # a scenario's samples are averaged before pairing: (1 + 0) / 2 - 0.25
    (run(("s1", 1.0), ("s1", 0.0)), run(("s1", 0.25)), [0.25], 0.25, (0, 0)),
    # the mean is over scenarios, not episodes: s1 has three samples in a, yet weighs as much as s2
    (run(("s1", 1.0), ("s1", 1.0), ("s1", 1.0), ("s2", 0.0)), run(("s1", 0.0), ("s2", 0.0)), [1.0, 0.0], 0.5, (0, 0)),
    # scenarios in one run only are counted, never paired
    (run(("s1", 0.5), ("s2", 1.0)), run(("s1", 0.5), ("s3", 0.0)), [0.0], 0.0, (1, 1)),
    # every scenario differs by the same amount: the interval is that point
    (run(("s1", 1.0), ("s2", 0.75)), run(("s1", 0.5), ("s2", 0.25)), [0.5, 0.5], 0.5, (0, 0)),
    # rows in another order pair the same way (by scenario id, in a's order)
    (run(("s2", 0.5), ("s1", 1.0)), run(("s1", 0.0), ("s2", 0.25)), [0.25, 1.0], 0.625, (0, 0)),
])
def test_paired_difference_by_hand(a, b, diffs, mean, only):
    comp = compare_tables(a, b, name_a="A", name_b="B")
    assert comp.table["diff"].tolist() == diffs
    assert comp.difference.mean == pytest.approx(mean) and comp.difference.n == len(diffs)
    assert (comp.only_a, comp.only_b) == only
    if len(diffs) == 1:  # one shared scenario has no interval (core.stats.MIN_UNITS)
        assert math.isnan(comp.difference.lo) and math.isnan(comp.difference.hi)
        return
    assert comp.difference.lo <= comp.difference.mean <= comp.difference.hi
    if len(set(diffs)) == 1:  # every scenario differs by the same amount: the interval is that point
        assert comp.difference.lo == pytest.approx(mean) == comp.difference.hi


def test_the_table_keeps_both_scores_and_each_runs_first_episode():
    comp = compare_tables(run(("s1", 1.0), ("s1", 0.0)), run(("s1", 0.25)))
    row = comp.table.iloc[0].to_dict()
    assert row == {"scenario": "s1", "family": "event_planning", "difficulty": "easy", "score_a": 0.5,
                   "score_b": 0.25, "diff": 0.25, "episode_a": "s1#0", "episode_b": "s1#0"}


def test_record_is_the_cli_json():
    comp = compare_tables(run(("s1", 1.0), ("s2", 0.5)), run(("s1", 0.5), ("s2", 0.5), ("s3", 1.0)),
                          name_a="oracle", name_b="guess")
    record = comp.record()
    groups = {"per_family": {"event_planning": comp.within("family")["event_planning"].as_dict()},
              "per_difficulty": {"easy": comp.within("difficulty")["easy"].as_dict()}}
    assert record == {"a": "oracle", "b": "guess", "rubric": "v1", "n_shared": 2, "only_a": 0, "only_b": 1,
                      "mean_a": 0.75, "mean_b": 0.5, "diff": 0.25, "ci": [comp.difference.lo, comp.difference.hi],
                      **groups}


def test_within_pairs_each_group_on_its_own_scenarios():
    a = pd.concat([run(("s1", 1.0), ("s2", 0.5)), run(("s3", 0.0)).assign(family="support_triage", difficulty="hard")])
    b = pd.concat([run(("s1", 0.5), ("s2", 0.5)), run(("s3", 0.75)).assign(family="support_triage", difficulty="hard")])
    comp = compare_tables(a, b)
    family = comp.within("family")
    assert sorted(family) == ["event_planning", "support_triage"]
    assert (family["event_planning"].mean, family["event_planning"].n) == (0.25, 2)  # (0.5 + 0) / 2
    assert family["support_triage"].mean == -0.75 and math.isnan(family["support_triage"].lo)  # one scenario
    assert comp.within("difficulty")["hard"].n == 1 and comp.record()["per_difficulty"]["easy"]["mean"] == 0.25


@pytest.mark.parametrize("a, b, message", [
    # two versions: v2 corrects v1's simulator and scoring, so the scores measure different things
    (run(("s1", 1.0), rubric="v1"), run(("s1", 0.5), rubric="v2"), r"rubric v1 and B under v2: .* not comparable"),
    # one run mixing versions is refused on its own, naming the run
    (pd.concat([run(("s1", 1.0), rubric="v1"), run(("s2", 1.0), rubric="v2")]), run(("s1", 0.5)),
     r"run A mixes rubric versions \['v1', 'v2'\]"),
])
def test_runs_of_different_rubric_versions_are_refused(a, b, message):
    with pytest.raises(RubricMismatch, match=message):
        compare_tables(a, b, name_a="A", name_b="B")


@pytest.mark.parametrize("a, b, rubric", [
    (run(("s1", 1.0)), run(("s1", 0.5)), "v1"),                                  # both say v1
    (run(("s1", 1.0), rubric=None), run(("s1", 0.5), rubric="v2"), "v2"),         # one table does not say: the other's
    (run(("s1", 1.0), rubric=None), run(("s1", 0.5), rubric=None), "?"),          # neither says
])
def test_the_comparison_names_the_rubric_both_runs_share(a, b, rubric):
    assert compare_tables(a, b).rubric == rubric


def test_run_rubric_reads_one_version_and_ignores_missing_cells():
    assert run_rubric(run(("s1", 1.0)).assign(rubric=["v2"]), "x") == "v2"
    assert run_rubric(run(("s1", 1.0)).assign(rubric=[None]), "x") == "?"


@pytest.mark.parametrize("a, b, gap", [
    (run(("s1", 1.0), ("s2", 0.5)), run(("s1", 0.75), ("s2", 0.0)), "s2"),   # the larger of two gains
    (run(("s1", 1.0), ("s2", 0.0)), run(("s1", 0.75), ("s2", 1.0)), "s2"),   # a loss counts by its size
    (run(("s1", 1.0)), run(("s9", 1.0)), None),                              # nothing shared
])
def test_largest_gap(a, b, gap):
    assert largest_gap(compare_tables(a, b)) == gap


@pytest.mark.parametrize("a, b, words", [
    (run(("s1", 1.0), ("s2", 1.0)), run(("s1", 0.0), ("s2", 0.0)), "a is higher than b"),
    (run(("s1", 0.0), ("s2", 0.0)), run(("s1", 1.0), ("s2", 1.0)), "a is lower than b"),
    (run(("s1", 1.0), ("s2", 0.0)), run(("s1", 0.0), ("s2", 1.0)), "a is not distinguishable from b"),  # +1 and -1
    (run(("s1", 1.0)), run(("s9", 1.0)), "`x` and `y` share no scenario."),
    # one shared scenario resampled is itself: its zero-width interval once read "a is higher than b"
    (run(("s1", 0.6)), run(("s1", 0.4)), "= **+0.200**: one scenario has no interval, so no verdict."),
    (run(("s1", 1.0), ("s2", 1.0)), run(("s1", 0.0), ("s2", 0.0)), "higher than b. With under 10 shared scenarios a "
                                                                     "percentile bootstrap interval runs too narrow"),
])
def test_comparison_note_says_which_way(a, b, words):
    assert words in comparison_note(compare_tables(a, b), "x", "y")


def test_compare_episodes_refuses_disjoint_or_mixed_runs():
    x = run_eval("guess", load_scenarios("generated:0-1"))
    with pytest.raises(ValueError, match="share no scenario"):
        compare_episodes(x, run_eval("guess", load_scenarios("generated:2-3")))
    with pytest.raises(ValueError, match="different rubric"):
        compare_episodes(x, run_eval("guess", load_scenarios("generated:0-1"), rubric="v2"))


# ---- the fixture runs the Replays tab shows: oracle and guess on the same six scenarios


@pytest.fixture(scope="module")
def fixture_runs(tmp_path_factory) -> dict[str, pd.DataFrame]:
    root = tmp_path_factory.mktemp("comparison") / "replays"
    shutil.copytree(FIXTURE, root)
    return {name: get_run(root, name).table for name in (ORACLE, GUESS)}


def test_compare_pairs_by_scenario(fixture_runs):
    comp = compare_tables(fixture_runs[ORACLE], fixture_runs[GUESS])
    assert len(comp.table) == 6 and comp.only_a == 0 and comp.only_b == 0
    expected = (comp.table["score_a"] - comp.table["score_b"]).mean()
    assert comp.difference.mean == pytest.approx(expected, abs=1e-3)  # the table rounds to 4 places
    assert comp.difference.lo <= comp.difference.mean <= comp.difference.hi
    assert largest_gap(comp) == "seed6_meeting_scheduling_hard"  # guess scored 0 there
    note = comparison_note(comp, ORACLE, GUESS)
    assert "6" in note and "higher" in note


def test_compare_with_partial_overlap(fixture_runs):
    a = fixture_runs[ORACLE]
    comp = compare_tables(a[:4], fixture_runs[GUESS][2:])
    assert list(comp.table["scenario"]) == list(a["scenario"][2:4])
    assert comp.only_a == 2 and comp.only_b == 2


def test_compare_without_overlap_is_explicit(fixture_runs):
    a = fixture_runs[ORACLE]
    comp = compare_tables(a[:2], a[2:])
    assert comp.difference.n == 0 and largest_gap(comp) is None
    assert "share no scenario" in comparison_note(comp, "a", "b")
