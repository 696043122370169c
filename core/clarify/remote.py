"""Playing a served clarify environment: openenv-core's MCPToolClient, and ClarifyEnv's surface over it.

``connect(url)`` opens a session with openenv-core's own client (``MCPToolClient`` whose ``state()``
reads our episode); ``RemoteEnv`` gives a policy the attributes it reads from a ``ClarifyEnv``
(scenario, rubric, step, done, steps, questions_asked, turns), so every policy plays a remote
episode unchanged (a turn with no call, which the wire cannot carry, is finished locally);
``PublishedRemoteEnv`` does the same against the published ClarifyRL server; ``play_remote`` is
``core.runs.eval.play_episode`` over the wire (either server); ``SessionPool`` keeps one session
per thread for the eval runner.
"""

import functools
import random
import threading
import weakref
from typing import Any

from core.clarify.environment import ClarifyEnv
from core.clarify.rubrics import RubricVersion
from core.clarify.service import own_result
from core.records import Episode, Generation, Scenario, ToolCall, Turn


@functools.lru_cache(maxsize=1)
def client_class() -> type:
    """``MCPToolClient`` whose ``state()`` keeps our fields (its base keeps only the step count)."""
    from openenv.core.mcp_client import MCPToolClient

    from core.clarify.serve import service_classes

    _, state_cls = service_classes()

    class ClarifyClient(MCPToolClient):
        def _parse_state(self, payload: dict[str, Any]):
            return state_cls.model_validate(payload)

    return ClarifyClient


def connect(base_url: str, *, message_timeout_s: float = 60.0):
    """A synchronous client for one session at ``base_url`` (http://host:port); close it when done."""
    client = client_class()(base_url=base_url, message_timeout_s=message_timeout_s).sync()
    return client.connect()


class SessionPool:
    """One open session per thread at one server, opened on first use (eval's worker threads)."""

    def __init__(self, url: str):
        self.url = url
        self._local, self._open, self._lock = threading.local(), [], threading.Lock()

    def client(self):
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = connect(self.url)
            with self._lock:
                self._open.append(client)
        return client

    def close(self) -> None:
        with self._lock:
            for client in self._open:
                client.close()
            self._open.clear()


def served_episode(client) -> Episode:
    """The session's current episode as our record (scored once it has ended)."""
    state = client.state()
    if state.episode is None:
        raise ValueError("the session has no episode yet: reset it first")
    return Episode.model_validate(state.episode)


class RemoteEnv:
    """One served episode, shaped like ``ClarifyEnv`` for the policies that play it."""

    def __init__(self, client, scenario: Scenario, rubric: RubricVersion = "v1"):
        if scenario.seed is None:
            raise ValueError(f"scenario {scenario.id!r} has no generator seed, so a server cannot rebuild it")
        self.client, self.scenario, self.rubric = client, scenario, rubric
        self.turns: list[Turn] = []
        self.steps = 0
        self.questions_asked = 0
        self.done = False
        self._local: ClarifyEnv | None = None
        client.reset(task_id=scenario.id)
        state = client.state()
        if state.rubric != rubric:
            raise ValueError(f"the server scores with rubric {state.rubric}, not {rubric}; start it with --rubric {rubric}")
        if Episode.model_validate(state.episode).scenario != scenario:
            raise ValueError(f"the server's scenario {state.scenario_id} differs from ours (another generator version?)")

    def step(self, call: ToolCall | None, raw: str = "", parse_error: str | None = None) -> Turn:
        """Send one call; the turn holds the service's result and reward."""
        from openenv.core.env_server.mcp_types import CallToolAction

        if call is None:
            return self._end_unparseable(raw, parse_error)
        answer = self.client.step(CallToolAction(tool_name=call.name, arguments=call.arguments))
        obs = answer.observation
        if getattr(obs, "error", None) is not None:
            raise RuntimeError(f"the service failed on {call.name}: {obs.error.message}")
        result = obs.result.get("data") if isinstance(obs.result, dict) else None
        if not isinstance(result, dict):
            raise RuntimeError(f"the service answered {call.name} without a result object: {obs.result!r:.200}")
        result = own_result(call.name, result)
        if not self.done:
            self.steps += 1
        if "questions_remaining" in result and not result.get("over_cap"):
            self.questions_asked = self.scenario.max_questions - result["questions_remaining"]
        turn = Turn(index=len(self.turns), raw=raw, call=call, parse_error=parse_error,
                    result=result, reward=answer.reward or 0.0)
        if not self.done:
            self.turns.append(turn)
        self.done = bool(answer.done)
        return turn

    def _end_unparseable(self, raw: str, parse_error: str | None) -> Turn:
        """A turn with no call cannot go over the wire (the protocol has only tool calls), so the
        episode is finished here by the same environment code: the served calls replayed on a
        local ``ClarifyEnv`` (deterministic, so it reaches the server's state), then this turn."""
        if self._local is None:
            self._local = ClarifyEnv(self.scenario, self.rubric)
            for turn in self.turns:
                self._local.step(turn.call, turn.raw, turn.parse_error)
            if [t.result for t in self._local.turns] != [t.result for t in self.turns]:
                raise RuntimeError("replaying the served calls locally gave other results: versions differ?")
        turn = self._local.step(None, raw, parse_error)
        if not self.done:
            self.steps += 1
            self.turns.append(turn)
        self.done = True
        return turn

    def episode(self, policy: str, sample: int = 0, generation: Generation | None = None) -> Episode:
        """The service's record of this episode, under this client's policy name, with each turn's
        ``raw`` and ``parse_error`` as the policy wrote them (the wire carries only the call, so the
        server records its rendered form); after a turn with no call, the local replay's record."""
        episode = served_episode(self.client) if self._local is None else self._local.episode("service")
        if len(episode.turns) != len(self.turns):
            raise RuntimeError(f"the service recorded {len(episode.turns)} turns, this client {len(self.turns)}")
        turns = [t.model_copy(update={"raw": mine.raw, "parse_error": mine.parse_error})
                 for t, mine in zip(episode.turns, self.turns)]
        update: dict[str, Any] = {"policy": policy, "sample": sample, "turns": turns}
        if generation is not None:
            update["generation"] = generation
        return episode.model_copy(update=update)


class PublishedRemoteEnv:
    """One episode on the published ClarifyRL server, which keeps no episode record and takes a plan
    only as a string (``propose_plan(plan: str)``; an object is a validation error and the episode
    never ends). A local v1 ``ClarifyEnv`` (the published behaviour) plays alongside: each call goes
    to the server, a plan object as the JSON string ours scored, and the server's reward and end
    must equal the local turn's; the policy sees the local turn, and the record is the local one."""

    def __init__(self, client, scenario: Scenario, rubric: RubricVersion = "v1"):
        if rubric != "v1":
            raise ValueError(f"the published server scores as rubric v1, not {rubric}")
        self.client, self._local = client, ClarifyEnv(scenario, "v1")
        client.reset(task_id=scenario.difficulty, seed=scenario.seed)

    def __getattr__(self, name: str):  # scenario, rubric, turns, steps, questions_asked, done
        return getattr(self._local, name)

    def step(self, call: ToolCall | None, raw: str = "", parse_error: str | None = None) -> Turn:
        from openenv.core.env_server.mcp_types import CallToolAction

        was_done = self._local.done
        turn = self._local.step(call, raw, parse_error)
        if call is None or was_done:  # nothing to send: the wire has no such turn, or it is over
            return turn
        arguments = dict(call.arguments)
        if call.name == "propose_plan" and isinstance(arguments.get("plan"), dict):
            arguments["plan"] = self._local.plan_raw
        answer = self.client.step(CallToolAction(tool_name=call.name, arguments=arguments))
        reward, done = answer.reward or 0.0, bool(answer.done)
        if abs(reward - turn.reward) > 1e-9 or done != self._local.done:
            raise RuntimeError(f"the published server answered {call.name} with reward {reward}, done {done}; "
                               f"ours {turn.reward}, {self._local.done} (docs/environment.md lists the departures)")
        return turn

    def episode(self, policy: str, sample: int = 0, generation: Generation | None = None) -> Episode:
        return self._local.episode(policy, sample, generation)


_FAR_SIDE: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()


def is_published_server(client) -> bool:
    """Whether ``client`` talks to the published server (its state has ``task_title``, no episode);
    asked once per client."""
    if client not in _FAR_SIDE:
        _FAR_SIDE[client] = "task_title" in (client.state().model_extra or {})
    return _FAR_SIDE[client]


def play_remote(policy, scenario: Scenario, client, rng: random.Random, *, sample: int = 0,
                rubric: RubricVersion = "v1") -> Episode:
    """One complete scored episode of ``policy`` on ``scenario``, played through ``client``
    (our server, or the published one: ``PublishedRemoteEnv``)."""
    env_class = PublishedRemoteEnv if is_published_server(client) else RemoteEnv
    env = env_class(client, scenario, rubric)
    policy.play(env, rng)
    if not env.done:
        raise RuntimeError(f"policy {policy.name!r} returned before the served episode ended")
    return env.episode(policy.name, sample=sample, generation=getattr(policy, "generation", None))
