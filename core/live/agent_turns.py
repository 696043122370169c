"""Live play's ask-or-act agent (``decision:MODEL``): a decision model's beliefs decide each turn.

The same loop as ``core.clarify.calibrated_agent`` (one choice question per required field read from
the request, then ``core.clarify.cued_policies``' ask-or-act rule), taken one turn at a time so the
page can show the beliefs as they change and a person can answer in "You are the user" mode. In watch
mode the simulated user answers and the episode equals the evaluation's, turn for turn and belief for
belief (tested). Turns are tool calls in the scripted agents' plain-text form; nothing is generated.
"""

import copy
import threading
from typing import Any, Iterator

from core.clarify.calibrated_agent import model_beliefs
from core.clarify.cued_policies import belief_step, map_plan, next_field, question_for
from core.clarify.environment import render_call
from core.clarify.rubrics import QUESTION_COST
from core.live.session import AgentState, LiveError, LiveSession, apply_model_text, heard, settle
from core.models.lists import AGENT_PREFIX
from core.records import Beliefs, ToolCall, trusted


def _call(session: LiveSession, name: str, **arguments) -> None:
    """One tool call of the agent's, stepped as a model turn (parked for the person in user mode)."""
    call = trusted(ToolCall, name=name, arguments=arguments)
    apply_model_text(session, render_call(call), parsed=(call, None))


def read_request(session: LiveSession, model: Any) -> None:
    """The first turn: the task, then the model's belief about every required field of the request."""
    env = session.env
    _call(session, "get_task_info")
    try:
        fields = model_beliefs(model, env.scenario.request, list(env.scenario.required_keys))
    except (ValueError, KeyError, RuntimeError) as exc:
        raise LiveError(f"the decision model could not read the request: {exc}") from exc
    session.agent = AgentState(fields=fields)
    name = session.model_label.removeprefix(AGENT_PREFIX)
    env.beliefs = Beliefs(model=name, cost=QUESTION_COST, steps=[belief_step(env, -1, None, fields, set())])


def agent_turns(session: LiveSession, model: Any, stop: threading.Event | None = None) -> Iterator[LiveSession]:
    """Play the agent's turns until the episode ends, a question waits for the person or ``stop`` is set
    (checked between turns; Continue goes on from there); yields after each."""
    session = copy.deepcopy(session)
    session.stopped = False
    if session.done or session.pending is not None:
        yield session
        return
    if session.agent is None:
        read_request(session, model)
        session.status = "read the request: one question per field"
        yield session
    agent = session.agent
    while not session.done and session.pending is None:
        if stop is not None and stop.is_set():
            session.stopped, session.status = True, "stopped between the agent's turns: Continue goes on"
            yield session
            return
        asked = set(agent.answered)
        field = next_field(session.env, agent.fields, asked, session.env.beliefs.cost)
        if field is None:
            _call(session, "propose_plan", plan=map_plan(session.env, agent.fields))
            settle(session)
            yield session
            return
        agent.asking = field
        _call(session, "ask_question", question=question_for(session.env, field))
        if session.pending is None:  # the simulated user answered
            turn = session.env.turns[-1]
            heard(session, turn.index, str(turn.result.get("answer", "")))
            session.status = f"asked about {field}"
            settle(session)
        yield session
