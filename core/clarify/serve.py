"""The clarify environment as an OpenEnv service: openenv-core's server, our environment inside.

    python -m core.clarify.serve --rubric v1 --host 127.0.0.1 --port 8000 [--workers 4]

Each WebSocket connection (``openenv.core.mcp_client.MCPToolClient``, default mode) gets its own
``ClarifySession``; ``reset(task_id=..., seed=...)``, ``list_tools()`` and
``call_tool(name, **arguments)`` reach it, rewards and ``done`` ride on every step, and the
``state`` message carries the episode as our ``Episode`` record; reset and tool results carry the
published server's fields beside ours, so its clients run unchanged (docs/scale_out.md). openenv-core
imports gradio when it loads, so core/ imports it only inside the functions that build a server.
"""

import argparse
import functools
import json
import logging
import math
import os
import sys
import time
from typing import Any, Sequence

from core.clarify.agent import TOOL_SCHEMAS
from core.clarify.rubrics import RubricVersion
from core.clarify.service import ClarifySession, published_result
from core.records import port

SERVED_RUBRICS = ("v1", "v2")
"""The rubrics the service scores with (v3 scores cued requests, which it does not serve)."""
MAX_SESSIONS = 64
"""Default cap on concurrent sessions; one more connection is refused with CAPACITY_REACHED."""
MAX_MESSAGE_BYTES = 1 << 20
"""Default cap on one WebSocket message (1 MiB); a larger one closes that connection (code 1009)."""
SESSION_TIMEOUT_S = 600.0
"""Default idle time after which a session is reaped (a client that vanished without closing)."""
SESSION_CLOSED = ("this session was closed by the server (idle past --session-timeout, or shut down); "
                  "open a new connection to play on")


class BadReset(ValueError):
    """A reset naming an unknown key, task_id or seed: HTTP ``/reset`` answers it 422, naming the
    field; the WebSocket answers it as an EXECUTION_ERROR message (openenv-core's own path)."""


def _openenv():
    """openenv-core's server pieces, or a clear error naming the missing package."""
    try:
        from fastmcp import FastMCP
        from fastmcp.client.client import CallToolResult
        from mcp.types import TextContent
        from openenv.core.env_server import mcp_types, types
        from openenv.core.env_server.http_server import create_app
        from openenv.core.env_server.mcp_environment import MCPEnvironment
    except ImportError as exc:
        raise RuntimeError(f"serving needs openenv-core (pip install -r requirements.txt): {exc}") from exc
    return FastMCP, CallToolResult, TextContent, mcp_types, types, create_app, MCPEnvironment


@functools.lru_cache(maxsize=1)
def service_classes() -> tuple[type, type]:
    """(ClarifyServiceEnv, ClarifyState), built once, on first use (see the module docstring)."""
    FastMCP, CallToolResult, TextContent, mcp_types, types, _, MCPEnvironment = _openenv()

    class ClarifyState(types.State):
        """What the ``state`` message answers: the session's episode as an ``Episode`` dict."""

        scenario_id: str | None = None
        rubric: str = "v1"
        done: bool = False
        episode: dict[str, Any] | None = None

    class ResetObservation(types.Observation):
        """What reset answers: the published ``{"tool_name": "reset", "result": {...}}`` (its
        training wrapper and eval script read the request, family and limits there), our scenario
        id, rubric and task_info beside it. MCPToolClient keeps only done and reward."""

        tool_name: str = "reset"
        result: dict[str, Any]
        scenario_id: str
        rubric: str
        task_info: dict[str, Any]

    class ClarifyServiceEnv(MCPEnvironment):
        """One session's environment; tool calls bypass FastMCP and go straight to ClarifyEnv,
        so a bad call gets the environment's own error result rather than a framework error."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self, rubric: RubricVersion = "v1", idle_timeout_s: float | None = None):
            super().__init__(FastMCP("clarify"))
            self.session = ClarifySession(rubric)
            self.closed = False
            self.idle_timeout_s, self.last_call = idle_timeout_s, time.monotonic()

        def close(self) -> None:
            """The server closes a session's environment when it frees the session (its client
            left, or the idle reaper took it); a client still holding the socket is refused."""
            self.closed = True
            super().close()

        def _check_open(self) -> None:
            """Refuse a closed session, and one idle past the timeout: the server's reaper frees the
            slot before it closes the environment, so a call in between would otherwise still answer."""
            now = time.monotonic()
            if self.idle_timeout_s is not None and now - self.last_call > self.idle_timeout_s:
                self.closed = True
            if self.closed:
                raise RuntimeError(SESSION_CLOSED)
            self.last_call = now

        def mcp_session(self):
            """No FastMCP transport per connection: our tools never go through it."""
            return _NullContext()

        def reset(self, seed: int | None = None, episode_id: str | None = None,
                  task_id: str | None = None, **kwargs: Any):
            self._check_open()
            if kwargs:
                raise BadReset(f"reset takes task_id and seed; unexpected {sorted(kwargs)[:5]}")
            try:
                result = self.session.reset(task_id, seed)
            except ValueError as exc:
                raise BadReset(str(exc)) from None
            return ResetObservation(done=False, reward=0.0, result=result, scenario_id=result["scenario_id"],
                                    rubric=result["rubric"], task_info=result["task_info"])

        async def reset_async(self, seed: int | None = None, episode_id: str | None = None,
                              task_id: str | None = None, **kwargs: Any):
            return self.reset(seed, episode_id, task_id, **kwargs)

        def step(self, action, timeout_s=None, **kwargs):
            self._check_open()
            if isinstance(action, mcp_types.ListToolsAction):
                return mcp_types.ListToolsObservation(tools=list_tools(mcp_types.Tool))
            if isinstance(action, mcp_types.CallToolAction):
                result, reward, done = self.session.call(action.tool_name, action.arguments)
                scenario = None if self.session.env is None else self.session.env.scenario
                result = published_result(action.tool_name, result, scenario)
                wrapped = CallToolResult(
                    content=[TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
                    structured_content=result, meta=None, data=result, is_error="error" in result)
                return mcp_types.CallToolObservation(tool_name=action.tool_name, result=wrapped,
                                                     done=done, reward=reward)
            return self._step_impl(action)

        async def step_async(self, action, timeout_s=None, **kwargs):
            return self.step(action, timeout_s)  # microseconds of pure Python: no executor hop

        def _step_impl(self, action, timeout_s=None, **kwargs):
            raise ValueError(f"unsupported action {type(action).__name__}; send list_tools or call_tool")

        @property
        def state(self):
            self._check_open()
            s = self.session
            episode = s.episode()
            return ClarifyState(
                episode_id=None if s.env is None else f"{s.env.scenario.id}#{s.episodes_started}",
                step_count=s.steps, scenario_id=None if s.env is None else s.env.scenario.id,
                rubric=s.rubric, done=s.done,
                episode=None if episode is None else episode.model_dump(mode="json"))

    return ClarifyServiceEnv, ClarifyState


class _NullContext:
    async def __aenter__(self):
        return None

    async def __aexit__(self, *exc):
        return False


def list_tools(tool_cls: type) -> list:
    """Our three tools as MCP tool specs, from ``core.clarify.agent.TOOL_SCHEMAS`` (one source)."""
    return [tool_cls(name=t["function"]["name"], description=t["function"]["description"],
                     input_schema=t["function"]["parameters"]) for t in TOOL_SCHEMAS]


def create_service_app(rubric: RubricVersion = "v1", *, max_sessions: int = MAX_SESSIONS,
                       session_timeout_s: float | None = SESSION_TIMEOUT_S):
    """The FastAPI app openenv-core builds around our environment (``/ws``, ``/health``, ...)."""
    if rubric not in SERVED_RUBRICS:
        raise ValueError(f"unknown rubric version {rubric!r}; expected v1 or v2 (v3 scores cued requests, which the "
                         "service does not serve)")
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
    if session_timeout_s is not None and not 0 < session_timeout_s < math.inf:
        raise ValueError(f"the session timeout must be a number of seconds > 0 (0 on the command line: never), "
                         f"got {session_timeout_s}")
    *_, mcp_types, types, create_app, _ = _openenv()
    env_cls, _ = service_classes()
    config = types.ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout_s)
    make_env = functools.partial(env_cls, rubric=rubric, idle_timeout_s=session_timeout_s)
    app = create_app(make_env, mcp_types.CallToolAction, mcp_types.CallToolObservation, env_name="clarify",
                     concurrency_config=config)
    app.add_exception_handler(BadReset, _bad_reset_answer)
    return app


async def _bad_reset_answer(request, exc: BadReset):
    """HTTP ``/reset`` with a bad argument: 422 and the message naming it (not a 500 traceback)."""
    from fastapi.responses import JSONResponse

    return JSONResponse(status_code=422, content={"detail": str(exc)})


class _ClosedSocketFilter(logging.Filter):
    """Drops one false alarm: openenv-core 0.3.0 closes a WebSocket that the client has already
    closed, and uvicorn logs the resulting WebSocketDisconnect as an application error."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return type(exc).__name__ != "WebSocketDisconnect"


def _quiet_closed_sockets() -> None:
    error_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _ClosedSocketFilter) for f in error_log.filters):
        error_log.addFilter(_ClosedSocketFilter())


def server_config(app, host: str, port: int, *, max_message_bytes: int = MAX_MESSAGE_BYTES, workers: int = 1):
    """uvicorn's config for the app: the message cap, pings that find dead peers, quiet logs.
    ``workers`` > 1 needs ``app`` as the import string of a factory (``WORKER_FACTORY``)."""
    import uvicorn

    if max_message_bytes < 1024:
        raise ValueError(f"max_message_bytes must be >= 1024, got {max_message_bytes}")
    if workers < 1 or (workers > 1 and not isinstance(app, str)):
        raise ValueError(f"workers must be >= 1 (and > 1 only with a factory import string), got {workers}")
    _quiet_closed_sockets()
    return uvicorn.Config(app, host=host, port=port, ws_max_size=max_message_bytes, factory=isinstance(app, str),
                          workers=workers, ws_ping_interval=20.0, ws_ping_timeout=20.0, log_level="warning")


WORKER_FACTORY = "core.clarify.serve:worker_app"
WORKER_SETTINGS = "CLARIFY_SERVE_WORKER"
"""Environment variable carrying the app's settings (JSON) to each worker process."""


def worker_app():
    """One worker process's app (``--workers N``): the settings ``main`` put in ``WORKER_SETTINGS``."""
    settings = json.loads(os.environ[WORKER_SETTINGS])
    _quiet_closed_sockets()
    return create_service_app(settings["rubric"], max_sessions=settings["max_sessions"],
                              session_timeout_s=settings["session_timeout_s"])


def run(config) -> None:
    """Serve until stopped: one process, or ``config.workers`` processes sharing the socket
    (each its own sessions; the kernel spreads connections over them)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    if config.workers > 1:
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    else:
        uvicorn.Server(config).run()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m core.clarify.serve",
                                description="Serve the clarify environment over OpenEnv (WebSocket /ws).")
    p.add_argument("--rubric", choices=SERVED_RUBRICS, default="v1", help="v1: the published behaviour; v2: corrected")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (0.0.0.0 for other machines)")
    p.add_argument("--port", type=port, default=8000)
    p.add_argument("--max-sessions", type=int, default=MAX_SESSIONS, help="concurrent sessions allowed")
    p.add_argument("--max-message-bytes", type=int, default=MAX_MESSAGE_BYTES,
                   help="largest WebSocket message accepted; a larger one closes the connection")
    p.add_argument("--session-timeout", type=float, default=SESSION_TIMEOUT_S,
                   help="seconds of inactivity after which a session is freed (0: never)")
    p.add_argument("--workers", type=int, default=1,
                   help="server processes; --max-sessions is split evenly between them")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.workers > 1 and args.max_sessions < args.workers:
            raise ValueError(f"--max-sessions {args.max_sessions} cannot be split over {args.workers} workers")
        settings = {"rubric": args.rubric, "max_sessions": args.max_sessions // max(args.workers, 1),
                    "session_timeout_s": args.session_timeout or None}
        app = create_service_app(**settings)  # checks the settings here, once, before any worker starts
        if args.workers > 1:
            os.environ[WORKER_SETTINGS], app = json.dumps(settings), WORKER_FACTORY
        config = server_config(app, args.host, args.port, max_message_bytes=args.max_message_bytes,
                               workers=args.workers)
    except (ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    workers = f", {args.workers} workers" if args.workers > 1 else ""
    print(f"clarify environment (rubric {args.rubric}) on ws://{args.host}:{args.port}/ws "
          f"(max {settings['max_sessions'] * args.workers} sessions{workers}, "
          f"{args.max_message_bytes} bytes a message)", flush=True)
    run(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
