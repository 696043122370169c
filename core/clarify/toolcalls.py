"""Tool calls as text: parse an agent's turn into a ToolCall, and render a call the Qwen3 way.

Agents speak in two dialects. Qwen3 chat models (and our tiny checkpoints, trained on the same
layout) write ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks; the published
ClarifyRL evaluation parsed plain-text calls such as ``ask_question("...")`` or
``propose_plan('{...}')``. ``parse_tool_call`` accepts both and, when neither is there, says why
in one line, so a broken turn is logged as broken instead of being guessed at.
"""

import ast
import json
import re
from typing import Any

from core.records import ToolCall

TOOL_NAMES = ("get_task_info", "ask_question", "propose_plan")
REQUIRED_ARGUMENT = {"get_task_info": None, "ask_question": "question", "propose_plan": "plan"}
"""Each tool's single parameter (None: takes none); a positional plain-text argument maps to it."""

TAG_OPEN, TAG_CLOSE = "<tool_call>", "</tool_call>"
"""A tagged call's delimiters; a chat-model message ends at its first complete ``TAG_CLOSE``."""
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_PLAIN_START = re.compile(r"\b(" + "|".join(TOOL_NAMES) + r")\s*\(")


def render_tool_call(call: ToolCall) -> str:
    """The Qwen3 chat-template form of one call (what the template writes for an assistant turn)."""
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"{TAG_OPEN}\n{body}\n{TAG_CLOSE}"


def render_plain_call(call: ToolCall) -> str:
    """The plain-text form the published evaluation parsed, e.g. ``ask_question("Which day?")``."""
    param = REQUIRED_ARGUMENT.get(call.name)
    if param is None:
        return f"{call.name}()"
    value = call.arguments.get(param, "")
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return f"{call.name}({value!r})"


def ends_inside_call(text: str) -> bool:
    """True when ``text`` ends inside a tagged call: its last ``<tool_call>`` is never closed (the
    message was cut by its token budget mid-call)."""
    start = text.rfind(TAG_OPEN)
    return start >= 0 and TAG_CLOSE not in text[start:]


def parse_tool_call(text: str) -> tuple[ToolCall | None, str | None]:
    """Read the first tool call in an agent's text.

    A ``<tool_call>`` block wins over plain text when both appear. Only the first call counts:
    the environment takes one call per step.

    Returns:
        ``(call, None)`` on success, or ``(None, error)`` with a one-line reason.
    """
    if not isinstance(text, str):
        return None, f"agent output must be text, got {type(text).__name__}"
    body = _THINK.sub("", text)
    if TAG_OPEN in body:
        return _parse_tagged(body)
    match = _PLAIN_START.search(body)
    if match is None:
        snippet = body.strip()[:60] or "<empty>"
        return None, f"no tool call found (expected <tool_call>{{...}}</tool_call>): {snippet!r}"
    return _parse_plain(body, match)


def _parse_tagged(body: str) -> tuple[ToolCall | None, str | None]:
    start = body.index(TAG_OPEN) + len(TAG_OPEN)
    end = body.find(TAG_CLOSE, start)
    inner = body[start:] if end < 0 else body[start:end]
    try:
        payload = json.loads(inner.strip())
    except json.JSONDecodeError as err:
        closing = "" if end >= 0 else " (no closing </tool_call>)"
        return None, f"tool call is not valid JSON{closing}: {err.msg} at char {err.pos}"
    except (ValueError, RecursionError) as exc:  # a 5,000-digit integer, nesting past Python's stack
        return None, f"tool call JSON cannot be read: {str(exc)[:120]}"
    if not isinstance(payload, dict):
        return None, f"tool call must be a JSON object, got {type(payload).__name__}"
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        return None, 'tool call has no "name" string'
    arguments = payload.get("arguments", {})
    if isinstance(arguments, str):  # some models double-encode the arguments object
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return None, '"arguments" is a string that is not a JSON object'
    if not isinstance(arguments, dict):
        return None, f'"arguments" must be an object, got {type(arguments).__name__}'
    return _checked(name, arguments)


def _parse_plain(body: str, match: re.Match) -> tuple[ToolCall | None, str | None]:
    name = match.group(1)
    begin = match.start()
    # Try every closing parenthesis from the nearest on: the first prefix that parses as one
    # Python call is the call (parentheses inside string arguments are skipped this way).
    for close in (i for i, ch in enumerate(body) if ch == ")" and i > match.end() - 2):
        try:
            node = ast.parse(body[begin:close + 1].strip(), mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Call):
            return _plain_arguments(name, node)
    return None, f"{name}( is not a complete call with literal arguments"


def _plain_arguments(name: str, node: ast.Call) -> tuple[ToolCall | None, str | None]:
    try:
        positional = [ast.literal_eval(arg) for arg in node.args]
        keywords = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    except ValueError:
        return None, f"{name}(...) arguments must be literals (quoted strings)"
    param = REQUIRED_ARGUMENT[name]
    if positional:
        if param is None or len(positional) > 1:
            return None, f"{name} takes {0 if param is None else 1} argument(s), got {len(positional)}"
        keywords.setdefault(param, positional[0])
    return _checked(name, keywords)


def _checked(name: str, arguments: dict[str, Any]) -> tuple[ToolCall | None, str | None]:
    """Known tools must carry their argument with the right type; unknown tools pass through
    (the environment answers them with an error, which is a legal step)."""
    arguments, error = _as_json(name, arguments)
    if error is not None:
        return None, error
    param = REQUIRED_ARGUMENT.get(name)
    if param is not None:
        if param not in arguments:
            return None, f'{name} needs a "{param}" argument'
        value = arguments[param]
        allowed = (str, dict) if name == "propose_plan" else (str,)
        if not isinstance(value, allowed):
            return None, f'{name} "{param}" must be a string, got {type(value).__name__}'
    return ToolCall(name=name, arguments=arguments), None


def _as_json(name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The arguments as every wire carries them (MCP, OpenAI ``tool_calls``: JSON text), so a call
    played in process is the call a served environment receives. A plain call's Python literals
    become their JSON form (tuples arrays, non-string keys strings); what JSON cannot hold (sets,
    bytes, complex numbers, unpaired surrogates) is a parse error, not a crash on the wire. NaN
    and Infinity stay: Python's JSON reads and writes them on both ends."""
    try:
        text = json.dumps(arguments, ensure_ascii=False)
        text.encode("utf-8")  # an unpaired surrogate (a "\\ud800" escape) cannot be sent or logged
    except (TypeError, ValueError, RecursionError) as exc:
        return arguments, f"{name} arguments are not JSON values: {str(exc)[:120]}"
    return json.loads(text), None
