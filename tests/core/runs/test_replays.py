"""Replay runs on disk: discovery, safe name resolution, loading, uploads, table, filters (comparing two
runs is tested in test_comparison.py)."""

import json
import shutil
from pathlib import Path

import pytest

from core.clarify.rubrics import QUESTION_COST
from core.records import Episode
from core.runs import episode_table as table
from core.runs.episode_log import EpisodeLogError, read_episodes, write_episodes
from core.runs.episode_table import Filters
from core.runs.episode_table import filter_table
from core.runs.replays import (REPLAYED_POLICIES, SHIPPED_SETS, RunNotFound, companion_run, compared_episodes,
                               discover_runs, find_episode, first_episode, get_run, known_runs, landing_run, load_upload, regenerate, resolve_run,
                               runs_table, upload_name, upload_note)
from core.runs.session_runs import OWNED
from core.stats import bootstrap_mean

FIXTURE = Path(__file__).parents[2] / "fixtures" / "replay_runs"
ORACLE, GUESS = "fixture-set/oracle", "fixture-set/guess"


@pytest.fixture
def root(tmp_path) -> Path:
    dst = tmp_path / "replays"
    shutil.copytree(FIXTURE, dst)
    return dst


def test_discover_lists_runs_with_their_summaries(root):
    runs = {r.name: r for r in discover_runs(root)}
    assert set(runs) == {ORACLE, GUESS}
    assert runs[ORACLE].policy == "oracle" and runs[ORACLE].rubric == "v1" and runs[ORACLE].n == 6
    assert runs[ORACLE].ci is not None and runs[ORACLE].ci[0] <= runs[ORACLE].avg_score <= runs[ORACLE].ci[1]


def test_discover_keeps_a_run_without_summary_and_skips_hidden_folders(root):
    (root / "fixture-set" / "guess" / "summary.json").unlink()
    shutil.copytree(root / "fixture-set" / "oracle", root / ".hidden" / "oracle")
    runs = {r.name: r for r in discover_runs(root)}
    assert set(runs) == {ORACLE, GUESS}
    assert runs[GUESS].avg_score is None and runs[GUESS].policy == "?"


def test_discover_missing_root_is_empty(tmp_path):
    assert discover_runs(tmp_path / "nope") == []


@pytest.mark.parametrize("name", [
    "../outside",                      # parent traversal
    "fixture-set/../../outside",       # traversal after a valid part
    "/etc",                            # absolute path
    "fixture-set/./oracle",            # dot part
    ".hidden/oracle",                  # hidden folder
    "fixture-set\\oracle",             # backslash separator
    "upload:fixture-set",              # an upload name is never a disk path
    "fixture-set",                     # a folder without episodes.jsonl
    "fixture-set/oracle/episodes.jsonl",  # a file, not a run
    "",                                # empty
    "a" * 300,                         # absurdly long
])
def test_resolve_rejects_names_outside_runs(root, name):
    with pytest.raises(RunNotFound):
        resolve_run(root, name)


def test_resolve_refuses_a_symlink_leaving_the_directory(root, tmp_path):
    outside = tmp_path / "secret"
    outside.mkdir()
    write_episodes(outside / "episodes.jsonl", read_episodes(FIXTURE / ORACLE / "episodes.jsonl").episodes)
    (root / "escape").symlink_to(outside)
    with pytest.raises(RunNotFound):
        resolve_run(root, "escape")
    assert "escape" not in {r.name for r in discover_runs(root)}


def test_resolve_and_load_a_real_run(root):
    assert resolve_run(root, ORACLE) == (root / ORACLE / "episodes.jsonl").resolve()
    run = get_run(root, ORACLE)
    assert len(run) == 6 and len(run.table) == 6
    ep = find_episode(root, ORACLE, "seed1_meeting_scheduling_easy#0")
    assert ep.scenario.family == "meeting_scheduling"
    with pytest.raises(RunNotFound, match="no episode"):
        find_episode(root, ORACLE, "seed99_x_easy#0")


def test_load_is_cached_until_the_file_changes(root):
    first = get_run(root, ORACLE)
    assert get_run(root, ORACLE) is first
    log = root / ORACLE / "episodes.jsonl"
    episodes = read_episodes(log).episodes[:2]
    write_episodes(log, episodes)
    assert len(get_run(root, ORACLE)) == 2


def test_runs_table_keeps_the_picked_order(root):
    frame = runs_table(root, [GUESS, ORACLE])
    assert list(frame["run"].cat.categories) == [GUESS, ORACLE]
    assert len(frame) == 12 and frame["run"].iloc[0] == GUESS


@pytest.mark.parametrize("filters, expected", [
    (Filters(), 12),                                            # nothing filtered
    (Filters(runs=(ORACLE,)), 6),                               # one run
    (Filters(families=("meeting_scheduling",)), 4),             # one family, both runs
    (Filters(difficulties=("easy",)), 4),                       # easy only
    (Filters(gate="fail"), 1),                                  # the unparseable guess episode
    (Filters(terminations=("unparseable",)), 1),                # same, by termination
    (Filters(score_min=0.7), 3),                                # oracle's good episodes
    (Filters(score_min=0.2, score_max=0.4), 2),                 # guess's middling ones
    (Filters(text="ZOOM"), 6),                                  # search is case-insensitive (plans + answers)
    (Filters(text="no such words anywhere"), 0),                # search that matches nothing
    (Filters(runs=(GUESS,), gate="pass", difficulties=("hard",)), 1),  # filters combine
])
def test_filters(root, filters, expected):
    frame = runs_table(root, [ORACLE, GUESS])
    assert len(table.filter_table(frame, filters)) == expected


def test_aggregates(root):
    frame = runs_table(root, [ORACLE, GUESS])
    fam = table.family_scores(frame)
    row = fam[(fam["run"] == ORACLE) & (fam["family"] == "meeting_scheduling")].iloc[0]
    assert row["n"] == 2 and row["max"] == pytest.approx(0.9)
    rows = frame[(frame["run"] == ORACLE) & (frame["family"] == "meeting_scheduling")]
    iv = bootstrap_mean(rows["score"].to_numpy(), rows["scenario"].astype(str).tolist(), seed=0)
    assert (row["mean"], row["lo"], row["hi"]) == pytest.approx((iv.mean, iv.lo, iv.hi))  # clustered by scenario
    spread = fam[fam["scenarios"] > 1]  # one scenario has no interval: core.stats.MIN_UNITS
    assert len(spread) and fam.loc[fam["scenarios"] == 1, ["lo", "hi"]].isna().all().all()
    assert (spread["lo"] <= spread["mean"]).all() and (spread["mean"] <= spread["hi"]).all()
    assert (spread["hi"] <= spread["max"]).all()
    comps = table.component_means(frame, table.COMPONENTS)
    assert set(comps["component"]) == set(table.COMPONENTS)
    row = comps[(comps["run"] == ORACLE) & (comps["component"] == "FieldMatchRubric")].iloc[0]
    rows = frame[frame["run"] == ORACLE]
    iv = bootstrap_mean(rows["FieldMatchRubric"].to_numpy(), rows["scenario"].astype(str).tolist(), seed=0)
    assert (row["mean"], row["lo"], row["hi"], row["n"]) == pytest.approx((iv.mean, iv.lo, iv.hi, iv.n))


def test_a_v3_run_charts_each_component_its_score_is_made_of():
    """The shipped ask-all run under rubric v3: FieldMatch less the question cost is the mean score, so the
    overview's component bars hold every term (the cost was once dropped, leaving bars at 1.0 for a 0.735 run)."""
    shipped, run = Path(__file__).resolve().parents[3] / "replays", "clarifylab-cued-v3/ask-all"
    frame = runs_table(shipped, [run])
    components, weights = table.rubric_components(frame)
    means = table.component_means(frame, components).set_index("component")["mean"]
    assert set(means.index) == set(components) == {"FormatCheckRubric", "FieldMatchRubric", "QuestionCostRubric"}
    assert means["QuestionCostRubric"] == pytest.approx(QUESTION_COST * frame["questions"].mean())
    total = sum(weights[c] * means[c] for c in weights)  # every gate passed and no score floored at 0 here
    assert (frame["gate"] == "pass").all() and total == pytest.approx(frame["score"].mean())


def test_exports_round_trip(root, tmp_path):
    frame = runs_table(root, [ORACLE])
    csv = table.export_csv(table.display_frame(frame), tmp_path)
    assert csv.read_text().splitlines()[0].startswith("episode,family,difficulty")
    assert "recorded" not in table.display_frame(frame).columns


def test_exports_get_fresh_files_in_a_bounded_number_of_folders(root, tmp_path, monkeypatch):
    import tempfile

    from core.runs import replays, session_runs

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(session_runs, "MAX_EXPORTS", 3)
    frame = table.display_frame(runs_table(root, [ORACLE]))
    outs = [table.export_csv(frame) if i % 2 else replays.export_jsonl([]) for i in range(8)]
    assert len({out.parent for out in outs}) == 8  # each export its own file: none overwrites another's
    kept = sorted(temp.rglob("episodes.*"))
    assert len(kept) == 3 and kept == sorted(outs[-3:])  # the newest three; clicks no longer fill the disk


def test_upload_names_never_touch_disk():
    assert upload_name("../../etc/passwd") == "upload:passwd"
    assert upload_name("my log (1).jsonl") == "upload:my_log_1_.jsonl"


def test_upload_of_our_format(tmp_path):
    run = load_upload(FIXTURE / ORACLE / "episodes.jsonl")
    assert run.name == "upload:episodes.jsonl" and len(run) == 6 and not run.problems


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _good_lines() -> list[str]:
    return (FIXTURE / ORACLE / "episodes.jsonl").read_text().splitlines()


@pytest.mark.parametrize("name, data, message", [
    ("empty.jsonl", b"", "empty"),                                          # empty file
    ("blank.jsonl", b"\n\n  \n", "no episodes"),                            # only blank lines
    ("bin.jsonl", bytes(range(256)) * 4, "binary"),                         # binary file
    ("text.txt", b"hello world", "neither a JSONL"),                        # not JSON at all
    ("bad.jsonl", b'{"version": 1, "scenario": ', "line 1: not valid JSON"),  # invalid JSON
    ("schema.jsonl", b'{"hello": "world"}\n', "line 1: not an episode record"),  # wrong schema
    ("list.json", b'[{"hello": 1}]', "record 0: not a published trace"),    # wrong trace schema
    ("broken.json", b'[{"a": 1},\n{"b": ', "line 2: not valid JSON"),        # truncated JSON list
])
def test_bad_uploads_name_the_problem(tmp_path, name, data, message):
    with pytest.raises(EpisodeLogError, match=message):
        load_upload(_write(tmp_path / name, data))


def test_one_bad_line_fails_unless_asked_to_keep_valid(tmp_path):
    lines = _good_lines()
    lines[2] = lines[2][:50]
    path = _write(tmp_path / "mixed.jsonl", ("\n".join(lines) + "\n").encode())
    with pytest.raises(EpisodeLogError, match=r"line 3.*keep valid"):
        load_upload(path)
    run = load_upload(path, keep_valid=True)
    assert len(run) == 5 and len(run.problems) == 1 and "line 3" in run.problems[0]


def test_keep_valid_with_nothing_valid_still_fails(tmp_path):
    path = _write(tmp_path / "junk.jsonl", b'{"a": 1}\n{"b": 2}\n')
    with pytest.raises(EpisodeLogError, match="no valid episode"):
        load_upload(path, keep_valid=True)


def test_oversized_upload_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as f:
        f.truncate(100 * 1024 * 1024)  # a sparse 100 MB file: no disk, no RAM
    with pytest.raises(EpisodeLogError, match=r"100\.0 MB.*limited to 50 MB"):
        load_upload(path)


def test_summary_with_dict_interval(root):
    path = root / GUESS / "summary.json"
    summary = json.loads(path.read_text())
    summary["avg_score_ci"] = {"lo": 0.1, "hi": 0.5}
    path.write_text(json.dumps(summary))
    assert {r.name: r for r in discover_runs(root)}[GUESS].ci == (0.1, 0.5)


def test_table_rows_read_only_schema_fields():
    props = Episode.model_json_schema()["properties"]
    assert set(table.RECORD_KEYS) <= set(props)
    assert {"seed", "family", "difficulty", "hidden_profile", "request"} <= set(
        Episode.model_json_schema()["$defs"]["Scenario"]["properties"])


def test_raw_rows_agree_with_validated_episodes():
    for ep in read_episodes(FIXTURE / GUESS / "episodes.jsonl").episodes:
        row = table.record_row("r", json.loads(ep.model_dump_json()))
        assert row["episode"] == ep.id and row["scenario"] == ep.scenario.id
        assert row["score"] == ep.score and row["questions"] == ep.questions_asked
        assert row["gate"] == ("pass" if ep.breakdown.gate_passed else "fail")


def test_a_broken_line_in_a_shipped_run_is_named(root):
    log = root / ORACLE / "episodes.jsonl"
    lines = log.read_text().splitlines()
    lines[3] = lines[3].replace('"scenario"', '"scenari0"')
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(EpisodeLogError, match="line 4"):
        get_run(root, ORACLE)


def test_an_episode_that_fails_validation_when_opened_is_named(root):
    log = root / ORACLE / "episodes.jsonl"
    lines = log.read_text().splitlines()
    lines[1] = lines[1].replace('"policy":"oracle"', '"policy":"oracle","surprise":1')
    log.write_text("\n".join(lines) + "\n")
    run = get_run(root, ORACLE)  # the fast scan reads the table fields only
    with pytest.raises(EpisodeLogError, match="line 2.*surprise"):
        run.episode(1)


def test_compared_episodes(root):
    a, b = compared_episodes(root, ORACLE, GUESS, "seed3_support_triage_easy")
    assert a.policy == "oracle" and b.policy == "guess" and a.scenario == b.scenario
    with pytest.raises(RunNotFound):
        compared_episodes(root, ORACLE, GUESS, "seed99_nope_easy")


SHIPPED = Path(__file__).parents[3] / "replays"


def test_shipped_runs_are_complete_and_strictly_valid():
    runs = {r.name: r for r in discover_runs(SHIPPED)}
    expected = {f"{folder}/{policy}" for folder, _ in SHIPPED_SETS for policy in REPLAYED_POLICIES}
    assert expected <= set(runs)  # plus the shipped model policies' runs (clarify-warmup, clarify-grpo)
    for name, info in runs.items():
        episodes = read_episodes(SHIPPED / name / "episodes.jsonl").episodes  # strict
        assert info.n == len(episodes) and info.command.startswith("python -m core.runs.eval ")
        assert f"--out replays/{name}" in info.command
        assert {e.rubric for e in episodes} == {info.rubric}
        assert info.ci[0] <= info.avg_score <= info.ci[1]


def test_regenerating_reproduces_a_shipped_run(tmp_path, monkeypatch):
    monkeypatch.setattr("core.runs.replays.SHIPPED_SETS", SHIPPED_SETS[1:])
    monkeypatch.setattr("core.runs.replays.REPLAYED_POLICIES", ("guess",))
    monkeypatch.chdir(tmp_path)
    assert regenerate("replays") == ["clarifyrl-heldout50-v1/guess"]
    name = "clarifyrl-heldout50-v1/guess"
    assert (tmp_path / "replays" / name / "episodes.jsonl").read_bytes() == (SHIPPED / name / "episodes.jsonl").read_bytes()
    fresh = json.loads((tmp_path / "replays" / name / "summary.json").read_text())
    assert fresh == json.loads((SHIPPED / name / "summary.json").read_text())


@pytest.mark.parametrize("names, run, expected", [
    (["s1/a", "s1/b", "s2/a"], "s2/a", "s1/a"),     # no sibling: first other run
    (["s1/a", "s2/a", "s2/b"], "s2/a", "s2/b"),     # sibling in the same folder wins
    (["s1/a"], "s1/a", "s1/a"),                     # alone: itself
    ([], None, None),                               # nothing to pick
])
def test_companion_run(names, run, expected):
    assert companion_run(names, run) == expected


def test_the_landing_run_is_the_headline_when_shipped_else_the_first():
    shipped = [r.name for r in discover_runs(SHIPPED)]
    assert shipped[0] != "clarifylab-heldout-v2/clarify-grpo"  # what sorting alone would open
    assert landing_run(shipped) == "clarifylab-heldout-v2/clarify-grpo"
    assert landing_run([GUESS, ORACLE]) == GUESS and landing_run([]) is None


def test_the_first_episode_is_the_tables_first_row_or_none(root):
    assert first_episode(root, GUESS) == runs_table(root, [GUESS])["episode"].iloc[0] == "seed1_meeting_scheduling_easy#0"
    assert first_episode(root, "fixture-set/nope") is None and first_episode(root, "../x") is None
    broken = root / "fixture-set" / "broken"
    broken.mkdir()
    (broken / "episodes.jsonl").write_text("{not json\n", encoding="utf-8")
    assert first_episode(root, "fixture-set/broken") is None
    (broken / "episodes.jsonl").write_text("", encoding="utf-8")
    assert first_episode(root, "fixture-set/broken") is None


def test_a_live_session_run_is_listed_to_no_one_and_opens_only_for_its_page(root):
    name = "sessions/live-0123456789ab-v1"
    shutil.copytree(root / ORACLE, root / name)
    assert name not in {r.name for r in discover_runs(root)}  # never in the picker or the runs table
    for uploads in (None, {}, {"upload:x.jsonl": "other:key"}):  # another page: reads as no run at all
        with pytest.raises(RunNotFound, match=f"^no run named '{name}'$"):
            get_run(root, name, uploads)
        with pytest.raises(RunNotFound, match="no run named"):
            find_episode(root, name, "seed0_event_planning_easy#0", uploads)
    mine = {name: OWNED}
    assert len(get_run(root, name, mine)) == 6 and known_runs(root, [name], mine) == ([name], [])
    shutil.rmtree(root / name)  # dropped to keep the disk bounded: the owner is told why
    with pytest.raises(RunNotFound, match="deleted to keep the server's disk bounded"):
        get_run(root, name, mine)


def _edited(change) -> str:
    """The oracle fixture's first line with ``change(record)`` applied."""
    record = json.loads(_good_lines()[0])
    change(record)
    return json.dumps(record)


def _plan_turn(record: dict) -> dict:
    return next(t for t in record["turns"] if t["call"] and t["call"]["name"] == "propose_plan")


@pytest.mark.parametrize("change, message", [
    (lambda r: r.update(score=float("nan")), "field score: .*finite number in \\[0, 1\\], got nan"),     # NaN
    (lambda r: r.update(score=float("inf")), "field score: .*got inf"),                                 # Infinity
    (lambda r: r.update(score=-0.5), "field score: .*got -0.5"),                                         # negative score
    (lambda r: r.update(questions_asked=-3), "field questions_asked: .*greater than or equal to 0"),      # negative count
    (lambda r: r.update(sample=-1), "field sample: .*greater than or equal to 0"),                       # negative sample
    (lambda r: r["breakdown"]["components"].update(InfoGainRubric=7), "field breakdown.components.InfoGainRubric"),
    (lambda r: _plan_turn(r)["result"].update(score="high"), "field turns.2.result: .*score must be a finite number, got 'high'"),
])
def test_an_upload_is_validated_once_naming_the_line_and_field(tmp_path, change, message):
    lines = _good_lines()
    lines[1] = _edited(change)
    path = _write(tmp_path / "edited.jsonl", ("\n".join(lines) + "\n").encode())
    with pytest.raises(EpisodeLogError, match="edited.jsonl line 2: " + message):
        load_upload(path)
    run = load_upload(path, keep_valid=True)  # keep-valid keeps the other five and names the bad one
    assert len(run) == 5 and len(run.problems) == 1 and "line 2" in run.problems[0]


def test_repeated_episode_ids_are_renumbered_with_a_note(tmp_path):
    first = _good_lines()[0]
    path = _write(tmp_path / "twice.jsonl", (first + "\n" + first + "\n" + first + "\n").encode())
    run = load_upload(path)
    ids = [run.episode(i).id for i in range(3)]
    base = ids[0].rsplit("#", 1)[0]
    assert ids == [f"{base}#0", f"{base}#1", f"{base}#2"] and len(run.index) == 3  # each id opens its own
    assert run.notes == (f"2 repeated episode id(s) renumbered so each opens its own episode "
                         f"(first: {base}#0 → {base}#1)",)
    assert "renumbered" in upload_note(run)


def test_component_names_that_match_table_columns_stay_out_of_the_columns(tmp_path):
    def rename(record):
        record["breakdown"]["components"].update(run=0.5, score=0.25, episode=0.0, family=1.0)
    path = _write(tmp_path / "columns.jsonl", (_edited(rename) + "\n").encode())
    run = load_upload(path)
    row = run.table.iloc[0]
    assert row["run"] == "upload:columns.jsonl" and row["episode"] == run.episode(0).id
    assert row["score"] == run.episode(0).score and row["family"] == run.episode(0).scenario.family
    assert not filter_table(run.table, Filters(runs=(run.name,))).empty  # the episode stays visible


@pytest.mark.parametrize("value, written", [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),  # a formula
    ("+1+1", "'+1+1"),                                           # plus
    ("-2+3", "'-2+3"),                                           # minus
    ("@SUM(A1)", "'@SUM(A1)"),                                   # at
    ("\tcmd", "'\tcmd"),                                         # a tab (OWASP's list)
    ("seed1_event_planning_easy#0", "seed1_event_planning_easy#0"),  # an ordinary id
    (-0.5, -0.5),                                                # numbers stay numbers
])
def test_csv_cells_that_start_like_a_formula_are_prefixed(value, written):
    assert table.csv_cell(value) == written


def test_the_exported_csv_writes_no_formula(tmp_path):
    import csv

    frame = table.episode_table([{**table.record_row("=cmd|' /C calc'!A0", json.loads(_good_lines()[0]))}])
    out = table.export_csv(table.display_frame(frame), tmp_path)
    rows = list(csv.DictReader(out.open()))
    assert rows[0]["run"] == "'=cmd|' /C calc'!A0" and float(rows[0]["score"]) == round(frame["score"].iloc[0], 3)
