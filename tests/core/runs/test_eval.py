"""Evaluation runner: CLI files and summary keys, clustered CIs, reproducibility, compare mode (the
comparison itself is tested in test_comparison.py)."""

import json
import math
import re

import pytest

from core.clarify.scenarios import load_scenarios
from core.runs.eval import main, read_run, run_eval
from core.runs.summary import RunSummary, summarize

KEYS = {"n", "avg_score", "avg_score_ci", "completion_rate", "format_pass_rate", "avg_questions", "per_family",
        "per_difficulty", "components", "rubric", "policy", "scenarios", "samples", "seed", "command"}


def run_cli(*argv):
    assert main(list(argv)) == 0


def test_cli_writes_episodes_and_summary(tmp_path, capsys):
    out = tmp_path / "run"
    run_cli("--policy", "oracle", "--scenarios", "clarifyrl-heldout", "--limit", "12", "--rubric", "v1", "--out", str(out))
    summary = json.loads((out / "summary.json").read_text())
    assert KEYS <= set(summary)
    RunSummary.model_validate(summary)
    assert summary["n"] == 12 and summary["rubric"] == "v1" and summary["policy"] == "oracle"
    assert summary["command"].startswith("python -m core.runs.eval --policy oracle")
    lo, hi = summary["avg_score_ci"]
    assert lo <= summary["avg_score"] <= hi and summary["completion_rate"] == 1.0
    assert set(summary["per_difficulty"]) == {"easy", "medium", "hard"}
    assert all(v["max"] >= v["mean"] for v in summary["per_family"].values())
    assert summary["components"]["FormatCheckRubric"] == 1.0
    episodes = read_run(out)
    assert len(episodes) == 12 and episodes[0].scenario.id == "seed10000_event_planning_easy"
    assert "avg_score" in capsys.readouterr().out


def test_published_file_spec_matches_named_spec(tmp_path, reference_dir):
    path = str(reference_dir / "clarifyrl" / "eval_held_out.json")
    run_cli("--policy", "guess", "--scenarios", path, "--limit", "50", "--out", str(tmp_path / "a"))
    run_cli("--policy", "guess", "--scenarios", "clarifyrl-heldout", "--limit", "50", "--out", str(tmp_path / "b"))
    a = json.loads((tmp_path / "a" / "summary.json").read_text())
    b = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert a["n"] == 50 and a["avg_score"] == b["avg_score"]


def test_samples_cluster_the_interval_and_runs_are_reproducible():
    scenarios = load_scenarios("generated:0-9")
    eps = run_eval("random", scenarios, samples=3, seed=7)
    assert len(eps) == 90 and [e.sample for e in eps[:3]] == [0, 1, 2]
    again = run_eval("random", scenarios, samples=3, seed=7)
    assert [e.score for e in eps] == [e.score for e in again]
    other = run_eval("random", scenarios, samples=3, seed=8)
    assert [e.score for e in eps] != [e.score for e in other]
    summary = summarize(eps, samples=3)
    assert summary.n == 90 and summary.n_scenarios == 30
    assert summary.avg_score_ci[0] <= summary.avg_score <= summary.avg_score_ci[1]


def test_summary_rates_and_component_means_over_gated_only():
    eps = run_eval("random", load_scenarios("generated:0-19"), seed=1)
    s = summarize(eps)
    gated = [e for e in eps if e.breakdown.gate_passed]
    assert s.completion_rate == pytest.approx(len(gated) / len(eps))
    assert s.format_pass_rate >= s.completion_rate
    assert s.components["FieldMatchRubric"] == pytest.approx(sum(e.breakdown.components["FieldMatchRubric"] for e in gated) / len(gated))
    assert sum(s.terminations.values()) == len(eps)
    assert s.avg_score == pytest.approx(sum(e.score for e in eps) / len(eps))


def test_summary_refuses_empty_and_mixed_runs():
    with pytest.raises(ValueError, match="no episodes"):
        summarize([])
    scenarios = load_scenarios("generated:0-1")
    with pytest.raises(ValueError, match="mix rubric"):
        summarize(run_eval("guess", scenarios, rubric="v1") + run_eval("guess", scenarios, rubric="v2"))


def test_compare_mode(tmp_path, capsys):
    a, b = tmp_path / "oracle", tmp_path / "guess"
    run_cli("--policy", "oracle", "--scenarios", "generated:0-9", "--out", str(a))
    run_cli("--policy", "guess", "--scenarios", "generated:5-14", "--out", str(b))
    capsys.readouterr()
    run_cli("compare", str(a), str(b), "--json", str(tmp_path / "cmp.json"))
    result = json.loads((tmp_path / "cmp.json").read_text())
    assert result["n_shared"] == 15 and result["only_a"] == 15 and result["only_b"] == 15
    assert result["ci"][0] <= result["diff"] <= result["ci"][1] and result["diff"] > 0.3
    assert "A - B" in capsys.readouterr().out


def test_cli_errors_are_clear(tmp_path, capsys):
    assert main(["--policy", "nobody", "--scenarios", "clarifyrl-heldout", "--out", str(tmp_path)]) == 2
    assert "unknown policy" in capsys.readouterr().err
    assert main(["--policy", "oracle", "--scenarios", "generated:0-3", "--limit", "0", "--out", str(tmp_path)]) == 2
    assert "is empty" in capsys.readouterr().err
    with pytest.raises(ValueError, match="samples must be"):
        run_eval("oracle", load_scenarios("generated:0-0"), samples=0)


def test_help_explains_every_flag(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for flag in ("--policy", "--scenarios", "--limit", "--samples", "--rubric", "--seed", "--out", "compare"):
        assert flag in text
    flat = re.sub(r"-\n\s+", "-", text)  # argparse may wrap a long set name at its hyphen
    assert "clarifyrl-heldout" in flat and "generated:LO-HI" in flat and "clarifylab-cued-v3" in flat


def test_a_single_episode_has_no_interval_written_as_null():
    """One scenario has no interval (core.stats.MIN_UNITS): summary.json says null, strict JSON, and reads it back."""
    s = summarize(run_eval("oracle", load_scenarios("generated:0-0:easy")))
    assert s.n == 1 and math.isnan(s.avg_score_ci[0]) and math.isnan(s.avg_score_ci[1])
    text = s.model_dump_json()
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))["avg_score_ci"] == [None, None]
    back = RunSummary.model_validate_json(text)
    assert back.avg_score == s.avg_score and all(math.isnan(v) for v in back.avg_score_ci)


def test_progress_bar_on_long_runs_only(capsys):
    run_eval("guess", load_scenarios("generated:0-69"), progress=True)  # 210 episodes
    assert "guess" in capsys.readouterr().err
    run_eval("guess", load_scenarios("generated:0-9"), progress=True)  # 30 episodes: quiet
    assert capsys.readouterr().err == ""


def test_published_row_has_scoreboard_keys_in_table_order():
    from core.runs.summary import published_row

    s = summarize(run_eval("guess", load_scenarios("clarifyrl-heldout", limit=50)))
    assert list(s.per_family) == ["medical_intake", "support_triage", "meeting_scheduling", "event_planning"]
    assert list(s.per_difficulty) == ["easy", "medium", "hard"]
    row = published_row(s, "guess")
    assert row["n"] == 50 and row["fam_event_planning"] == s.per_family["event_planning"].mean
    assert row["max_medical_intake"] == s.per_family["medical_intake"].max


def test_compare_cli_errors_are_clear(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "nope"), str(tmp_path / "nada")]) == 2
    assert "holds no episodes.jsonl" in capsys.readouterr().err


def test_a_run_in_chunks_plays_the_episodes_of_one_whole_run(tmp_path, capsys):
    args = ["--policy", "ask-required", "--scenarios", "generated:0-2:easy", "--samples", "2", "--rubric", "v2"]
    run_cli(*args, "--out", str(tmp_path / "whole"))
    chunked = tmp_path / "chunked"
    # a budget spent after the first group: each call keeps what it played and asks to be resumed
    assert main([*args, "--out", str(chunked), "--max-minutes", "1e-9"]) == 3
    assert "2 of 6 episodes" in capsys.readouterr().err and not (chunked / "summary.json").exists()
    assert json.loads((chunked / "partial.json").read_text())["episodes"] == 2
    assert main([*args, "--out", str(chunked), "--max-minutes=1e-9", "--resume"]) == 3
    assert json.loads((chunked / "partial.json").read_text())["episodes"] == 4
    run_cli(*args, "--out", str(chunked), "--resume")
    assert [e.model_dump() for e in read_run(chunked)] == [e.model_dump() for e in read_run(tmp_path / "whole")]
    assert not (chunked / "partial.json").exists() and not (chunked / "partial.jsonl").exists()
    summary = json.loads((chunked / "summary.json").read_text())
    assert summary["command"] == json.loads((tmp_path / "whole" / "summary.json").read_text())["command"].replace(
        str(tmp_path / "whole"), str(chunked))  # the chunking flags are not part of the run's command


def test_resume_refuses_another_commands_partial_run(tmp_path, capsys):
    args = ["--policy", "ask-required", "--scenarios", "generated:0-2:easy", "--out", str(tmp_path)]
    assert main([*args, "--max-minutes", "1e-9"]) == 3
    assert main([*args, "--seed", "1", "--resume"]) == 2
    assert "left by another command (seed 0 there, 1 now)" in capsys.readouterr().err
    partial = read_run(tmp_path / "partial.jsonl")
    with pytest.raises(ValueError, match="not the first whole groups"):
        run_eval("ask-required", load_scenarios("generated:1-2:easy"), done=partial, go_on=lambda so_far: True)


def test_resume_takes_the_same_command_with_its_flags_in_another_order(tmp_path):
    args = ["--policy", "ask-required", "--scenarios", "generated:0-2:easy", "--samples", "2"]
    assert main([*args, "--out", str(tmp_path / "chunked"), "--max-minutes=1e-9"]) == 3
    reordered = ["--no-progress", "--samples", "2", "--scenarios", "generated:0-2:easy", "--policy", "ask-required"]
    run_cli(*reordered, "--out", str(tmp_path / "chunked"), "--resume")
    run_cli(*args, "--out", str(tmp_path / "whole"))
    assert [e.model_dump() for e in read_run(tmp_path / "chunked")] == [e.model_dump() for e in read_run(tmp_path / "whole")]
