"""Ask-or-act on the cued scenarios (v3): one loop, fed by different beliefs.

``play_beliefs`` holds a distribution per required field, asks the user about the field whose
expected gain (``rubrics.ask_gain``: weight * (1 - max p)) is largest while that gain exceeds the
question cost, fixes a field from its answer, and proposes the most probable values. The baselines
are this loop with known beliefs: ``bayes`` (the generator's posterior, the ceiling without the
hidden values) and ``ask-all`` (the same beliefs, every field asked); ``guess`` in
``core.clarify.policies`` asks nothing. The calibrated agent (``core.clarify.calibrated_agent``)
feeds it a decision model's beliefs and records them per step.
"""

import random
from typing import Callable

from core.clarify.cued import map_value, noun, posterior
from core.clarify.environment import ClarifyEnv
from core.clarify.families import FIELDS
from core.clarify.asking import act, read_value, revealing_question
from core.clarify.rubrics import QUESTION_COST, ask_gain, field_weight
from core.records import BeliefStep

StepHook = Callable[[BeliefStep], None]
"""Called with the beliefs at the start and after every answer (the calibrated agent logs them)."""
LOGGED_DIGITS = 4
"""Decimals of a logged belief or gain: enough for a bar, and a log line stays short."""


def one_hot(field: str, value) -> list[float]:
    return [1.0 if v == value else 0.0 for v in FIELDS[field].values]


def gains(env: ClarifyEnv, beliefs: dict[str, list[float]], answered: set[str]) -> dict[str, float]:
    """Expected gain of asking each required field now (0 for a field already answered).

    The weights come from the rubric's FieldMatch shares; a v3 profile holds exactly the required
    keys (all the agent is told about), so they are known to the agent.
    """
    s = env.scenario
    return {f: 0.0 if f in answered else ask_gain(field_weight(s, f), beliefs[f]) for f in s.required_keys}


def _room(env: ClarifyEnv) -> bool:
    """Budget and steps left for one more question and the plan."""
    s = env.scenario
    return env.questions_asked < s.max_questions and env.steps < s.max_steps - 1


def _step(turn: int, asked: str | None, beliefs: dict[str, list[float]], now: dict[str, float]) -> BeliefStep:
    return BeliefStep(turn=turn, asked=asked, fields={f: [round(x, LOGGED_DIGITS) for x in p] for f, p in beliefs.items()},
                      gains={f: round(g, LOGGED_DIGITS) for f, g in now.items()})


def next_field(env: ClarifyEnv, beliefs: dict[str, list[float]], answered: set[str],
               cost: float = QUESTION_COST) -> str | None:
    """The field to ask now (largest expected gain, above ``cost``), or None: propose the plan."""
    if env.done or not _room(env):
        return None
    now = gains(env, beliefs, answered)
    best = max((f for f in now if f not in answered), key=lambda f: now[f], default=None)
    return None if best is None or now[best] <= cost else best


def question_for(env: ClarifyEnv, field: str) -> str:
    """The question the loop asks about ``field``: one the simulated user maps to it where one exists."""
    known = revealing_question(field, tuple(env.scenario.required_keys), env.rubric)
    return known or f"What is the {noun(field)}?"


def take_answer(beliefs: dict[str, list[float]], field: str, answer: str) -> None:
    """Fix ``field``'s belief on the value an answer states (unchanged when it states none)."""
    value = read_value(field, answer)
    if value is not None:
        beliefs[field] = one_hot(field, value)


def map_plan(env: ClarifyEnv, beliefs: dict[str, list[float]]) -> dict:
    """The plan of the most probable value of every required field."""
    return {f: map_value(f, beliefs[f]) for f in env.scenario.required_keys}


def belief_step(env: ClarifyEnv, turn: int, asked: str | None, beliefs: dict[str, list[float]],
                answered: set[str]) -> BeliefStep:
    """The beliefs after ``turn`` (-1: from the request alone) with each field's gain of asking now."""
    return _step(turn, asked, beliefs, gains(env, beliefs, answered))


def play_beliefs(env: ClarifyEnv, beliefs: dict[str, list[float]], *, cost: float = QUESTION_COST,
                 on_step: StepHook | None = None) -> None:
    """Ask while the best expected gain exceeds ``cost``, then propose the MAP value of every field."""
    act(env, "get_task_info")
    beliefs, answered = {f: list(p) for f, p in beliefs.items()}, set()
    if on_step:
        on_step(belief_step(env, -1, None, beliefs, answered))
    while (best := next_field(env, beliefs, answered, cost)) is not None:
        turn = act(env, "ask_question", question=question_for(env, best))
        answered.add(best)
        take_answer(beliefs, best, str(turn.result.get("answer", "")))
        if on_step:
            on_step(belief_step(env, turn.index, best, beliefs, answered))
    if not env.done:
        act(env, "propose_plan", plan=map_plan(env, beliefs))


def true_beliefs(env: ClarifyEnv) -> dict[str, list[float]]:
    """The generator's posterior per required field (the prior where a scenario has no cues)."""
    return {f: posterior(env.scenario, f) for f in env.scenario.required_keys}


class Bayes:
    """The generator's true posterior: asks a field iff weight * (1 - max p) > cost."""

    name = "bayes"

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        play_beliefs(env, true_beliefs(env))


class AskAll:
    """Asks every required field (largest gain first), then proposes what it heard."""

    name = "ask-all"

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        play_beliefs(env, true_beliefs(env), cost=-1.0)


CUED_POLICIES = {p.name: p for p in (Bayes(), AskAll())}
