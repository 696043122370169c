"""Report tables over evaluation runs."""

import json

import pytest

from core.runs.eval import compare_runs, run_eval
from core.clarify.scenarios import load_scenarios
from core.runs.summary import summarize, write_run
from train.clarify_report import ask_or_act, cue_table, read_summary, report


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
    with pytest.raises(ValueError, match="repeat"):
        ask_or_act([runs[0], tmp_path / "four" / "bayes"], [])


def test_by_cue_reads_the_logged_beliefs_per_cue_kind(tmp_path):
    from core.clarify.calibrated_agent import CalibratedAgent
    from core.clarify.cued import posterior
    from core.decision.questions import make_answer

    scenarios = load_scenarios("clarifylab-cued-v3", limit=12)

    class Truthful:  # a decision model double that reports the generator's posterior
        def decide(self, state, questions):
            s = next(s for s in scenarios if s.request == state)
            return [make_answer(q, posterior(s, q.qid)) for q in questions]

    episodes = run_eval(CalibratedAgent(Truthful(), "decision:truthful"), scenarios, rubric="v3")
    write_run(tmp_path / "truthful", episodes, summarize(episodes, policy="decision:truthful"))
    rows = {line.split(" | ")[1]: line.split(" | ")[2:] for line in cue_table([tmp_path / "truthful"]).splitlines()[2:]}
    # a truthful model: its max p is the true one; it never asks a clear cue and always asks a field with none
    assert rows["clear"][1] == rows["clear"][2] == "1.00" and rows["clear"][3] == "0.00"
    assert rows["none"][1] == rows["none"][2] and rows["none"][3] == "1.00"
    assert rows["clear"][4].startswith("1.00")  # a clear cue names the hidden value
    plain = run_eval("bayes", scenarios, rubric="v3")
    write_run(tmp_path / "bayes", plain, summarize(plain, policy="bayes"))
    with pytest.raises(ValueError, match="logged no beliefs"):
        cue_table([tmp_path / "bayes"])


def test_ask_or_act_names_a_whole_set_by_its_size(tmp_path):
    scenarios = load_scenarios("clarifylab-cued-v3", limit=4)
    episodes = run_eval("bayes", scenarios, rubric="v3")
    write_run(tmp_path / "bayes", episodes, summarize(episodes, policy="bayes", scenarios="clarifylab-cued-v3"))
    short = ask_or_act([tmp_path / "bayes"], []).split("\n\n")[2]
    assert short.splitlines()[0] == "| clarifylab-cued-v3, rubric v3, all 4, K = 1 | bayes |"
