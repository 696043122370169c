"""Live play handlers, called directly (no server) with a tiny local model."""

import json
import re
import shutil
from pathlib import Path

import pytest

from core.runs.episode_log import read_episodes
from demo.live import handlers as h
from tests.fixtures.tiny_chat import build_tiny_chat

OUT = ["session", "chat", "status", "budget", "card", "profile", "panel", "header", "breakdown", "marks",
       "link", "download", "user_row", "agent_row", "belief_panel", "belief_note", "belief_plot"]


def named(outputs):
    assert len(outputs) == len(OUT)
    return dict(zip(OUT, outputs))


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    build_tiny_chat(root / "tiny")
    return root


def start(replays, models_dir, mode="watch", key=None, path="", **kw):
    key = key if key is not None else "tiny"  # a discovered folder is keyed by its name
    args = dict(source="generated", family="meeting_scheduling", difficulty="easy", seed=0, heldout=0,
                rubric="v1", temperature=0.7, max_new_tokens=24, sample_seed=0, int8=False)
    args.update(kw)
    return named(h.start(None, str(replays), str(models_dir), key, path, mode, *args.values()))


def test_model_list_marks_what_is_here(models_dir):
    picker, note = h.list_models(str(models_dir))
    labels = dict((key, label) for label, key in picker["choices"])
    tiny = "tiny"
    assert labels[tiny].startswith("✓") and labels["base 4B (Qwen/Qwen3-4B)"].startswith("✗")
    assert "hf download Qwen/Qwen3-4B" in h.describe_model(str(models_dir), "base 4B (Qwen/Qwen3-4B)", "")
    assert "no folder at" in h.describe_model(str(models_dir), None, "/no/such/model")


def test_watch_episode_streams_and_ends_with_score_breakdown_link_and_download(models_dir, tmp_path):
    out = start(tmp_path, models_dir)
    assert out["chat"][0]["content"] == out["session"].scenario.request and "meeting_scheduling" in out["card"]
    views = [named(v[:-1]) for v in h.play(out["session"], str(tmp_path))]
    assert len(views) >= 2 and views[-1]["session"].done
    final = views[-1]
    score = float(re.search(r"score \*\*([0-9.]+)\*\*", final["header"]).group(1))
    assert score == final["session"].episodes[-1].score
    assert final["breakdown"] is not None and "FieldMatch" in json.dumps(final["breakdown"].to_dict())
    assert list(final["marks"]["field"])  # the hidden profile vs plan table
    run = final["session"].run_name
    assert f"<code>{run}</code>" in final["link"] and "private to this page" in final["link"]
    log = Path(final["download"])
    assert log.is_relative_to(tmp_path) and read_episodes(log).episodes[0].id == final["session"].episodes[-1].id


def test_agent_episode_through_the_handlers(models_dir, tmp_path):
    out = start(tmp_path, models_dir, mode="agent", key="")
    assert out["agent_row"]["visible"] and not out["profile"]["visible"]  # the agent must not see it
    out = named(h.ask_user(out["session"], str(tmp_path), "Who are the participants?"))
    assert "Questions left:** 5" in out["budget"] and out["chat"][-1]["role"] == "user"
    out = named(h.propose_plan(out["session"], str(tmp_path), "not json"))
    assert "must be a JSON object" in out["status"] and not out["session"].done
    out = named(h.propose_plan(out["session"], str(tmp_path), '{"participants": "whole team"}'))
    assert out["session"].done and out["profile"]["visible"] and "score" in out["header"]


def test_agent_mode_hides_what_only_a_playing_model_uses():
    assert [u["visible"] for u in h.model_fields("agent")] == [False] * 3
    for mode in ("watch", "user"):
        assert [u["visible"] for u in h.model_fields(mode)] == [True] * 3


@pytest.mark.parametrize("breakage, message", [
    (lambda d: shutil.rmtree(d), "no folder at"),                                         # missing
    (lambda d: (d / "model.safetensors").write_bytes(b"garbage"), "could not load"),      # broken weights
    (lambda d: (d / "config.json").write_text("{"), "not valid JSON"),                    # broken config
])
def test_broken_or_missing_checkpoint_gives_a_clear_message(models_dir, tmp_path, breakage, message):
    folder = tmp_path / "copy"
    shutil.copytree(models_dir / "tiny", folder)
    breakage(folder)
    out = start(tmp_path, models_dir, key="", path=str(folder))
    views = [named(v[:-1]) for v in h.play(out["session"], str(tmp_path))]
    assert message in views[-1]["status"] and views[-1]["status"].startswith("⚠️")


def test_bad_inputs_say_what_is_wrong(models_dir, tmp_path):
    assert "pick a model" in start(tmp_path, models_dir, key="", path="")["status"]
    assert "held-out index" in start(tmp_path, models_dir, source="heldout", heldout=999)["status"]
    assert "temperature" in start(tmp_path, models_dir, temperature=9)["status"]
    assert "no question waiting" in named(h.answer(None, str(tmp_path), "hi"))["status"]
    assert "start an episode" in named(h.ask_user(None, str(tmp_path), "hi"))["status"]


def test_two_sessions_never_share_state(models_dir, tmp_path):
    a = start(tmp_path, models_dir, mode="agent", key="")["session"]
    b = start(tmp_path, models_dir, mode="agent", key="", family="event_planning", difficulty="hard")["session"]
    a = named(h.ask_user(a, str(tmp_path), "Which date?"))["session"]
    b = named(h.ask_user(b, str(tmp_path), "How many guests?"))["session"]
    b = named(h.propose_plan(b, str(tmp_path), "{}"))["session"]
    assert a.session_id != b.session_id and not a.done and b.done
    assert [t.call.arguments["question"] for t in a.env.turns] == ["Which date?"]
    assert a.run_name != b.run_name and a.episodes == []


def test_stop_ends_the_running_turn_and_says_so(models_dir, tmp_path):
    out = start(tmp_path, models_dir, temperature=0, max_new_tokens=1024)  # greedy: no end token here
    stream = h.play(out["session"], str(tmp_path))
    first = next(stream)
    assert "generating" in first[2] and h.request_stop(first[-1]) == "stop requested"
    last = named(list(stream)[-1][:-1])
    assert last["status"].startswith("stopped") and not last["session"].env.turns
    assert h.request_stop(first[-1]) == "nothing is generating" and h.request_stop(None) == "nothing is generating"


@pytest.mark.parametrize("typed", ["/etc", "/etc/passwd", "../../etc", "/nonexistent/path", "."])
def test_public_space_folder_box_never_probes_server_paths(models_dir, monkeypatch, typed):
    """With SPACE_ID set (a public Space), a path outside the models folder is refused on its text:
    the note is the same whether or not the path exists."""
    monkeypatch.setattr(h, "PUBLIC", True)
    note = h.describe_model(str(models_dir), None, typed)
    assert "only folders inside the models folder" in note
    assert "config.json" not in note and "no folder" not in note and typed not in note


def test_public_space_folder_box_plays_a_folder_of_the_models_folder(models_dir, monkeypatch):
    monkeypatch.setattr(h, "PUBLIC", True)
    inside = next(p.name for p in Path(models_dir).iterdir() if p.is_dir())
    assert h.describe_model(str(models_dir), None, inside).startswith("✓ available")
    assert "box is off" in h.describe_model(None, None, inside)  # no models folder: the box is off


ROOTED = re.compile(r"(?:^|[\s(`'\"=:])(?:/|~)[A-Za-z0-9._-]")
"""A rooted server path inside a message (``/etc``, ``~/x``); a relative ``checkpoints/x`` is not one."""


def typed_keys(models_dir, tmp_path):
    """Keys a visitor types into the picker: missing, a system folder, a file, absolute model folders."""
    build_tiny_chat(tmp_path / "outside")
    return ["/no/such/model", "/etc", "/proc/self/environ", str(Path(models_dir) / "tiny" / "config.json"),
            str(tmp_path / "outside"), str(Path(models_dir) / "tiny"), "~", "../outside"]


def test_public_space_typed_keys_get_one_refusal_and_nothing_loads(models_dir, tmp_path, monkeypatch):
    """Typed into the Model picker on a Space, every key outside the list gets the folder box's one
    refusal, naming no path, whatever exists on disk; Start refuses it too, so nothing typed loads."""
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    monkeypatch.setattr(h, "PUBLIC", True)
    keys = typed_keys(models_dir, tmp_path)
    notes = {h.describe_model(str(models_dir), key, "") for key in keys}
    assert len(notes) == 1 and "only folders inside the models folder" in notes.pop()
    for key in keys:
        out = start(tmp_path, models_dir, key=key)
        assert out["session"] is None and "only folders inside the models folder" in out["status"]
        assert not ROOTED.search(out["status"])
    assert h.describe_model(str(models_dir), "tiny", "").startswith("✓ available")  # the listed folder plays


def test_public_space_messages_name_no_rooted_path(models_dir, tmp_path, monkeypatch):
    """With SPACE_ID set, every availability message of the one list (both kinds), every typed-key note
    and a played session's policy name show bare or checkout-relative names only."""
    from core.models import availability, lists
    from demo.decisions import handlers as dh

    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    monkeypatch.setattr(h, "PUBLIC", True)
    messages = [label for label, _ in h.model_choices(str(models_dir))]
    for entry in lists.all_entries(str(models_dir)):
        messages.append(h.describe_model(str(models_dir), entry.key, "") if entry.kind == "policy"
                        else availability.check_decision(entry).message)
    messages += [h.describe_model(str(models_dir), None, key) for key in typed_keys(models_dir, tmp_path)]
    out = start(tmp_path, models_dir)
    messages.append(out["session"].model_label)
    messages += [dh.model_note(str(models_dir), e.key) for e in lists.decision_entries(str(models_dir))]
    agent = start(tmp_path, models_dir, key="decision:tiny", source="cued", rubric="v3")  # a local folder's agent
    messages += [agent["session"].model_label, h.describe_model(str(models_dir), "decision:tiny", "")]
    assert [m for m in messages if ROOTED.search(m)] == []


def test_a_typed_chat_endpoint_plays_a_watch_episode_and_the_operators_is_listed(models_dir, tmp_path, monkeypatch):
    from tests.fixtures.chat_stream_server import ChatStreamServer, sse, tagged, text_deltas

    server = ChatStreamServer([sse(text_deltas(tagged("propose_plan", plan="{}")))])
    try:
        assert h.describe_model(str(models_dir), None, server.spec()).startswith("✓ available")
        out = start(tmp_path, models_dir, key=server.spec())  # typed into the picker
        *_, last = h.play(out["session"], str(tmp_path))
        last = named(last[:-1])
        assert last["status"].startswith("episode ended (plan)") and "Speed" in last["budget"]
    finally:
        server.close()
    monkeypatch.setenv("CLARIFYLAB_CHAT_URL", server.spec("served-model"))
    assert "endpoint: served-model" in [key for _, key in h.model_choices(str(models_dir))]


@pytest.mark.parametrize("allow, refused", [("", True), ("1", False)])
def test_public_space_refuses_typed_chat_endpoints_unless_allowed(models_dir, monkeypatch, allow, refused):
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    monkeypatch.setenv("CLARIFYLAB_ALLOW_URLS", allow)
    note = h.describe_model(str(models_dir), None, "openai:http://10.0.0.1:8000/v1#m")
    assert ("typed chat endpoints are off" in note) == refused and note.startswith("✓") != refused


def test_the_picker_quotes_a_models_measured_score_before_start(tmp_path):
    # the packaged SmolLM2 played the published 50 zero-shot: its shipped run is quoted beside the entry
    from core.models.entries import packaged_entries
    from core.runs.replays import SHIPPED_RUNS
    from core.runs.measured import measured_runs

    entry = packaged_entries()[0]
    runs = measured_runs(entry.location)
    assert {r.name for r in runs} >= {"clarifyrl-heldout50-v1/smollm2-135m"}
    summary = json.loads((SHIPPED_RUNS / "clarifyrl-heldout50-v1/smollm2-135m/summary.json").read_text())
    note = h.describe_model(str(tmp_path), entry.key, "")
    assert f"measured: {summary['avg_score']:.3f}" in note and "clarifyrl-heldout50-v1/smollm2-135m" in note
    label = next(lab for lab, key in h.model_choices(str(tmp_path)) if key == entry.key)
    assert "tokens/s" in label  # the expected wait, in the picker before Start


def test_measured_runs_match_whole_path_parts(tmp_path):
    # clarify-grpo's runs are not clarify-smollm2-grpo's: a run matches on whole trailing path parts
    from core.runs.measured import measured_runs

    for name, policy in (("a/grpo", "model:checkpoints/clarify-grpo"), ("a/smol", "model:checkpoints/clarify-smollm2-grpo")):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "episodes.jsonl").write_text("")
        (tmp_path / name / "summary.json").write_text(json.dumps({"policy": policy, "avg_score": 0.5}))
    assert [r.name for r in measured_runs("/srv/app/checkpoints/clarify-grpo", tmp_path)] == ["a/grpo"]
    assert measured_runs("/srv/app/checkpoints/other", tmp_path) == []


def test_the_tokens_slider_follows_the_model_folders_declared_budget(tmp_path):
    root = tmp_path / "models"
    build_tiny_chat(root / "plain")
    shutil.copytree(root / "plain", root / "declares")
    (root / "declares" / "generation_config.json").write_text('{"max_new_tokens": 256}')
    shutil.copytree(root / "plain", root / "broken")
    (root / "broken" / "generation_config.json").write_text('{"max_new_tokens": "lots"}')
    default = h.GenerationSettings().max_new_tokens
    assert h.declared_tokens(str(root), "declares", "") == 256
    assert h.declared_tokens(str(root), "plain", "") == default
    assert h.declared_tokens(str(root), "broken", "") == default  # describe_model names what is wrong
    assert h.declared_tokens(str(root), None, "/no/such/model") == default
    assert h.declared_tokens(str(root), "no such key", "") == default


def test_the_ask_or_act_agent_is_picked_after_the_policies_with_what_it_measured(models_dir):
    keys = [key for _, key in h.model_choices(str(models_dir))]
    agents = [k for k in keys if k.startswith("decision:")]
    assert agents[0] == "decision:decision-smollm2-pooled-cued" and "decision:decision-rlcd" in agents
    assert keys.index(agents[0]) > keys.index("clarify-grpo")  # the playing policies first
    note = h.describe_model(str(models_dir), agents[0], "")
    assert note.startswith("✓ available · `decision:decision-smollm2-pooled-cued`") and h.AGENT_NOTE in note
    run = json.loads(Path("replays/clarifylab-cued-v3/decision-smollm2-pooled-cued/summary.json").read_text())
    assert f"measured: {run['avg_score']:.3f}" in note and "clarifylab-cued-v3" in note  # its committed run, quoted


def test_the_agent_plays_a_cued_episode_with_its_belief_bars(models_dir, tmp_path):
    out = start(tmp_path, models_dir, key="decision:decision-rlcd", source="cued", rubric="v3")
    assert out["session"].scenario.cues is not None and out["belief_panel"]["visible"] is False
    views = [named(v[:-1]) for v in h.play(out["session"], str(tmp_path))]
    first, final = views[0], views[-1]
    assert first["belief_panel"]["visible"] and "Beliefs of" in first["belief_note"] and "not asked yet" in \
        first["belief_note"] and first["belief_plot"] is not None
    assert final["session"].done and "not asked yet" not in final["belief_note"]
    saved = read_episodes(Path(final["download"])).episodes
    assert saved[-1].beliefs == final["session"].episodes[-1].beliefs and saved[-1].policy.startswith("decision:")


def test_a_cued_source_picks_rubric_v3_and_leaving_it_picks_v1():
    assert h.rubric_for("cued", "v1") == "v3"
    assert h.rubric_for("generated", "v3") == "v1"
    assert h.rubric_for("heldout", "v2") == {"__type__": "update"}  # the visitor's pick stays
    assert set(h.SOURCES) == set(__import__("core.live.session", fromlist=["SOURCES"]).SOURCES)


@pytest.mark.parametrize("field, value, message", [
    ("sample_seed", None, None),  # a cleared sampling-seed box is the default seed, as the scenario seed's is
    ("seed", None, None),
    ("max_new_tokens", None, "max new tokens is empty: type a number"),
    ("temperature", None, "temperature is empty: type a number"),
    ("seed", float("inf"), "the scenario seed must be a whole number; got 'inf'"),
    ("heldout", float("inf"), "the held-out index must be a whole number; got 'inf'"),
    ("sample_seed", float("nan"), "the sampling seed must be a whole number; got 'nan'"),
    ("max_new_tokens", 2.5, "max new tokens must be a whole number; got '2.5'"),
    ("temperature", float("inf"), "temperature must be a finite number; got 'inf'"),
])
def test_start_reads_each_number_box_or_names_it(models_dir, tmp_path, field, value, message):
    """A cleared or infinite number once raised out of Start (int(None), int(inf)); each box is named now."""
    out = start(tmp_path, models_dir, **{field: value})
    if message is None:
        assert out["session"] is not None and "⚠️" not in out["status"]
    else:
        assert out["status"] == f"⚠️ {message}" and out["session"] is None


def test_a_typed_name_no_file_system_takes_is_no_model(models_dir, tmp_path, monkeypatch):
    """A path part over 255 bytes raised ENAMETOOLONG out of the note, the token budget and Start."""
    long = "x" * 300
    assert "unknown model" in h.describe_model(str(models_dir), long, "")
    assert "⚠️" in start(tmp_path, models_dir, key=long)["status"]
    monkeypatch.setattr(h, "PUBLIC", True)
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    for typed in (long, "a\x00b", "a\ud800b"):  # one refusal on a Space, naming no position or server path
        status = start(tmp_path, models_dir, key="", path=typed)["status"]
        assert "only folders inside the models folder" in status and "position" not in status, status


def test_play_changes_nothing_when_it_is_not_the_models_move(models_dir, tmp_path):
    """Start's play in agent mode once re-sent Start's view; arriving after an Ask made meanwhile (a loaded server),
    it put the session back to before the question, and the question was gone."""
    out = start(tmp_path, models_dir, mode="agent")
    asked = named(h.ask_user(out["session"], str(tmp_path), "How many guests?"))
    (*outputs, stop), = list(h.play(out["session"], str(tmp_path)))  # the late play: one update, every output skipped
    assert len(outputs) == len(OUT) and all(o == h.gr.skip() for o in outputs)
    assert "How many guests?" in json.dumps(asked["chat"])

