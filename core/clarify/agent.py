"""The agent protocol: what a chat-model policy sees and how an episode becomes chat messages.

Training, evaluation and live play all talk to a model through these functions, so a checkpoint
meets exactly the prompt it was trained on. The layout follows the published ClarifyRL runs: a
system message describing the three tools, the budget, a strategy and rules; a first user message
with the request, the family, the required plan fields, the number of turns and the question
budget; tools declared through the chat template; tool results returned as ``tool`` messages.
The wording is ours and deliberately short: a tiny model pays for every prompt token.
"""

import json
from typing import Any

from core.records import Scenario, Turn

SYSTEM_PROMPT = (
    "You turn a vague request into a plan by asking the user first.\n"
    "Tools: get_task_info() shows the task; ask_question(question) asks the user one question; "
    "propose_plan(plan) submits the plan and ends the episode.\n"
    "Budget: at most {max_questions} questions.\n"
    "Strategy: read the required plan fields, ask one short question about each field you do not "
    "know, then propose a plan holding all of them.\n"
    "Rules: be efficient; include every required field; never include fields you were not told "
    "about; the plan is a JSON object string with the exact field names; copy values from the "
    'answers and write "unknown" when the user could not say.'
)
"""System message template (``{max_questions}`` is filled in)."""

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_task_info", "description": "Show the task: request, family, required fields, budgets.",
        "parameters": {"type": "object", "properties": {}, "required": []}}},
    {"type": "function", "function": {
        "name": "ask_question", "description": "Ask the user one clarifying question.",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}},
                       "required": ["question"]}}},
    {"type": "function", "function": {
        "name": "propose_plan", "description": "Submit the final plan and end the episode.",
        "parameters": {"type": "object", "properties": {
            "plan": {"type": "string", "description": "JSON object string, one key per plan field"}},
            "required": ["plan"]}}},
]
"""OpenAI-style function schemas, passed to the chat template as ``tools``."""


def system_message(scenario: Scenario) -> dict[str, str]:
    return {"role": "system", "content": SYSTEM_PROMPT.format(max_questions=scenario.max_questions)}


def first_user_message(scenario: Scenario) -> dict[str, str]:
    """The task as the user states it: request, family, required fields, turns, question budget."""
    lines = [
        f"Request: {scenario.request}",
        f"Family: {scenario.family}",
        f"Required plan fields: {', '.join(scenario.required_keys)}",
        f"Turns: {scenario.max_steps}",
        f"Question budget: {scenario.max_questions}",
    ]
    return {"role": "user", "content": "\n".join(lines)}


def prompt_messages(scenario: Scenario) -> list[dict[str, str]]:
    """The conversation before the agent's first turn."""
    return [system_message(scenario), first_user_message(scenario)]


def turn_messages(turn: Turn) -> list[dict[str, Any]]:
    """One step as chat messages: the agent's text, then the tool's answer (if there was a call).

    The assistant message carries the agent's raw text unchanged (it already holds the
    ``<tool_call>`` block), so re-rendering a conversation reproduces what the model wrote.
    """
    out: list[dict[str, Any]] = [{"role": "assistant", "content": turn.raw}]
    if turn.call is not None:
        out.append(tool_message(turn.call.name, turn.result))
    return out


REVIEW_ONLY = ("simulator_answer", "answer_missed")
"""Result fields logged for a reader of the episode but never shown to the agent: when a person
plays the user, what the simulator would have answered (the hidden value itself) and the field
the person's answer missed."""


def tool_message(name: str, result: dict[str, Any]) -> dict[str, str]:
    """A tool result as a ``tool`` message: compact JSON of the result fields the agent may see."""
    shown = {k: v for k, v in result.items() if k not in REVIEW_ONLY}
    return {"role": "tool", "name": name, "content": json.dumps(shown, ensure_ascii=False)}


def episode_messages(scenario: Scenario, turns: list[Turn], final_result: bool = True) -> list[dict[str, Any]]:
    """The whole conversation so far: prompt, then every turn with its tool result.

    With ``final_result=False`` the last turn's tool answer is left out: after an episode ends
    the agent never reads it, so training sequences stop at the agent's last call.
    """
    messages: list[dict[str, Any]] = prompt_messages(scenario)
    for turn in turns:
        messages.extend(turn_messages(turn))
    if not final_result and turns and messages[-1]["role"] == "tool":
        messages.pop()
    return messages
