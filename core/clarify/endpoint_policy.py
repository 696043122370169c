"""Any OpenAI-compatible chat-completions endpoint as a clarify policy (vLLM, transformers serve, APIs).

    python -m core.runs.eval --policy openai:http://127.0.0.1:8000/v1#MODEL --scenarios clarifyrl-heldout --limit 50 --out runs/x

Each turn posts our system prompt, the task and the episode so far with ``TOOL_SCHEMAS`` as
``tools``; the reply's first ``tool_calls`` entry (or a tool call in its text, read by our parser)
is the step, and its result goes back as a ``tool`` message. 429, 5xx, timeouts and refused
connections are retried with exponential backoff; when the retries run out, or the reply holds no
usable call (malformed arguments, an answer cut at max_tokens), the episode ends with the error
in the turn's ``parse_error``; so does a 400 saying the server's own parser could not read the
model's answer (transformers serve >= 5.25 answers a cut tool call that way; 5.24 answered 500).
Other 4xx answers (bad key, unknown model) raise ``EndpointError``: the run is misconfigured.
Streamed turns ask for the token count (``stream_options``) until a server refuses the field.
The API key comes from an environment variable and is never logged.
"""

import json
import os
import random
import time
from typing import Any, Callable, Sequence

import httpx

from core.clarify.agent import TOOL_SCHEMAS, prompt_messages, tool_message
from core.clarify.environment import ClarifyEnv
from core.clarify.toolcalls import parse_tool_call, render_tool_call
from core.models.entries import parse_spec
from core.records import Generation, ToolCall, trusted

API_KEY_ENV = "OPENAI_API_KEY"
"""Environment variable holding the endpoint's API key (optional for local servers)."""
DEFAULT_GENERATION = Generation(temperature=0.7, top_p=1.0, max_new_tokens=120)
RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
UNREADABLE_ANSWER = "parser could not parse"
"""In a 400's body: the server could not parse what the model generated (the model's fault, not the request's)."""


class EndpointError(RuntimeError):
    """The endpoint refuses the run itself (e.g. 401 bad key, 404 unknown model): not retried."""


class EndpointFailure(RuntimeError):
    """One turn could not be completed (retries spent, or an unreadable answer): ends the episode."""


class EndpointPolicy:
    """Plays episodes through ``POST {base_url}/chat/completions``; safe to share across threads."""

    def __init__(self, base_url: str, model: str, generation: Generation | None = None, *,
                 timeout_s: float = 60.0, retries: int = 3, backoff_s: float = 0.5, concurrency: int = 8,
                 api_key_env: str = API_KEY_ENV):
        if retries < 0 or backoff_s < 0 or timeout_s <= 0 or concurrency < 1:
            raise ValueError("timeout_s must be > 0, retries and backoff_s >= 0, concurrency >= 1")
        g = generation or Generation()
        self.name = f"openai:{base_url}#{model}"
        self.base_url, self.model = base_url, model
        self.generation = Generation(
            temperature=DEFAULT_GENERATION.temperature if g.temperature is None else g.temperature,
            top_p=DEFAULT_GENERATION.top_p if g.top_p is None else g.top_p,
            max_new_tokens=g.max_new_tokens or DEFAULT_GENERATION.max_new_tokens,
            seed=g.seed, extra={**g.extra, "endpoint": base_url, "model": model})
        self.retries, self.backoff_s, self.concurrency = retries, backoff_s, concurrency
        key = os.environ.get(api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(timeout=timeout_s, headers=headers)
        self._stream_usage = True  # until the server refuses ``stream_options`` (a strict one answers 422 naming it)

    # ---- one request ----------------------------------------------------------------------

    def request_body(self, messages: list[dict], seed: int) -> dict[str, Any]:
        g = self.generation
        return {"model": self.model, "messages": messages, "tools": TOOL_SCHEMAS, "tool_choice": "auto",
                "temperature": g.temperature, "top_p": g.top_p, "max_tokens": g.max_new_tokens,
                "seed": seed, "stream": False}

    def complete(self, messages: list[dict], seed: int) -> dict:
        """The endpoint's answer to one turn, retried with backoff on transient failures."""
        return self.request(self.request_body(messages, seed), json_answer)

    def stream(self, messages: list[dict], seed: int, read: Callable[[httpx.Response], Any]) -> Any:
        """One turn streamed to ``read``, asking for the usage chunk (the turn's token count) unless
        this server has refused ``stream_options`` once; then it is asked without."""
        body = {**self.request_body(messages, seed), "stream": True}
        if self._stream_usage:
            try:
                return self.request({**body, "stream_options": {"include_usage": True}}, read)
            except EndpointError as exc:
                if "stream_options" not in str(exc):
                    raise
                self._stream_usage = False
        return self.request(body, read)

    def request(self, body: dict, read: Callable[[httpx.Response], Any]) -> Any:
        """POST ``body`` and hand the open response to ``read``; transport failures, timeouts and
        retryable statuses before ``read`` starts are retried with exponential backoff."""
        url, last = f"{self.base_url}/chat/completions", ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                with self._http.stream("POST", url, json=body) as reply:
                    if reply.status_code in RETRY_STATUS:
                        last = f"HTTP {reply.status_code}: {reply.read().decode(errors='replace')[:300]}"
                        continue
                    if reply.status_code >= 400:
                        said = reply.read().decode(errors="replace")
                        if reply.status_code == 400 and UNREADABLE_ANSWER in said:
                            raise EndpointFailure(f"the endpoint could not read the model's answer: {said[:600]}")
                        raise EndpointError(f"{url} answered HTTP {reply.status_code}: {said[:300]}")
                    return read(reply)
            except httpx.TimeoutException as exc:
                last = f"timed out after {self._http.timeout.read}s ({type(exc).__name__})"
            except httpx.TransportError as exc:  # refused, reset, DNS
                last = f"could not reach {self.base_url}: {type(exc).__name__}: {exc}"
        raise EndpointFailure(f"{last} (after {self.retries + 1} attempts)")

    # ---- one turn -------------------------------------------------------------------------

    def read(self, answer: dict) -> tuple[ToolCall | None, str, str | None, dict]:
        """(call, raw text, parse error, assistant message to append) from one answer."""
        try:
            choice = answer["choices"][0]
            message, finish = choice["message"], choice.get("finish_reason")
        except (KeyError, IndexError, TypeError):
            raise EndpointFailure(f"the answer has no choices[0].message: {json.dumps(answer)[:200]}") from None
        content = message.get("content") or ""
        tool_calls = message.get("tool_calls") or []
        if tool_calls:
            return self._read_tool_call(content, tool_calls[0])
        call, error = parse_tool_call(content)
        if call is None and finish == "length":
            error = f"the answer hit max_tokens ({self.generation.max_new_tokens}) without a tool call: {error}"
        return call, content, error, {"role": "assistant", "content": content}

    def _read_tool_call(self, content: str, entry: Any) -> tuple[ToolCall | None, str, str | None, dict]:
        function = entry.get("function") if isinstance(entry, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        arguments = function.get("arguments", "{}") if isinstance(function, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as exc:
                return None, f"{content}{json.dumps(entry)[:2000]}", f"malformed tool call arguments: {exc}", {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return None, f"{content}{json.dumps(entry)[:2000]}", "malformed tool call: needs a name and object arguments", {}
        # the structured call goes through our own parser too, so both paths accept the same calls
        raw = content + render_tool_call(trusted(ToolCall, name=name, arguments=arguments))
        call, error = parse_tool_call(raw)
        assistant = {"role": "assistant", "content": content, "tool_calls": [
            {"id": entry.get("id") or "call_0", "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}]}
        return call, raw, error, assistant

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        """Step ``env`` until it is done; endpoint failures end it with the error logged."""
        sent: list[dict] = []
        while not env.done:
            try:
                call, raw, error, assistant = self.read(self.complete(history(env, sent), rng.randrange(2**31)))
            except EndpointFailure as exc:
                env.step(None, raw="", parse_error=f"endpoint failure: {exc}")
                return
            sent.append(assistant)
            env.step(call, raw=raw, parse_error=error)

    def close(self) -> None:
        self._http.close()


def json_answer(reply: httpx.Response) -> dict:
    """An open response's body as JSON (not JSON: ``EndpointFailure``)."""
    text = reply.read().decode(errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        raise EndpointFailure(f"the answer is not JSON: {text[:200]!r}") from None


def history(env: ClarifyEnv, sent: Sequence[dict] = ()) -> list[dict]:
    """The episode so far as chat-completions messages: each turn as the endpoint sent it
    (``sent[k]``, e.g. with structured ``tool_calls``; its raw text when missing), then the tool's
    answer, tied to the call by id when the call was structured."""
    out: list[dict] = prompt_messages(env.scenario)
    for k, turn in enumerate(env.turns):
        assistant = sent[k] if k < len(sent) and sent[k] else {"role": "assistant", "content": turn.raw}
        out.append(assistant)
        if turn.call is not None:
            reply = tool_message(turn.call.name, turn.result)
            if "tool_calls" in assistant:
                reply["tool_call_id"] = assistant["tool_calls"][0]["id"]
            out.append(reply)
    return out


def make_endpoint_policy(spec: str, generation: Generation | None = None, **options) -> EndpointPolicy:
    """``openai:BASE_URL#MODEL`` as a policy (options: timeout_s, retries, backoff_s, concurrency)."""
    base_url, model = parse_spec(spec)
    return EndpointPolicy(base_url, model, generation, **options)
