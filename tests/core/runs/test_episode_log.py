"""Episode logs: the golden v1 fixture loads, writing round-trips, bad lines are named."""

import json
from pathlib import Path

import pytest

from core.runs.episode_log import EpisodeLogError, read_episodes, write_episodes
from core.records import EPISODE_VERSION, Episode

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GOLDEN_V1 = FIXTURES / "episodes_v1.jsonl"


def test_golden_v1_log_loads_with_every_termination():
    episodes = read_episodes(GOLDEN_V1).episodes
    assert len(episodes) == 6 and all(e.version == 1 for e in episodes)
    assert {e.termination for e in episodes} == {"plan", "unparseable", "over_budget"}
    assert {e.rubric for e in episodes} == {"v1", "v2"}
    model = next(e for e in episodes if e.policy.startswith("model:"))
    assert model.generation.temperature == 0.7 and model.sample == 1
    assert model.turns[-1].call is None and model.turns[-1].parse_error
    for e in episodes:  # an ended episode always carries its own breakdown
        assert e.breakdown is not None and e.breakdown.total == e.score
    assert episodes[0].id == "seed10000_event_planning_easy#0"


def test_schema_version_is_first_and_current():
    assert list(Episode.model_json_schema()["properties"])[0] == "version"
    assert EPISODE_VERSION == 1  # bump together with a new golden fixture


def test_write_read_round_trip(tmp_path):
    episodes = read_episodes(GOLDEN_V1).episodes
    out = tmp_path / "sub" / "log.jsonl"
    assert write_episodes(out, episodes) == 6
    assert read_episodes(out).episodes == episodes


@pytest.mark.parametrize("mutate,message", [
    (lambda line: "{not json", "line 2: not valid JSON"),
    (lambda line: "[1, 2]", "line 2: expected a JSON object"),
    (lambda line: json.dumps({**json.loads(line), "version": 99}), "line 2: episode version 99"),
    (lambda line: json.dumps({**json.loads(line), "surprise": 1}), "line 2: field surprise"),
    (lambda line: json.dumps({**json.loads(line), "score": "high"}), "line 2: field score"),
])
def test_bad_lines_are_named(tmp_path, mutate, message):
    lines = GOLDEN_V1.read_text().splitlines()
    lines[1] = mutate(lines[1])
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(EpisodeLogError, match=message):
        read_episodes(bad)
    lenient = read_episodes(bad, strict=False)
    assert len(lenient.episodes) == 5 and len(lenient.problems) == 1


def test_empty_and_binary_files_are_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(EpisodeLogError, match="holds no episodes"):
        read_episodes(empty)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(EpisodeLogError, match="not a UTF-8"):
        read_episodes(binary)
