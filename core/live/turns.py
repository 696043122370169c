"""Live play's model turns: a local model streams its turns into the session; ``run_model`` loads
the session's model once per process (or hands an endpoint entry to ``endpoint_turns``, and a
decision model to the ask-or-act agent's ``agent_turns``).

Imports point one way: this module sits above ``session`` (the record and how a finished turn
steps it), ``endpoint_turns`` (the same turns through a chat endpoint) and ``agent_turns``, and
none of them imports it.
"""

import copy
import threading
from contextlib import closing
from typing import Any, Iterator

from core.live.agent_turns import agent_turns
from core.live.endpoint_turns import endpoint_turns
from core.live.session import LiveError, LiveSession, apply_model_text, is_decision_agent, settle
from core.live.streaming import TurnClock, stream_turn
from core.models.cache import ModelCache
from core.models.loader import Progress, quiet

WAITING = ("waiting for another visitor: their turn on this model is generating, and yours starts when "
           "it ends (your timings start then too)")


def model_turns(session: LiveSession, model: Any, tokenizer: Any, stop: threading.Event,
                min_interval: float = 0.05) -> Iterator[LiveSession]:
    """Generate model turns until the episode ends, the person must answer, or ``stop`` is set.

    Yields the session as text streams in (at most every ``min_interval`` seconds, plus once per
    finished turn). Closing the iterator stops generation at the next token.
    """
    session = copy.deepcopy(session)
    if session.mode == "agent" or session.pending is not None or session.done:
        yield session
        return
    from core.clarify.chat_policy import ChatPolicy  # torch is imported only once a model plays
    from core.clarify.kv_cache import store_for

    session.stopped, session.draft = False, ""
    policy = ChatPolicy(model, tokenizer, name=session.model_label, generation=session.settings.generation(),
                        kv=store_for(model))  # earlier turns' (and episodes') keys/values are reused
    while not session.done and session.pending is None:
        seed = session.settings.seed * 1000 + len(session.env.turns)
        ids: list[int] = []
        generating = f"generating turn {len(session.env.turns) + 1}"
        clock = TurnClock()
        with closing(stream_turn(policy, session.env, stop, seed, min_interval, clock,
                                 conversation=session.session_id)) as stream:  # env is copied each call
            for session.draft, ids in stream:
                session.draft_tokens = len(ids)
                session.status = WAITING if clock.waiting else generating
                yield session
        session.timings.append(clock.timing(len(session.env.turns) + 1, policy.reused_tokens))
        finished = policy.message_end(ids) is not None or len(ids) >= session.settings.max_new_tokens
        raw, session.draft, session.draft_tokens = session.draft, "", 0
        if stop.is_set() and not finished:
            session.stopped = True
            session.status = "stopped: the unfinished turn was discarded; Continue generates it again"
            yield session
            return
        apply_model_text(session, raw)
        settle(session)
        yield session


def model_moves(session: LiveSession) -> bool:
    """Is it the model's move? Not in agent mode (the person plays the agent), after the end, or while a question
    waits for the person's answer."""
    return session.mode != "agent" and not session.done and session.pending is None


def run_model(session: LiveSession | None, cache: ModelCache, stop: threading.Event,
              progress: Progress | None = None) -> Iterator[LiveSession]:
    """Load the session's model (once per process, through ``cache``), or reach its endpoint, and
    let it take its turns."""
    if session is None:
        raise LiveError("start an episode first")
    if not model_moves(session):
        yield session
        return
    if session.entry.source == "endpoint":  # no model here: the endpoint generates
        yield from endpoint_turns(session, stop)
        return
    if is_decision_agent(session.entry):  # the ask-or-act agent: a decision model's beliefs, nothing generated
        (progress or quiet)(0.0, f"loading {session.entry.key} (once per process; a real body takes 15-40 s)")
        try:
            model = cache.decider(session.entry)
        except ValueError as exc:
            raise LiveError(str(exc)) from exc
        yield from agent_turns(session, model, stop)
        return
    loaded = cache.get(session.entry, session.settings.int8, progress)
    yield from model_turns(session, loaded.model, loaded.tokenizer, stop)
