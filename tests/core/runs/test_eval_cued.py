"""The eval CLI on the cued set: every baseline runs under --rubric v3, and compare pairs v3 runs only."""

import json

import pytest

from core.runs.eval import main, read_run


@pytest.mark.parametrize("policy", ["bayes", "ask-all", "guess"])
def test_each_baseline_runs_on_the_cued_set_under_v3(policy, tmp_path, capsys):
    out = tmp_path / policy
    assert main(["--scenarios", "clarifylab-cued-v3", "--rubric", "v3", "--policy", policy, "--limit", "6",
                 "--out", str(out), "--no-progress"]) == 0
    episodes = read_run(out)
    assert len(episodes) == 6 and {e.rubric for e in episodes} == {"v3"}
    assert all(e.scenario.cues is not None for e in episodes)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scenarios"] == "clarifylab-cued-v3" and "--rubric v3" in summary["command"]


def test_compare_pairs_two_v3_runs_and_refuses_a_v2_one(tmp_path, capsys):
    common = ["--scenarios", "clarifylab-cued-v3", "--limit", "9", "--no-progress"]
    assert main(["--policy", "bayes", "--rubric", "v3", "--out", str(tmp_path / "bayes"), *common]) == 0
    assert main(["--policy", "guess", "--rubric", "v3", "--out", str(tmp_path / "guess"), *common]) == 0
    assert main(["--policy", "guess", "--rubric", "v2", "--out", str(tmp_path / "guess-v2"), *common]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "bayes"), str(tmp_path / "guess"), "--json", str(tmp_path / "c.json")]) == 0
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["rubric"] == "v3" and record["n_shared"] == 9 and record["diff"] > 0
    assert main(["compare", str(tmp_path / "bayes"), str(tmp_path / "guess-v2")]) == 2
    assert "different rubric" in capsys.readouterr().err


def test_an_unknown_decision_model_is_a_clear_error(tmp_path, capsys):
    assert main(["--scenarios", "clarifylab-cued-v3", "--rubric", "v3", "--policy", "decision:/no/such",
                 "--out", str(tmp_path / "x")]) == 2
    assert "decision:/no/such" in capsys.readouterr().err
