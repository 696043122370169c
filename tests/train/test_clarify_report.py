"""Report tables over evaluation runs."""

import json

import pytest

from core.runs.eval import compare_runs, run_eval, write_run
from core.clarify.scenarios import load_scenarios
from core.runs.summary import summarize
from train.clarify_report import ask_or_act, read_summary, report


def test_report_has_overall_family_and_difficulty_tables(tmp_path):
    scenarios = load_scenarios("clarifylab-heldout", limit=6)
    for name in ("oracle", "guess"):
        episodes = run_eval(name, scenarios, samples=2, rubric="v2")
        write_run(tmp_path / name, episodes, summarize(episodes, policy=name, samples=2))
    text = report([tmp_path / "oracle", tmp_path / "guess"])
    tables = text.split("\n\n")
    assert len(tables) == 3
    assert "| oracle | v2 | 12 |" in tables[0] and "| guess | v2 | 12 |" in tables[0]
    assert "run \\ family" in tables[1] and "run \\ difficulty" in tables[2]
    # each row has a mean and a bracketed interval per column
    row = next(line for line in tables[2].splitlines() if line.startswith("| oracle"))
    assert row.count("[") == len(row.split("|")) - 3


def _cued_runs(tmp_path, limit=6):
    scenarios = load_scenarios("clarifylab-cued-v3", limit=limit)
    for name in ("bayes", "guess"):
        episodes = run_eval(name, scenarios, rubric="v3")
        write_run(tmp_path / name, episodes, summarize(episodes, policy=name, scenarios="clarifylab-cued-v3",
                                                        limit=limit))
    return [tmp_path / "bayes", tmp_path / "guess"]


def test_ask_or_act_quotes_summaries_and_comparisons_only(tmp_path):
    runs = _cued_runs(tmp_path)
    cmp = compare_runs(*runs).record()
    (tmp_path / "cmp.json").write_text(json.dumps(cmp))
    (tmp_path / "guess" / "episodes.jsonl").unlink()  # the table reads summary.json, never the episodes
    rows, compared, short = ask_or_act(runs, [tmp_path / "cmp.json"]).split("\n\n")
    guess = read_summary(runs[1])
    lo, hi = guess.avg_score_ci
    assert f"| guess | `guess` | {guess.avg_score:.3f} [{lo:.3f}, {hi:.3f}] |" in rows
    # the comparison is bayes - guess; the guess row shows guess - bayes, its interval mirrored
    assert rows.splitlines()[-1].endswith(f"| {-cmp['diff']:+.3f} [{-cmp['ci'][1]:+.3f}, {-cmp['ci'][0]:+.3f}] |")
    assert rows.splitlines()[-2].endswith("| - |")  # bayes against itself: nothing to quote
    assert f"| bayes | guess | 6 | {cmp['mean_a']:.3f} |" in compared
    assert short.splitlines()[0] == "| clarifylab-cued-v3, rubric v3, first 6, K = 1 | bayes | guess |"


def test_ask_or_act_refuses_mixed_settings_and_unlisted_runs(tmp_path):
    runs = _cued_runs(tmp_path / "six")
    other = _cued_runs(tmp_path / "four", limit=4)
    with pytest.raises(ValueError, match="differ"):
        ask_or_act([runs[0], other[1]], [])
    (tmp_path / "cmp.json").write_text(json.dumps(compare_runs(*other).record()))
    with pytest.raises(ValueError, match="list both runs"):
        ask_or_act(runs, [tmp_path / "cmp.json"])
    with pytest.raises(ValueError, match="no summary.json"):
        read_summary(tmp_path)
