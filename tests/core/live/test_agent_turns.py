"""The ask-or-act agent in Live play: the evaluation's episode turn for turn in watch mode, a person's
answers read as the simulated user's are in user mode, and a model that cannot read refused by name."""

import random
import threading

import pytest

from core.clarify.calibrated_agent import make_calibrated_agent
from core.clarify.cued_policies import one_hot
from core.clarify.environment import ClarifyEnv
from core.clarify.scenarios import load_cued
from core.decision.model import open_decider
from core.live.agent_turns import agent_turns
from core.live.session import LiveError, answer_question, start
from core.live.turns import run_model
from core.models import lists
from core.models.cache import ModelCache

SCENARIOS = load_cued()[:6]
KEY = "decision:decision-rlcd"  # the tiny shipped reader: loads in a second, trained on cued rows


@pytest.fixture(scope="module")
def agent():
    return make_calibrated_agent(KEY)


def played(session, model):
    *_, last = agent_turns(session, model)
    return last


def dumped(episode):
    return [t.model_dump() for t in episode.turns]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_watch_mode_is_the_evaluations_episode(agent, scenario):
    env = ClarifyEnv(scenario, "v3")
    agent.play(env, random.Random(0))
    expected = env.episode(agent.name)
    session = played(start("watch", scenario, "v3", lists.policy_entry(None, KEY, None)), agent.model)
    live = session.episodes[-1]
    assert session.done and dumped(live) == dumped(expected)
    assert live.beliefs.steps == expected.beliefs.steps and live.score == expected.score
    assert live.policy == "decision:checkpoints/decision-rlcd" and live.beliefs.model == "checkpoints/decision-rlcd"


def answered(session, model, answer_for):
    """Play user mode to the end, each question answered by ``answer_for(field)``."""
    session = played(session, model)
    while not session.done:
        assert session.pending is not None and session.agent.asking == session.pending.field
        session = played(answer_question(session, answer_for(session.agent.asking)), model)
    return session


def test_user_mode_with_the_hidden_values_scores_as_watch_mode(agent):
    scenario = next(s for s in SCENARIOS if s.difficulty == "hard")
    entry = lists.policy_entry(None, KEY, None)
    watched = played(start("watch", scenario, "v3", entry), agent.model).episodes[-1]
    person = answered(start("user", scenario, "v3", entry), agent.model,
                      lambda field: str(scenario.hidden_profile[field])).episodes[-1]
    assert person.plan == watched.plan and person.score == watched.score
    assert person.beliefs.steps == watched.beliefs.steps


def test_user_mode_acts_on_what_the_person_says_or_keeps_its_belief(agent):
    from core.clarify.families import FIELDS

    scenario = next(s for s in SCENARIOS if s.difficulty == "hard")
    entry = lists.policy_entry(None, KEY, None)
    other = {f: next(v for v in FIELDS[f].values if v != scenario.hidden_profile[f]) for f in scenario.required_keys}
    said = answered(start("user", scenario, "v3", entry), agent.model, lambda field: f"it is {other[field]}")
    asked = [step.asked for step in said.env.beliefs.steps if step.asked]
    assert asked and all(said.episodes[-1].plan[f] == other[f] for f in asked)
    assert all(said.agent.fields[f] == one_hot(f, other[f]) for f in asked)
    first = said.env.beliefs.steps[0].fields
    vague = answered(start("user", scenario, "v3", entry), agent.model, lambda field: "no idea, sorry")
    assert vague.env.beliefs.steps[-1].fields == first  # nothing stated: every belief as read from the request


def test_run_model_plays_the_agent_through_the_shared_cache(agent):
    entry = lists.policy_entry(None, KEY, None)
    session = start("watch", SCENARIOS[0], "v3", entry)
    *_, last = run_model(session, ModelCache(open_decider=open_decider), threading.Event())
    assert last.done and last.episodes[-1].beliefs is not None
    with pytest.raises(LiveError, match="loads policies only"):
        list(run_model(session, ModelCache(), threading.Event()))


class Mute:
    """A decision model that answers fewer questions than it was asked."""

    def decide(self, state, questions):
        return []


def test_a_model_that_cannot_read_the_request_is_refused_by_name():
    session = start("watch", SCENARIOS[0], "v3", lists.policy_entry(None, KEY, None))
    with pytest.raises(LiveError, match="could not read the request: the decision model answered 0 of"):
        list(agent_turns(session, Mute()))


@pytest.mark.parametrize("key", ["decision:no-such-model", "decision:/etc", "decision:http://example.com/v1"])
def test_only_a_listed_decision_model_is_an_agent(key):
    with pytest.raises(KeyError, match="pick one from the list"):
        lists.policy_entry(None, key, None)
    assert lists.agent_entries()[0].key == "decision-smollm2-pooled-cued"


class Garbage:
    """A decision model whose probabilities are not a distribution of finite, non-negative numbers."""

    def __init__(self, value):
        self.value = value

    def decide(self, state, questions):
        from core.decision.questions import make_answer

        return [make_answer(q, [self.value] * len(q.options)) for q in questions]


@pytest.mark.parametrize("value", [float("nan"), -0.5, float("inf")])
def test_a_model_that_emits_garbage_probabilities_is_refused_by_name(value):
    session = start("watch", SCENARIOS[0], "v3", lists.policy_entry(None, KEY, None))
    with pytest.raises(LiveError, match="could not read the request: the decision model gave field .* not all finite"):
        list(agent_turns(session, Garbage(value)))


def test_stop_halts_the_agent_between_turns_and_continue_goes_on(agent):
    scenario = next(s for s in SCENARIOS if s.difficulty == "hard")
    entry = lists.policy_entry(None, KEY, None)
    stop = threading.Event()
    session = start("watch", scenario, "v3", entry)
    turns = agent_turns(session, agent.model, stop)
    first = next(turns)  # the request read: the beliefs, no question yet
    stop.set()
    halted = list(turns)[-1]
    assert first.agent is not None and halted.stopped and not halted.done and "stopped" in halted.status
    assert len(halted.env.turns) == len(first.env.turns)
    finished = played(halted, agent.model)
    expected = played(start("watch", scenario, "v3", entry), agent.model)
    assert finished.done and not finished.stopped and dumped(finished.episodes[-1]) == dumped(expected.episodes[-1])
