"""The clarify environment: one scenario, three tools, a question budget and a step limit.

``ClarifyEnv(scenario, rubric)`` answers ``step(call)`` with a ``Turn`` and never raises on agent
input: a malformed call gets a result ``{"error": ...}``. Rules (docs/environment.md):
every call is a step, erroneous ones included; the episode ends on propose_plan, on an
ask_question with the budget spent, on reaching max_steps, or on a turn with no parseable call
(``call=None``). An ended episode is always scored; calls after the end are answered with
"episode already ended" and are not recorded. ``rubric`` picks the simulator version too.
"""

import json
from typing import Any

from core.clarify.families import ASK_REWARDS, QUESTION_CHAR_CAP
from core.records import EPISODE_VERSION, Beliefs, Episode, Generation, RewardBreakdown, Scenario, ToolCall, Turn, trusted
from core.clarify.rubrics import VERSIONS, RubricVersion, score
from core.clarify.user_sim import respond

TOOLS = {"get_task_info": (), "ask_question": ("question",), "propose_plan": ("plan",)}
"""Tool name -> its argument names (every argument is required)."""
ASK_REWARDS_V2 = {**ASK_REWARDS, "no_field_matched": 0.0}
"""v2: a question that matches no field earns nothing (v1 pays +0.02 for it)."""
ENDED = "episode already ended"
OVER_CAP_ANSWER = "(no more questions allowed)"
"""The published answer to an ask made after the budget is spent."""


def render_call(call: ToolCall) -> str:
    """Plain-text form of a call, e.g. ``ask_question("How many guests?")`` (scripted agents' raw)."""
    args = ", ".join(json.dumps(v, ensure_ascii=False) for v in call.arguments.values())
    return f"{call.name}({args})"


def parse_plan(plan: str | dict, rubric: RubricVersion = "v1") -> tuple[dict | None, str | None]:
    """A plan argument as a JSON-object dict, or (None, why not).

    v1 strips the string as the published code does (``str.strip()``: every Unicode whitespace,
    e.g. U+00A0, U+2028, U+3000, U+001C) before parsing; v2 accepts only JSON's own whitespace
    (space, tab, CR, LF) around the object, so model output padded with such characters fails there.
    """
    if isinstance(plan, str):
        try:
            plan = json.loads(plan.strip() if rubric == "v1" else plan)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, or e.g. a 5,000-digit integer
            return None, f"plan is not valid JSON: {getattr(exc, 'msg', exc)}"
        if not isinstance(plan, dict):
            return None, f"plan must be a JSON object, got a JSON {type(plan).__name__}"
        return plan, None
    try:  # a dict from Python code: make it exactly what a JSON round trip gives
        return json.loads(json.dumps(plan, default=str)), None
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"plan could not be read as a JSON object: {exc}"


class ClarifyEnv:
    """One episode of one scenario; create a new env per episode."""

    def __init__(self, scenario: Scenario, rubric: RubricVersion = "v1"):
        if rubric not in VERSIONS:
            raise ValueError(f"unknown rubric version {rubric!r}; expected v1 or v2")
        self.scenario = scenario
        self.rubric = rubric
        self.turns: list[Turn] = []
        self.steps = 0
        self.questions_asked = 0
        self.revealed: dict[str, Any] = {}
        """Fields revealed by questions -> their values, in reveal order."""
        self.plan: dict | None = None
        self.plan_raw: str | None = None
        self.termination = "running"
        self.breakdown: RewardBreakdown | None = None
        self.beliefs: Beliefs | None = None
        """A decision-driven agent's per-step beliefs, logged with the episode (None for others)."""
        self._ask_rewards = ASK_REWARDS if rubric == "v1" else ASK_REWARDS_V2

    @property
    def done(self) -> bool:
        return self.termination != "running"

    @property
    def score(self) -> float:
        return self.breakdown.total if self.breakdown is not None else 0.0

    def task_info(self) -> dict:
        """What get_task_info tells the agent (and what a prompt's first message carries)."""
        s = self.scenario
        return {
            "request": s.request, "family": s.family, "difficulty": s.difficulty, "title": s.title,
            "required_keys": list(s.required_keys), "max_questions": s.max_questions,
            "questions_remaining": s.max_questions - self.questions_asked,
            "max_steps": s.max_steps, "steps_remaining": s.max_steps - self.steps,
        }

    def step(self, call: ToolCall | None, raw: str = "", parse_error: str | None = None) -> Turn:
        """Apply one agent turn. ``call=None`` means the text held no parseable call (ends it)."""
        if self.done:
            return trusted(Turn, index=len(self.turns), raw=raw, call=call, parse_error=parse_error,
                           result={"error": ENDED}, reward=0.0)
        self.steps += 1
        reward = 0.0
        if call is None:
            parse_error = parse_error or "no tool call found"
            result = {"error": f"no parseable tool call ({parse_error}); the episode has ended"}
            self._finish("unparseable")
        else:
            result, reward = self._dispatch(call)
        if not self.done and self.steps >= self.scenario.max_steps:
            self._finish("max_steps")
        turn = trusted(Turn, index=len(self.turns), raw=raw, call=call, parse_error=parse_error,
                       result=result, reward=reward)
        self.turns.append(turn)
        return turn

    def _dispatch(self, call: Any) -> tuple[dict, float]:
        name, args = getattr(call, "name", None), getattr(call, "arguments", None)
        if not isinstance(name, str) or not isinstance(args, dict):
            return {"error": "a call needs a tool name (string) and arguments (object)"}, 0.0
        if name not in TOOLS:
            return {"error": f"unknown tool {name[:80]!r}; the tools are {', '.join(TOOLS)}"}, 0.0
        expected = TOOLS[name]
        missing = [a for a in expected if a not in args]
        extra = [str(a)[:80] for a in args if a not in expected]
        if missing or extra:
            wants = f"({', '.join(expected)})" if expected else "no arguments"
            what = f"missing argument {missing[0]!r}" if missing else f"unexpected argument(s) {extra}"
            return {"error": f"{name}: {what}; it takes {wants}"}, 0.0
        if name == "get_task_info":
            return self.task_info(), 0.0
        if name == "ask_question":
            return self._ask(args["question"])
        return self._propose(args["plan"])

    def _ask(self, question: Any) -> tuple[dict, float]:
        if not isinstance(question, str):
            return {"error": f"ask_question: question must be a string, got {type(question).__name__}"}, 0.0
        s = self.scenario
        if self.questions_asked >= s.max_questions:
            self._finish("over_budget")
            return {"answer": OVER_CAP_ANSWER, "questions_remaining": 0, "field_revealed": None,
                    "duplicate": False, "over_cap": True}, self._ask_rewards["over_budget"]
        self.questions_asked += 1
        answer, field = respond(s.hidden_profile, s.family, question[:QUESTION_CHAR_CAP], self.rubric)
        duplicate = field is not None and field in self.revealed
        if field is None:
            reward = self._ask_rewards["no_field_matched"]
        elif duplicate:
            reward, field = self._ask_rewards["duplicate_field"], None
        else:
            reward = self._ask_rewards["revealed_new_field"]
            self.revealed[field] = s.hidden_profile[field]
        return {"answer": answer, "questions_remaining": s.max_questions - self.questions_asked,
                "field_revealed": field, "duplicate": duplicate, "over_cap": False}, reward

    def _propose(self, plan: Any) -> tuple[dict, float]:
        if not isinstance(plan, (str, dict)):
            return {"error": f"propose_plan: plan must be a JSON object string or an object, got {type(plan).__name__}"}, 0.0
        self.plan, error = parse_plan(plan, self.rubric)
        if isinstance(plan, str):
            self.plan_raw = plan
        else:
            self.plan_raw = None if self.plan is None else json.dumps(self.plan, ensure_ascii=False)
        self._finish("plan")
        s, b = self.scenario, self.breakdown
        return {"score": b.total, "breakdown": dict(b.components), "hidden_profile": dict(s.hidden_profile),
                "critical_fields": list(s.critical_fields), "required_keys": list(s.required_keys),
                "plan": self.plan, "parse_error": error, "questions_asked": self.questions_asked,
                "fields_revealed": list(self.revealed)}, b.total

    def _finish(self, termination: str) -> None:
        self.termination = termination
        self.breakdown = score(self.scenario, self.plan, self.revealed, self.questions_asked, self.rubric)

    def episode(self, policy: str, sample: int = 0, generation: Generation | None = None) -> Episode:
        """The complete record of this episode so far (scored once it has ended)."""
        if generation is None:
            generation = trusted(Generation, temperature=None, top_p=None, max_new_tokens=None, seed=None, extra={})
        return trusted(
            Episode, version=EPISODE_VERSION,
            scenario=self.scenario, policy=policy, sample=sample, generation=generation,
            rubric=self.rubric, turns=list(self.turns), plan=self.plan, plan_raw=self.plan_raw,
            score=self.score, breakdown=self.breakdown, termination=self.termination,
            questions_asked=self.questions_asked, fields_revealed=list(self.revealed), recorded=None,
            beliefs=self.beliefs,
        )
