"""Report tables over evaluation runs."""

from core.runs.eval import run_eval, write_run
from core.clarify.scenarios import load_scenarios
from core.runs.summary import summarize
from train.clarify_report import report


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
