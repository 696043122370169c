"""Importing logs: format detection, published curated traces (re-scored with v1), our JSONL."""

import json
from pathlib import Path

import pytest

from core.runs import importer as episodes
from core.runs.episode_log import EpisodeLogError, read_episodes

FIXTURES = Path(__file__).parents[2] / "fixtures"
TRACE = FIXTURES / "published_trace_small.json"
OURS = FIXTURES / "replay_runs" / "fixture-set" / "oracle" / "episodes.jsonl"


def _traces() -> list[dict]:
    return json.loads(TRACE.read_text())


@pytest.mark.parametrize("text, fmt", [
    ('[{"scenario_id": "x"}]', "published-trace"),   # a JSON list
    ('\n  [\n]', "published-trace"),                  # leading whitespace
    ('\ufeff{"version": 1}', "episodes"),             # a BOM before JSONL
    ('{"version": 1}\n{"version": 1}', "episodes"),   # JSONL
])
def test_detect_format(tmp_path, text, fmt):
    path = tmp_path / "log"
    path.write_text(text, encoding="utf-8")
    assert episodes.detect_format(path) == fmt


def test_published_trace_is_replayed_and_rescored_with_v1():
    fmt, report = episodes.read_log(TRACE)
    assert fmt == "published-trace" and len(report.episodes) == 3 and not report.problems
    ep = report.episodes[0]
    assert ep.id == "seed10000_event_planning_easy#0"
    assert ep.policy == "published:Champion (1.7B, beta=0.3)" and ep.rubric == "v1"
    assert ep.scenario.hidden_profile == {"event_type": "birthday", "date": "today", "venue": "office"}
    assert [t.call.name for t in ep.turns] == ["ask_question"] * 3 + ["propose_plan"]
    assert ep.fields_revealed == ["event_type", "date", "venue"] and ep.termination == "plan"
    # Our v1 agrees with the recorded score here: 0.5 + 0.2 + 0.15*0.5 + 0.15*0.75.
    assert ep.score == pytest.approx(0.8875) and ep.recorded.score == pytest.approx(0.8875)
    assert ep.breakdown.components == pytest.approx(ep.recorded.breakdown)


def test_stale_recorded_breakdown_is_kept_but_ours_is_fresh():
    ep = episodes.read_log(TRACE)[1].episodes[1]
    assert ep.termination == "unparseable" and ep.turns[0].call is None and ep.turns[0].parse_error
    assert ep.recorded.breakdown["FieldMatchRubric"] == 0.4   # the published stale value, as recorded
    assert ep.breakdown.components["FieldMatchRubric"] == 0.0  # ours belongs to this episode
    assert ep.score == 0.0


def test_unknown_scenario_is_rebuilt_from_the_trace():
    ep = episodes.read_log(TRACE)[1].episodes[2]
    assert ep.scenario.seed is None and ep.scenario.family == "meeting_scheduling"
    assert ep.scenario.id == "custom_meeting_1"  # the trace's own id, not "seedNone_..."
    assert ep.scenario.hidden_profile == {"participants": "design team", "date": "tuesday", "time": "10:00"}
    assert ep.score == pytest.approx(0.55) and ep.breakdown.gate_passed
    assert ep.fields_revealed == ["participants"] and ep.plan["date"] == "monday"


def test_repeated_traces_get_sample_indices(tmp_path):
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(_traces()[:1] * 3))
    ids = [e.id for e in episodes.read_log(path)[1].episodes]
    assert ids == [f"seed10000_event_planning_easy#{i}" for i in range(3)]


@pytest.mark.parametrize("mutate, message", [
    (lambda t: t.pop("messages"), "missing messages"),                    # schema: no messages
    (lambda t: t.update(messages="hi"), "field messages: Input should be a valid list"),  # schema: wrong type
    (lambda t: t.update(final_score="high"), "field final_score: Input should be a valid number"),  # not a number
])
def test_bad_trace_records(tmp_path, mutate, message):
    traces = _traces()
    mutate(traces[1])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(traces))
    with pytest.raises(EpisodeLogError, match=f"record 1: .*{message}"):
        episodes.read_log(path)
    report = episodes.read_log(path, keep_valid=True)[1]
    assert len(report.episodes) == 2 and report.problems[0].startswith("bad.json record 1")


_PLAN = '<tool_call>{"name": "propose_plan", "arguments": {"plan": {}}}</tool_call>'


def _answered(result: str) -> list[dict]:
    return [{"role": "assistant", "content": _PLAN}, {"role": "tool", "content": result}]


@pytest.mark.parametrize("fields, message", [
    ({"score_breakdown": [1, 2]}, "field score_breakdown: Input should be a valid dictionary"),     # a list, not {name: score}
    ({"final_score": float("nan")}, "field final_score: .*finite number in \\[0, 1\\], got nan"),  # NaN
    ({"final_score": float("inf")}, "field final_score: .*got inf"),                             # 1e999 reads as inf
    ({"questions_asked": "many"}, "field questions_asked: Input should be a valid integer"),     # not a count
    ({"model_label": {"a": 1}}, "field model_label: Input should be a valid string"),            # an object label
    ({"messages": _answered('{"critical_fields": [1, "a"]}')},                                   # unsortable fields
     "the tool result of turn 0: field critical_fields.0: Input should be a valid string"),
    ({"messages": _answered('{"required_keys": 5}')},                                            # not a list
     "the tool result of turn 0: field required_keys: Input should be a valid list"),
    ({"messages": _answered('{"field_revealed": {"a": 1}}')},                                    # an object field name
     "the tool result of turn 0: field field_revealed: Input should be a valid string"),
    ({"messages": _answered('{"score": "high"}')},                                               # a plan's verdict in words
     "field turns.0.result: .*score must be a finite number, got 'high'"),
])
def test_bad_trace_fields_are_named_and_skipped_alone(tmp_path, fields, message):
    good = {"scenario_id": "x_easy", "family": "event_planning", "messages": [], "final_score": 0.5}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([good, {**good, **fields}]))
    with pytest.raises(EpisodeLogError, match=f"^bad.json record 1: {message}") as caught:
        episodes.read_log(path)
    assert "pydantic" not in str(caught.value) and "type=" not in str(caught.value)
    report = episodes.read_log(path, keep_valid=True)[1]
    assert len(report.episodes) == 1 and len(report.problems) == 1  # the bad record alone is skipped


def test_content_parts_holding_numbers_are_read_as_text():
    item = {"scenario_id": "x_easy", "family": "event_planning", "final_score": 0.5,
            "messages": [{"role": "assistant", "content": [{"type": "text", "text": 5}]}]}
    assert episodes.convert_trace(item).turns[0].raw == "5"


def test_a_seed_too_long_to_read_names_no_generated_scenario():
    item = {"scenario_id": "seed" + "9" * 5000 + "_event_planning_easy", "family": "event_planning",
            "messages": [], "final_score": 0.5}
    assert episodes.convert_trace(item).scenario.seed is None  # rebuilt from the trace, not a Python error


def test_a_json_object_instead_of_a_list(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps(_traces()[0], indent=1))
    with pytest.raises(EpisodeLogError, match="line 1"):
        episodes.read_log(path)


def test_cli_converts_both_formats(tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert episodes.main(["convert", str(TRACE), str(out)]) == 0
    assert "2 re-scored with rubric v1" in capsys.readouterr().out
    assert len(read_episodes(out).episodes) == 3
    again = tmp_path / "again.jsonl"
    assert episodes.main(["convert", str(OURS), str(again)]) == 0
    assert read_episodes(again).episodes == read_episodes(OURS).episodes


def test_cli_reports_errors(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    assert episodes.main(["convert", str(empty), str(tmp_path / "o.jsonl")]) == 1
    assert "empty" in capsys.readouterr().out


def test_ids_rebuild_the_published_held_out_scenarios(reference_dir):
    published = json.loads((reference_dir / "clarifyrl" / "eval_held_out.json").read_text())
    for row in published[:9]:
        sid = f"seed{row['seed']}_{row['family']}_{row['task_id']}"
        scenario = episodes.identify(sid, row["family"])
        assert scenario is not None and scenario.hidden_profile == row["hidden_profile"]
    assert episodes.identify("seed10000_support_triage_easy", "support_triage") is None  # wrong family
    assert episodes.identify("custom_1", "support_triage") is None


def test_content_given_as_text_parts(tmp_path):
    traces = _traces()[:1]
    for msg in traces[0]["messages"]:
        msg["content"] = [{"type": "text", "text": msg["content"]}]
    path = tmp_path / "parts.json"
    path.write_text(json.dumps(traces))
    ep = episodes.read_log(path)[1].episodes[0]
    assert ep.score == pytest.approx(0.8875) and len(ep.turns) == 4


def test_unknown_scenario_id_trace_has_no_contradictions():
    """An id naming no generated scenario: the header claims only what the trace says."""
    from core.runs.transcripts import episode_header

    item = dict(json.loads((Path(__file__).parents[2] / "fixtures" / "published_trace_small.json").read_text())[0])
    item.update(scenario_id="custom_ticket_42", final_score=0.5, score_breakdown={"FieldMatchRubric": 0.5})
    # the plan's tool result carries nothing (no score, no profile): the episode still ended by its plan
    item["messages"] = [{**m, "content": "{}"} if m.get("role") == "tool" and "score" in str(m.get("content"))
                        else m for m in item["messages"]]
    episode = episodes.convert_trace(item)
    header = episode_header(episode, "upload:x")
    assert episode.termination == "plan" and "ended by **plan**" in header
    assert episode.breakdown.gate_passed and "forced to 0" not in header  # a score of 0.5 passed the gate
    assert "difficulty not in the trace" in header and "medium" not in header
    assert "/0 fields" not in header and "hidden profile not in the trace" in header
    assert header.count("custom") == 1 and "seedNone" not in header


def test_a_trace_without_turns_claims_no_ending_and_no_gate():
    from core.runs.transcripts import chat_messages, episode_header

    item = dict(_traces()[0])
    item.update(scenario_id="custom_ticket_7", final_score=0.0, score_breakdown={}, messages=[])
    episode = episodes.convert_trace(item)
    header = episode_header(episode, "upload:x")
    assert episode.termination == "running" and not episode.breakdown.gate_passed
    assert "not ended in the log (it holds no agent turn)" in header and "max_steps" not in header
    assert "gate ✓" not in header
    assert chat_messages(episode)[-1]["content"].startswith("**Not ended in the log (it holds no agent turn)**")
