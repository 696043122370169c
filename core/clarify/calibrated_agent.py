"""The calibrated agent, ``--policy decision:MODEL``: a decision model's beliefs decide when to ask.

For each required field it asks the decision model one choice question about the request
(``core.clarify.cued.field_question``: options = the field's values), then plays the ask-or-act
loop of ``core.clarify.cued_policies`` on those beliefs: ask the field of largest expected gain while
it exceeds the question cost, fix a field from its answer, propose the most probable values. The
beliefs before and after every answer are logged with the episode (``Episode.beliefs``), so the
Replays tab shows them beside the true posterior without running a model. MODEL is anything the
decision picker loads (our letter arms, the option scorer, a chat model folder, a System One URL).
"""

import math
import random
from functools import lru_cache
from typing import Protocol, Sequence

from core.clarify.cued import field_question
from core.clarify.cued_policies import play_beliefs
from core.clarify.environment import ClarifyEnv
from core.clarify.rubrics import QUESTION_COST
from core.models.lists import AGENT_PREFIX as PREFIX, find_decision
from core.records import Beliefs, BeliefStep


class DecisionModel(Protocol):
    """What the agent needs of a decision model: ``core.decision.model.DecisionModel.decide``, which
    every kind implements (letter arms, the option scorer, pooled readouts, pipelines, URLs)."""

    def decide(self, state, questions: Sequence[object]) -> Sequence[object]:
        """``[Choice, ...]`` -> ``[Answer, ...]`` in the same order (each answer's ``probs``: option -> probability)."""


def model_beliefs(model: DecisionModel, request: str, fields: Sequence[str]) -> dict[str, list[float]]:
    """The model's distribution over each field's vocabulary, from one request with a question per field."""
    from core.decision.questions import Choice  # the decision wing's question type

    questions = [Choice(*field_question(f), qid=f) for f in fields]
    answers = list(model.decide(request, questions))
    if len(answers) != len(questions):
        raise ValueError(f"the decision model answered {len(answers)} of {len(questions)} questions")
    out = {}
    for f, q, answer in zip(fields, questions, answers):
        probs = [answer.probs.get(o) for o in q.options]
        if not all(isinstance(p, (int, float)) and math.isfinite(p) and p >= 0 for p in probs):
            raise ValueError(f"the decision model gave field {f!r} probabilities that are not all finite and "
                             f"non-negative: {probs!r}"[:300])
        total = sum(probs)
        if total <= 0:
            raise ValueError(f"the decision model gave field {f!r} no probability mass")
        out[f] = [p / total for p in probs]
    return out


class CalibratedAgent:
    """Asks the user exactly when the decision model's belief about a field is too uncertain."""

    def __init__(self, model: DecisionModel, name: str, cost: float = QUESTION_COST):
        self.model, self.name, self.cost = model, name, cost
        self.model_name = name[len(PREFIX):] if name.startswith(PREFIX) else name

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        beliefs = model_beliefs(self.model, env.scenario.request, list(env.scenario.required_keys))
        steps: list[BeliefStep] = []
        play_beliefs(env, beliefs, cost=self.cost, on_step=steps.append)
        env.beliefs = Beliefs(model=self.model_name, cost=self.cost, steps=steps)


def load_decision_model(key: str) -> DecisionModel:
    """A decision model by picker key, folder, cached hub id or System One URL, loaded once."""
    entry = find_decision(None, key)
    if entry is None:
        raise ValueError(f"decision:{key}: not a decision model folder, cached hub id or System One URL")
    return _cache().decider(entry)


@lru_cache(maxsize=None)
def _cache():
    """The one load-once cache (``core.models.cache``), building decision models as the Decisions tab does."""
    from core.decision.model import open_decider  # lazy: torch loads with the first model
    from core.models.cache import ModelCache

    return ModelCache(open_decider=open_decider)


def make_calibrated_agent(name: str) -> CalibratedAgent:
    """``decision:MODEL``: the agent on the decision model MODEL names."""
    key = name[len(PREFIX):]
    if not name.startswith(PREFIX) or not key:
        raise ValueError(f"{name!r}: expected decision:MODEL (a decision model folder, cached hub id or URL)")
    return CalibratedAgent(load_decision_model(key), name)
