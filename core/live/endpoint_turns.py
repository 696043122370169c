"""Live play through an OpenAI-compatible chat endpoint: each model turn streamed, with Stop.

A turn posts the episode so far (``endpoint_policy.history``) with ``stream: true``. The server's
``data:`` events carry content deltas and tool-call deltas (name and argument fragments by index);
they are merged into one answer that ``EndpointPolicy.read`` turns into the step, exactly as
evaluation reads a whole answer. A server that ignores ``stream`` and answers JSON is one chunk.
The request runs in a worker thread, so Stop ends the turn at once; the worker closes the
connection at the server's next event, which is how a server learns to stop generating.
Endpoint failures end the episode with the error logged; a refused request (401, unknown model)
ends only the turn, so Continue can try again once the endpoint is fixed.
"""

import copy
import json
import queue
import threading
import time
from contextlib import closing
from dataclasses import dataclass, field
from typing import Callable, Iterator

import httpx

from core.clarify.endpoint_policy import (EndpointError, EndpointFailure, EndpointPolicy, json_answer, history,
                                         make_endpoint_policy)
from core.live.session import LiveSession, apply_model_text, settle
from core.live.streaming import TurnClock
from core.records import text_problem
from core.runs.transcripts import inert

MAX_TURN_CHARS = 200_000
"""Most characters one streamed turn may send: a server that ignores max_tokens once streamed 12 MB into a draft
the page re-rendered hundreds of times (a shipped policy's turn is under 1,000)."""
WORKER_NAME = "live-endpoint"
"""Name of the thread that reads one turn's stream (tests wait for it to end)."""


@dataclass
class StreamedAnswer:
    """One turn's answer, merged from the stream's deltas as they arrive."""

    content: str = ""
    calls: dict[int, dict] = field(default_factory=dict)
    """Tool calls by index: ``id``, ``name`` and ``arguments`` (the fragments joined)."""
    finish: str | None = None
    tokens: int = 0
    """Deltas seen so far; the server's ``usage.completion_tokens`` once it reports it."""
    chunks: int = 0
    """Events that carried text: a server may hold a tool call back until it parses, then send it whole."""
    streamed: bool = True
    whole: dict | None = None
    """The whole answer, when the server answered JSON instead of a stream."""
    chars: int = 0
    """Characters the stream has sent (bounded by ``MAX_TURN_CHARS``)."""

    def show(self, whole: dict) -> None:
        """Take the text, calls and token count of a whole JSON answer, for the page (``read`` checks it)."""
        choices = whole.get("choices") if isinstance(whole, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        usage = whole.get("usage") if isinstance(whole, dict) else None
        self.tokens = usage.get("completion_tokens", 0) if isinstance(usage, dict) else 0
        if not isinstance(message, dict):
            return
        self.content = message.get("content") if isinstance(message.get("content"), str) else ""
        for i, entry in enumerate(message.get("tool_calls") or []):
            function = entry.get("function") if isinstance(entry, dict) else None
            if isinstance(function, dict):
                arguments = function.get("arguments", "")
                self.calls[i] = {"id": entry.get("id"), "name": str(function.get("name", "")),
                                 "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}

    def add(self, event: dict) -> bool:
        """Merge one chunk; True when it carried text (content or a tool-call fragment)."""
        if isinstance(event.get("usage"), dict) and isinstance(event["usage"].get("completion_tokens"), int):
            self.tokens = event["usage"]["completion_tokens"]
        choices = event.get("choices") or []
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return False
        self.finish = choices[0].get("finish_reason") or self.finish
        delta = choices[0].get("delta") or {}
        if not isinstance(delta, dict):
            raise EndpointFailure(f"malformed stream event (delta is not an object): {json.dumps(event)[:200]}")
        content, parts = delta.get("content") or "", delta.get("tool_calls") or []
        if not isinstance(content, str) or not isinstance(parts, list) or not all(
                isinstance(p, dict) and isinstance(p.get("index", 0), int) and isinstance(p.get("function") or {}, dict)
                and isinstance((p.get("function") or {}).get("name") or "", str) for p in parts):
            raise EndpointFailure(f"malformed stream event (content, tool_calls, index, function or name of the "
                                  f"wrong type): {json.dumps(event)[:200]}")
        text = bool(content)
        self.content += content
        for part in parts:
            slot = self.calls.setdefault(part.get("index", 0), {"id": None, "name": "", "arguments": ""})
            function = part.get("function") or {}
            slot["id"] = part.get("id") or slot["id"]
            slot["name"] += function.get("name") or ""
            arguments = function.get("arguments") or ""
            slot["arguments"] += arguments if isinstance(arguments, str) else json.dumps(arguments)
            text = True
        self.tokens += text
        self.chunks += text
        sent = content + "".join(json.dumps(p, ensure_ascii=False) for p in parts)
        if why := text_problem(sent):
            raise EndpointFailure(f"the endpoint sent text that {why}")
        self.chars += len(sent)
        if self.chars > MAX_TURN_CHARS:
            raise EndpointFailure(f"the endpoint sent more than {MAX_TURN_CHARS:,} characters for one turn: it does not "
                                  "keep to max_tokens")
        return text

    def draft(self) -> str:
        """What the page shows while the turn streams: the text, then each call as far as it came."""
        calls = "".join(f'\n<tool_call>\n{{"name": "{c["name"]}", "arguments": {c["arguments"]}'
                        for _, c in sorted(self.calls.items()))
        return self.content + calls

    def answer(self) -> dict:
        """The merged answer in the non-streaming ``chat.completion`` shape ``read`` takes."""
        if self.whole is not None:
            return self.whole
        message = {"role": "assistant", "content": self.content}
        if self.calls:
            message["tool_calls"] = [{"id": c["id"] or f"call_{i}", "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for i, c in sorted(self.calls.items())]
        return {"choices": [{"message": message, "finish_reason": self.finish}]}


def read_stream(reply: httpx.Response, answer: StreamedAnswer, pushed: Callable[[], None],
                closed: threading.Event, clock: TurnClock) -> None:
    """Fill ``answer`` from an open response (SSE, or one JSON answer), calling ``pushed`` after
    each text chunk; returns early once ``closed`` is set (which closes the connection)."""
    if "text/event-stream" not in reply.headers.get("content-type", ""):  # the server did not stream
        answer.whole, answer.streamed = json_answer(reply), False
        answer.show(answer.whole)
        pushed()
        return
    try:
        for line in reply.iter_lines():
            if closed.is_set():
                return
            if not line.startswith("data:") or not (data := line[5:].strip()):
                continue
            if data == "[DONE]":
                return
            try:
                event = json.loads(data)
            except ValueError:
                raise EndpointFailure(f"malformed stream event: {data[:200]!r}") from None
            if not isinstance(event, dict) or "error" in event:
                raise EndpointFailure(f"the endpoint reported an error mid-stream: {data[:300]}")
            if answer.add(event):
                clock.first = clock.first or time.monotonic()
                pushed()
    except httpx.HTTPError as exc:
        if answer.chunks:  # retrying now would replay the turn from the start
            raise EndpointFailure(f"the stream broke after {answer.chunks} chunks: {type(exc).__name__}: {exc}") from None
        raise


def stream_answer(policy: EndpointPolicy, messages: list[dict], seed: int, stop: threading.Event,
                  clock: TurnClock, min_interval: float = 0.05) -> Iterator[tuple[str, int, StreamedAnswer | None]]:
    """Yield (text so far, tokens so far, None) while the endpoint answers one turn, then once
    (text, tokens, answer) at the end; a stopped turn ends without the final answer."""
    answer, closed, updates, failure = StreamedAnswer(), threading.Event(), queue.SimpleQueue(), []

    def snapshot():  # what the page shows, taken in the worker so the consumer never reads a half-merged answer
        updates.put((answer.draft(), answer.tokens))

    def work():
        try:
            policy.stream(messages, seed, lambda reply: read_stream(reply, answer, snapshot, closed, clock))
        except BaseException as exc:  # handed to the consumer, which re-raises it
            failure.append(exc)
        finally:
            updates.put(None)

    clock.start = time.monotonic()
    worker = threading.Thread(target=work, name=WORKER_NAME, daemon=True)
    worker.start()
    last, done = float("-inf"), False
    try:
        while not done and not stop.is_set():
            try:
                item = updates.get(timeout=0.05)
            except queue.Empty:
                continue
            done = item is None
            if not done and time.monotonic() - last >= min_interval:
                last = time.monotonic()
                yield *item, None
    finally:
        closed.set()  # the worker drops the connection at the server's next event
        # one chunk is a whole answer, streamed or not: no decoding speed can be read from it
        clock.end, clock.tokens, clock.streamed = time.monotonic(), answer.tokens, answer.chunks > 1
    if not done:
        return
    worker.join()
    if failure:
        raise failure[0]
    yield answer.draft(), answer.tokens, answer


def endpoint_turns(session: LiveSession, stop: threading.Event, min_interval: float = 0.05,
                   **options) -> Iterator[LiveSession]:
    """The live session's model turns through its endpoint entry, as ``model_turns`` does for a
    local model: until the episode ends, the person must answer, Stop, or an endpoint error.

    ``options`` go to the ``EndpointPolicy`` (timeout_s, retries, backoff_s).
    """
    session = copy.deepcopy(session)
    if session.mode == "agent" or session.pending is not None or session.done:
        yield session
        return
    policy = make_endpoint_policy(session.entry.location, session.settings.generation(), **options)
    session.stopped, session.draft = False, ""
    try:
        while not session.done and session.pending is None:
            turn, answer, read = len(session.env.turns) + 1, None, None
            session.status, clock = f"generating turn {turn} at the endpoint", TurnClock()
            try:
                with closing(stream_answer(policy, history(session.env, session.sent),
                                           session.settings.seed * 1000 + turn - 1, stop, clock, min_interval)) as stream:
                    for session.draft, session.draft_tokens, answer in stream:
                        yield session
                read = policy.read(answer.answer()) if answer is not None else None
            except EndpointError as exc:
                session.stopped = True
                session.status = f"⚠️ {inert(exc)} · the turn was not played; Continue tries again"
            except EndpointFailure as exc:
                session.sent.append({})
                session.env.step(None, raw="", parse_error=f"endpoint failure: {exc}")
                settle(session)
                session.status = f"⚠️ endpoint failure: {inert(exc)} · {session.status}"
            finally:
                session.draft, session.draft_tokens = "", 0
                if clock.first is not None or read is not None:  # a turn that produced text has a speed
                    session.timings.append(clock.timing(turn))
            if session.stopped or session.done:
                yield session
                return
            if read is None:
                session.stopped = True
                session.status = "stopped: the unfinished turn was discarded; Continue generates it again"
                yield session
                return
            call, raw, error, assistant = read
            session.sent.append(assistant)
            apply_model_text(session, raw, (call, error))
            settle(session)
            yield session
    finally:
        policy.close()
