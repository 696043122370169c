"""Ask-or-act on the cued scenarios: bayes asks exactly when the gain beats the cost; the calibrated
agent is that loop on a decision model's beliefs (test doubles here, a fixed-probability model)."""

import json
import random

import pytest

from core.clarify.calibrated_agent import CalibratedAgent, make_calibrated_agent, model_beliefs
from core.clarify.cued import field_question, posterior
from core.clarify.scenarios import load_cued
from core.clarify.cued_policies import gains, true_beliefs
from core.clarify.environment import ClarifyEnv
from core.clarify.policies import make_policy
from core.clarify.rubrics import QUESTION_COST, ask_gain, field_weight
from core.decision.questions import make_answer
from core.records import Episode
from core.runs.eval import run_eval

SCENARIOS = load_cued()[:60]


class FixedModel:
    """A decision model double: answers every field with probabilities a function of the scenario."""

    def __init__(self, probs_for):
        self.probs_for, self.asked = probs_for, []

    def decide(self, state, questions):  # core.decision.model.DecisionModel.decide: a list in, a list out
        self.asked.append((state, {q.qid: (q.text, list(q.options)) for q in questions}))
        return [make_answer(q, self.probs_for(state, q.qid)) for q in questions]


def truthful(state, field):
    scenario = next(s for s in SCENARIOS if s.request == state)
    return posterior(scenario, field)


def overconfident(state, field):
    p = truthful(state, field)
    best = p.index(max(p))
    return [0.97 if i == best else 0.03 / (len(p) - 1) for i in range(len(p))]


def play(policy, scenario):
    env = ClarifyEnv(scenario, "v3")
    policy.play(env, random.Random(0))
    return env


def test_bayes_asks_exactly_the_fields_whose_gain_beats_the_cost():
    for s in SCENARIOS:
        env = play(make_policy("bayes"), s)
        worth = {f for f in s.required_keys if ask_gain(field_weight(s, f), posterior(s, f)) > QUESTION_COST}
        assert set(env.revealed) == worth and env.questions_asked == len(worth)
        assert env.termination == "plan" and env.breakdown.gate_passed


def test_ask_all_asks_every_field_and_guess_none():
    for s in SCENARIOS[:10]:
        everything = play(make_policy("ask-all"), s)
        assert list(everything.revealed) and set(everything.revealed) == set(s.required_keys)
        assert everything.breakdown.components["FieldMatchRubric"] == 1.0
        assert play(make_policy("guess"), s).questions_asked == 0


def test_bayes_beats_both_baselines_on_average():
    mean = {p: sum(e.score for e in run_eval(p, SCENARIOS, rubric="v3")) / len(SCENARIOS)
            for p in ("bayes", "ask-all", "guess")}
    assert mean["bayes"] > mean["ask-all"] > mean["guess"]


def test_a_model_that_reports_the_true_posterior_plays_as_bayes():
    agent = CalibratedAgent(FixedModel(truthful), "decision:truthful")
    for s in SCENARIOS[:20]:
        ours, ceiling = play(agent, s), play(make_policy("bayes"), s)
        assert ours.plan == ceiling.plan and ours.questions_asked == ceiling.questions_asked


def test_an_overconfident_model_under_asks_and_loses():
    sure, calibrated = CalibratedAgent(FixedModel(overconfident), "decision:sure"), make_policy("bayes")
    asked = [play(sure, s).questions_asked for s in SCENARIOS]
    assert sum(asked) == 0  # 0.97 leaves a gain of at most 0.03 / 3 fields, below the cost
    assert sum(e.score for e in run_eval(sure, SCENARIOS, rubric="v3")) < sum(
        e.score for e in run_eval(calibrated, SCENARIOS, rubric="v3"))


def test_the_model_gets_one_choice_question_per_required_field_about_the_request():
    model = FixedModel(truthful)
    s = SCENARIOS[0]
    model_beliefs(model, s.request, s.required_keys)
    state, questions = model.asked[0]
    assert state == s.request and list(questions) == s.required_keys
    assert questions["guest_count"] == field_question("guest_count")


def test_beliefs_are_logged_before_and_after_every_answer_and_survive_the_log():
    s = next(s for s in SCENARIOS if play(make_policy("bayes"), s).questions_asked >= 2)
    agent = CalibratedAgent(FixedModel(truthful), "decision:checkpoints/x")
    episode = run_eval(agent, [s], rubric="v3")[0]
    b = episode.beliefs
    assert b.model == "checkpoints/x" and b.cost == QUESTION_COST
    assert [step.turn for step in b.steps] == [-1] + [t.index for t in episode.turns if t.call.name == "ask_question"]
    start = true_beliefs(ClarifyEnv(s, "v3"))
    assert {f: pytest.approx(p, abs=1e-4) for f, p in start.items()} == b.steps[0].fields  # logged to 4 decimals
    for step in b.steps[1:]:
        assert max(step.fields[step.asked]) == 1.0 and step.gains[step.asked] == 0.0
    assert Episode.model_validate(json.loads(episode.model_dump_json())) == episode


def test_gains_are_zero_for_answered_fields():
    env = ClarifyEnv(SCENARIOS[0], "v3")
    now = gains(env, true_beliefs(env), answered={"date"})
    assert now["date"] == 0.0 and set(now) == set(SCENARIOS[0].required_keys)


@pytest.mark.parametrize("name, message", [
    ("decision:", "expected decision:MODEL"),
    ("decision:/no/such/folder", "not a decision model folder, cached hub id or System One URL"),
])
def test_bad_decision_policies_are_refused_with_a_reason(name, message):
    with pytest.raises(ValueError, match=message):
        make_calibrated_agent(name)


# one shipped model of every local kind: the tiny letter arm, the option scorer, the pooled readout (its options read
# alone, and in context) and the letter arm over SmolLM2 (System One models underneath, as a URL or a pipeline is)
@pytest.mark.parametrize("folder", ["checkpoints/decision-rlcd", "checkpoints/option-scorer",
                                    "checkpoints/decision-smollm2-pooled-rlcd", "checkpoints/decision-smollm2-rlcd",
                                    "checkpoints/decision-smollm2-pooled-cued"])
def test_a_shipped_decision_model_of_every_kind_drives_the_agent_through_the_load_once_cache(folder):
    # the path the CLI takes: decision:FOLDER -> the models wing's cache -> core.decision's open_decider
    agent = make_policy(f"decision:{folder}")
    episode = run_eval(agent, SCENARIOS[:1], rubric="v3")[0]
    start = episode.beliefs.steps[0]
    assert episode.beliefs.model == folder and set(start.fields) == set(SCENARIOS[0].required_keys)
    assert all(sum(p) == pytest.approx(1, abs=1e-3) for p in start.fields.values())
    assert make_policy(f"decision:{folder}").model is agent.model  # loaded once


def test_a_model_answering_too_few_questions_is_named():
    class Short(FixedModel):
        def decide(self, state, questions):
            return super().decide(state, questions)[:-1]

    s = SCENARIOS[0]
    with pytest.raises(ValueError, match=f"answered {len(s.required_keys) - 1} of {len(s.required_keys)} questions"):
        model_beliefs(Short(truthful), s.request, s.required_keys)


def test_the_shipped_real_body_reader_names_what_each_request_says():
    # decision-smollm2-pooled-cued on the first 30 held-out requests (its fit never read them): wherever a request
    # names one value it is the most probable, and a field the request never mentions is held far less
    # sure on average
    agent = make_policy("decision:checkpoints/decision-smollm2-pooled-cued")
    named, unsaid = [], []
    for s in SCENARIOS[:30]:
        beliefs = model_beliefs(agent.model, s.request, s.required_keys)
        for field, cue in s.cues.fields.items():
            p, options = beliefs[field], field_question(field)[1]
            if cue.kind == "clear":
                named.append((options[p.index(max(p))] == str(cue.hinted[0]), max(p)))
            elif cue.kind == "none":
                unsaid.append(max(p))
    assert len(named) >= 10 and all(right for right, _ in named)
    assert sum(p for _, p in named) / len(named) > sum(unsaid) / len(unsaid) + 0.3
