"""Replays tab handlers, called as plain functions (no server, no browser)."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from core.runs import transcripts
from demo.replays import handlers as h

FIXTURES = Path(__file__).parents[2] / "fixtures"
ORACLE, GUESS = "fixture-set/oracle", "fixture-set/guess"
NO_FILTERS = ([], [], 0.0, 1.0, "any", [], "")


@pytest.fixture
def root(tmp_path) -> str:
    shutil.copytree(FIXTURES / "replay_runs", tmp_path / "replays")
    return str(tmp_path / "replays")


def request(**query):
    return SimpleNamespace(query_params=query)


def test_on_load_lists_runs_and_picks_the_first(root):
    runs_df, runs, run_a, run_b, key, note = h.on_load(root, request())
    assert list(runs_df["run"]) == [GUESS, ORACLE] and runs_df["95% interval"].iloc[0]
    assert all(len(score) == 5 for score in runs_df["avg score"])  # three decimals, as the interval prints them
    assert runs["value"] == [GUESS] and run_a["value"] == GUESS and run_b["value"] == ORACLE
    assert key == f"{GUESS}|seed1_meeting_scheduling_easy#0" and note == ""  # its first episode opens
    shown, _, _ = h.filter_episodes(root, {}, [GUESS], *NO_FILTERS)
    assert key == h.episode_key(GUESS, shown["episode"].iloc[0])  # the table's first row


def test_on_load_reads_run_and_episode_from_the_url(root):
    _, runs, _, _, key, note = h.on_load(root, request(run=ORACLE, episode="seed2_event_planning_medium#0"))
    assert runs["value"] == [ORACLE] and key == f"{ORACLE}|seed2_event_planning_medium#0" and note == ""


@pytest.mark.parametrize("bad", ["../../etc", "/etc/passwd", "fixture-set/../../x", "nope"])
def test_on_load_ignores_a_bad_run_in_the_url(root, bad):
    _, runs, _, _, key, note = h.on_load(root, request(run=bad, episode="x#0"))
    assert runs["value"] == [GUESS] and key == f"{GUESS}|x#0" and "No run named" in note


def test_filter_episodes(root):
    shown, picker, count = h.filter_episodes(root, {}, [ORACLE, GUESS], *NO_FILTERS)
    assert len(shown) == 12 and "text" not in shown.columns and "**12** episodes" in count
    assert picker["choices"][0][1] == f"{ORACLE}|seed1_meeting_scheduling_easy#0"
    shown, _, _ = h.filter_episodes(root, {}, [ORACLE, GUESS], ["event_planning"], ["medium"],
                                    0.5, 1.0, "pass", ["plan"], "")
    assert list(shown["episode"]) == ["seed2_event_planning_medium#0"]
    assert "value" not in picker  # episodes pass: the shown episode stays


def test_a_filter_nothing_passes_empties_the_picker(root):
    """The picker had kept the last episode's key (shown raw) and the view its episode, under "0 episodes"."""
    shown, picker, count = h.filter_episodes(root, {}, [ORACLE], [], [], 0.0, 1.0, "any", [], "no such words at all")
    assert shown.empty and picker == {"__type__": "update", "choices": [], "value": None}
    assert count == "**0** episodes: no episode passes these filters"


def test_pick_row_returns_that_rows_episode(root):
    shown, _, _ = h.filter_episodes(root, {}, [GUESS], *NO_FILTERS)
    evt = gr.SelectData(None, {"index": [2, 1], "value": "x"})
    assert h.pick_row(shown, evt) == f"{GUESS}|seed3_support_triage_easy#0"
    # After a client-side sort the clicked row's own values win over its position.
    row = shown.iloc[4].tolist()
    evt = gr.SelectData(None, {"index": [0, 1], "value": "x", "row_value": row})
    assert h.pick_row(shown, evt) == f"{GUESS}|seed5_medical_intake_medium#0"


def test_show_episode(root):
    header, chat, marks, fig, link = h.show_episode(root, {}, f"{GUESS}|seed2_event_planning_medium#0")
    assert "score **0.125**" in header and chat[0]["role"] == "user"
    assert list(marks["field"])[0] == "★ event_type" and fig.data
    assert "?run=fixture-set%2Fguess&episode=seed2_event_planning_medium%230" in link


@pytest.mark.parametrize("key", ["nope|x#0", f"{GUESS}|missing#0", "../../etc|passwd", "no-bar"])
def test_show_episode_with_a_bad_key_explains(root, key):
    header, chat, marks, fig, link = h.show_episode(root, {}, key)
    assert header.startswith("⚠") and chat == [] and link == "" and marks.empty


@pytest.mark.parametrize("key", [None, "", 123, {}])  # nothing picked; an API caller's number or object
def test_show_episode_without_a_pick_asks_for_one(root, key):
    header, chat, marks, fig, link = h.show_episode(root, {}, key)
    assert header == h.PICK_HINT and chat == [] and list(marks.columns)[0] == "field"


def test_upload_then_browse_the_upload(root, tmp_path):
    uploads, note, runs, _, _, cleared = h.upload_log(root, str(FIXTURES / "published_trace_small.json"), False, {}, [GUESS])
    name = "upload:published_trace_small.json"
    assert name in uploads and "3 episodes" in note and runs["value"] == [GUESS, name]
    shown, _, _ = h.filter_episodes(root, uploads, [name], *NO_FILTERS)
    assert "recorded" in shown.columns and len(shown) == 3
    header, _, _, _, link = h.show_episode(root, uploads, f"{name}|seed10000_event_planning_easy#0")
    assert "recorded score" in header and link == ""  # uploads have no permalink


@pytest.mark.parametrize("content, keep, message", [
    (b"", False, "empty"),                                        # empty file
    (b"\x89PNG\r\n\x1a\n\x00\x00", False, "binary"),              # binary file
    (b"{not json", False, "line 1: not valid JSON"),              # invalid JSON
    (b'{"a": 1}\n', False, "not an episode record"),              # wrong schema
    (b"[" * 100_000, False, "nested too deeply"),                # a published-trace file of brackets
    (b'{"a": ' + b"[" * 100_000 + b"\n", False, "nested too deeply"),  # one JSONL line of brackets
])
def test_bad_uploads_leave_the_session_untouched(root, tmp_path, content, keep, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    before = {"upload:x": object()}
    uploads, note, runs, _, _, cleared = h.upload_log(root, str(path), keep, before, [GUESS])
    assert uploads is before and note.startswith("✗") and message in note and runs == gr.update()
    assert cleared is None  # the upload box is emptied for the next file
    assert str(tmp_path) not in note  # the server's temporary folder is never shown


def test_upload_over_the_size_limit_is_refused_unread(root, tmp_path):
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as f:  # sparse: 60 MB on paper, nothing on disk
        f.truncate(60 * 2**20)
    _, note, *_ , cleared = h.upload_log(root, str(path), False, {}, [])
    assert note.startswith("✗") and "50 MB" in note and cleared is None


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_upload_with_a_utf8_byte_order_mark_is_read(root, tmp_path, suffix):
    source = FIXTURES / ("replay_runs/fixture-set/guess/episodes.jsonl" if suffix == ".jsonl"
                         else "published_trace_small.json")
    path = tmp_path / f"bom{suffix}"
    path.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    uploads, note, *_ = h.upload_log(root, str(path), False, {}, [])
    assert note.startswith("✓ Opened") and len(uploads) == 1


def test_upload_with_one_bad_line_only_when_asked(root, tmp_path):
    lines = (FIXTURES / "replay_runs" / ORACLE / "episodes.jsonl").read_text().splitlines()
    lines.insert(1, '{"version": 1, "oops"')
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines))
    _, note, _, _, _, _ = h.upload_log(root, str(path), False, {}, [])
    assert "line 2" in note and note.startswith("✗")
    uploads, note, _, _, _, _ = h.upload_log(root, str(path), True, {}, [])
    assert "6 episodes" in note and "Skipped 1" in note and "line 2" in note


def test_exports(root):
    csv = h.export_table(root, {}, [ORACLE, GUESS], *NO_FILTERS[:-1], "zoom")
    lines = Path(csv["value"]).read_text().splitlines()
    assert lines[0].startswith("episode,family") and len(lines) == 7
    jsonl = h.export_episodes(root, {}, [GUESS], *NO_FILTERS)
    rows = [json.loads(line) for line in Path(jsonl["value"]).read_text().splitlines()]
    assert len(rows) == 6 and rows[0]["policy"] == "guess"


def test_overview_returns_four_figures(root):
    figs = h.overview(root, {}, [ORACLE, GUESS], *NO_FILTERS)
    assert len(figs) == 4 and all(f.data for f in figs)


def test_compare_and_side_by_side(root):
    note, diff, fig, scenarios, *_ = h.compare(root, {}, ORACLE, GUESS)
    assert "**6** shared scenarios" in note and len(diff) == 6 and len(scenarios["choices"]) == 6
    assert scenarios["value"] == "seed6_meeting_scheduling_hard"  # the largest gap opens first
    chat_a, chat_b = h.compare_episode(root, {}, ORACLE, GUESS, scenarios["choices"][0])
    assert chat_a["value"][0] == chat_b["value"][0] and chat_a["value"] != chat_b["value"]
    assert chat_a["label"].startswith(f"a: {ORACLE} · score")


def test_compare_with_a_missing_run(root):
    note, diff, _, scenarios, *_ = h.compare(root, {}, ORACLE, None)
    assert note.startswith("⚠") and diff is None and scenarios["choices"] == []
    assert h.compare_episode(root, {}, ORACLE, "../x", "s") == ([], [])


@pytest.mark.parametrize("run_a, run_b, scenario", [
    (5, GUESS, "seed6_meeting_scheduling_hard"),        # an API caller's number for a run
    ({}, ["x"], "seed6_meeting_scheduling_hard"),        # objects for both
    (None, None, "x"),                                   # an empty replays folder: no runs, a typed scenario
    (ORACLE, GUESS, {}),                                 # an object for the scenario
    (ORACLE, GUESS, ["a", "b"]),                         # a list for the scenario
])
def test_non_string_picks_are_explained_not_raised(root, run_a, run_b, scenario):
    note, diff, *_ = h.compare(root, {}, run_a, run_b)
    assert note.startswith("⚠") or "shared scenarios" in note
    assert h.compare_episode(root, {}, run_a, run_b, scenario) == ([], [])


def test_compare_refuses_runs_of_different_rubric_versions(root):
    """The tab uses the CLI's comparison: a v1 run against a v2 run is refused, saying why."""
    v2 = Path(root) / "fixture-set" / "guess-v2"
    v2.mkdir()
    lines = (Path(root) / "fixture-set" / "guess" / "episodes.jsonl").read_text().splitlines()
    v2.joinpath("episodes.jsonl").write_text(
        "".join(json.dumps({**json.loads(line), "rubric": "v2"}) + "\n" for line in lines))
    note, diff, fig, scenarios, *_ = h.compare(root, {}, ORACLE, "fixture-set/guess-v2")
    assert note.startswith("⚠") and "rubric v1" in note and "under v2" in note and "not comparable" in note
    assert diff is None and scenarios["choices"] == [] and not fig.data
    words = " ".join(a.text for a in fig.layout.annotations)
    assert "not compared" in words and "share no scenario" not in words  # the chart agrees with the note


def test_compare_returns_the_transcripts_of_the_runs_it_compares(root):
    """Swapping a and b keeps the same largest-gap scenario, so the chats must come with the table."""
    *_, chat_a, chat_b = h.compare(root, {}, ORACLE, GUESS)
    *_, swapped_a, swapped_b = h.compare(root, {}, GUESS, ORACLE)
    assert chat_a["label"].startswith(f"a: {ORACLE}") and swapped_a["label"].startswith(f"a: {GUESS}")
    assert swapped_a["value"] == chat_b["value"] and swapped_b["value"] == chat_a["value"]
    *_, none_a, none_b = h.compare(root, {}, ORACLE, "nope")
    assert none_a == {"__type__": "update", "value": [], "label": "Run a"} and none_b["value"] == []


@pytest.mark.parametrize("runs", [["../../etc"], ["upload:gone.jsonl"], [ORACLE, "nope"]])
def test_unknown_runs_are_reported_not_raised(root, runs):
    """A name that is no run is left out with a warning; the runs that exist stay in the table."""
    shown, picker, count = h.filter_episodes(root, {}, runs, *NO_FILTERS)
    real = [r for r in runs if r == ORACLE]
    assert count.startswith("⚠") and "left out" in count and len(shown) == 6 * len(real)
    assert len(picker["choices"]) == 6 * len(real) and set(shown["run"]) == set(real)
    figs = h.overview(root, {}, runs, *NO_FILTERS)
    assert all(bool(f.data) == bool(real) for f in figs)
    with pytest.raises(gr.Error, match="Nothing exported: .*Remove it from Runs"):
        h.export_table(root, {}, runs, *NO_FILTERS)


def _played(root):
    """A finished live episode of this page, saved as its run (what the Live tab's end panel does)."""
    from core.clarify.scenarios import generate_scenario
    from core.live import session as live

    session = live.agent_move(live.start("agent", generate_scenario(0, "easy")), "propose_plan", "{}")
    live.save_run(session, root)
    return session


def test_a_pages_live_runs_are_listed_and_opened_only_on_that_page(root):
    session = _played(root)
    run, key = session.run_name, h.episode_key(session.run_name, session.episodes[-1].id)
    for uploads in ({}, {"upload:x.jsonl": "other:key"}):  # another visitor's page
        assert run not in h.on_load(root, request())[1]["choices"]
        assert run not in h.on_load(root, request(run=run))[1]["choices"]
        header, chat, *_ = h.show_episode(root, uploads, key)
        assert header == f"⚠ no run named {transcripts.inert(repr(run))}" and chat == []
        assert h.filter_episodes(root, uploads, [run], *NO_FILTERS)[0]["run"].tolist() == []
    uploads, runs, run_a, _ = h.adopt_session_runs(root, {}, session)  # the Replays tab opened on this page
    assert run in runs["choices"] and run in run_a["choices"]
    header, chat, *_ = h.show_episode(root, uploads, key)
    assert "policy `human`" in header and chat
    tabs, uploads, runs, *_, picked = h.open_session_episode(root, {}, session, [ORACLE])  # "Open in Replays"
    assert tabs["selected"] == "replays" and runs["value"] == [ORACLE, run] and picked == key
    assert h.adopt_session_runs(root, {}, None)[0] == {}  # no live play yet: nothing to adopt


def test_an_upload_keeps_the_pages_live_runs(root, tmp_path):
    session = _played(root)
    uploads, *_ = h.adopt_session_runs(root, {}, session)
    log = tmp_path / "mine.jsonl"
    shutil.copy(FIXTURES / "replay_runs" / ORACLE / "episodes.jsonl", log)
    uploads, *_ = h.upload_log(root, str(log), False, uploads, [])
    assert set(uploads) == {session.run_name, "upload:mine.jsonl"}


def test_a_page_with_live_runs_keeps_the_per_session_upload_cap(root, tmp_path):
    """A page whose first run is its own Live play run (no store key) uploads under one session like any other,
    so its uploads stay within the per-session cap (each upload once got a fresh session, past the cap)."""
    from core.runs import uploads as store

    session = _played(root)
    uploads, *_ = h.adopt_session_runs(root, {}, session)
    for i in range(store.PER_SESSION + 2):
        log = tmp_path / f"mine{i}.jsonl"
        shutil.copy(FIXTURES / "replay_runs" / ORACLE / "episodes.jsonl", log)
        uploads, *_ = h.upload_log(root, str(log), False, uploads, [])
    keys = [k for name, k in uploads.items() if name.startswith("upload:")]
    assert len({k.split(":")[0] for k in keys}) == 1
    assert sum(store.STORE.holds(k) for k in keys) == store.PER_SESSION
    h.release_uploads(uploads)
