"""Belief bars in the Replays tab: read from the log beside the true posterior, never from a model."""

import json
from pathlib import Path

import pytest

from core.clarify.calibrated_agent import CalibratedAgent
from core.clarify.cued import posterior
from core.clarify.scenarios import load_cued
from core.decision.questions import make_answer
from core.runs.episode_log import read_episodes
from core.runs.eval import run_eval
from core.runs.summary import summarize, write_run
from demo import plots
from demo.replays import beliefs as b
from demo.replays.handlers import episode_key

FIXTURE = Path(__file__).parents[2] / "fixtures" / "cued_v3_episode.jsonl"
SCENARIO = load_cued()[1]  # event_planning, medium: two fields worth asking


class Uniform:
    """A decision model double that knows nothing: every field at its prior."""

    def decide(self, state, questions):
        return [make_answer(q, [1 / len(q.options)] * len(q.options)) for q in questions]


@pytest.fixture
def root(tmp_path) -> str:
    episodes = run_eval(CalibratedAgent(Uniform(), "decision:uniform <b>x</b>"), [SCENARIO], rubric="v3")
    write_run(tmp_path / "cued" / "uniform", episodes, summarize(episodes, policy="decision:uniform",
                                                                 scenarios="clarifylab-cued-v3", samples=1, seed=0))
    episodes = run_eval("bayes", [SCENARIO], rubric="v3")
    write_run(tmp_path / "cued" / "bayes", episodes, summarize(episodes, policy="bayes",
                                                               scenarios="clarifylab-cued-v3", samples=1, seed=0))
    return str(tmp_path)


def test_a_decision_agent_episode_shows_its_bars_and_what_it_did(root):
    note, plot = b.show_beliefs(root, {}, episode_key("cued/uniform", f"{SCENARIO.id}#0"))
    assert plot["visible"] is True
    fig = plot["value"]
    names = {t.name for t in fig.data}
    assert names == {"true posterior", "model, from the request", "model, after the answer"}
    true_venue = [t for t in fig.data if t.name == "true posterior" and t.xaxis == "x4"][0]
    assert list(true_venue.y) == posterior(SCENARIO, "venue")
    # a model at the prior asks every field (gain 0.19 or more against a cost of 0.08)
    assert note.count("not asked") == 0 and note.count("asked at turn") == len(SCENARIO.required_keys)
    assert "&lt;b&gt;x&lt;/b&gt;" in note and "<b>" not in note  # the model name is data, escaped


def test_an_episode_without_beliefs_hides_the_bars(root):
    note, plot = b.show_beliefs(root, {}, episode_key("cued/bayes", f"{SCENARIO.id}#0"))
    assert plot["visible"] is False and note == b.NO_BELIEFS
    assert b.show_beliefs(root, {}, None)[0] == ""
    assert b.show_beliefs(root, {}, "cued/nope|x#0")[0] == b.NO_BELIEFS  # a missing run: no bars, no crash


def test_the_golden_v3_episode_with_beliefs_loads():
    (episode,) = read_episodes(FIXTURE).episodes
    assert episode.rubric == "v3" and episode.scenario.cues.version == 1 and episode.beliefs.version == 1
    assert episode.beliefs.steps[0].turn == -1
    assert json.loads(FIXTURE.read_text())["beliefs"]["model"] == "checkpoints/decision-rlcd"
    assert plots.belief_figure(episode).data
