"""What the Decisions tab asks of a decision model, as plain data: states, built questions, readings.

The tab's question builder gives rows of (type, question, options text); ``build_questions`` turns
them into the System One questions every ``DecisionModel`` takes, parsed once (the parse travels
with them), keeping one error message per row so the UI can show it next to the offending field.
Our letter-readout models read one letter per option (at most 26); when every asked model is an
option scorer (``question_limit``, 255) rows are validated by its own request rules instead, so a
255-option question can be built. ``parse_state`` reads the state box (text, or a JSON object kept
as a record), ``reading`` adds the UI's close-call badge to a typed answer, and ``ask`` runs one
Ask through ``core.decision.model.run_models``.

    built = build_questions([QuestionRow("choice", "Which team?", "BIL: billing\\nSEC: security")])
    decider.score(parse_state("Card charged twice."), built.questions)
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from core.decision import system_one
from core.decision.model import DecisionModel, limit_errors, question_limit, run_models
from core.decision.questions import MAX_OPTIONS, PRIMITIVES, Choice, QuestionError, render_state
from core.runs.episode_log import TOO_DEEP

CLOSE_MARGIN = 0.10
"""Top-two probability gap below which an answer gets the "close call" badge."""
PAIR = re.compile(r"^\s*([A-Za-z0-9_.\-]{1,40})\s*:\s*(\S.*?)\s*$")
"""A ``key: description`` line: the key is one word of letters, digits, ``_ . -``."""


@dataclass(frozen=True)
class QuestionRow:
    """One row of the question builder, as typed by the user."""

    kind: str
    """``choice``, ``score`` or ``noul``."""
    text: str
    options: str
    """One option per line, or ``key: description`` on every line (noul: optional true/false notes)."""

    @property
    def blank(self) -> bool:
        return not (self.text or "").strip() and not (self.options or "").strip()


@dataclass(frozen=True)
class BuiltQuestions:
    """The System One questions that validated, and a message for every row that did not."""

    questions: system_one.ParsedQuestions
    """qid -> {"type", "instructions", "criteria"}, in row order (only rows without errors), with their parse."""
    errors: dict[str, str] = field(default_factory=dict)
    """qid -> what is wrong with that row (qids are ``q1``.. by row position)."""

    @property
    def ok(self) -> bool:
        return bool(self.questions) and not self.errors


def question_id(index: int) -> str:
    """The id of builder row ``index`` (0-based): ``q1``, ``q2``, ..."""
    return f"q{index + 1}"


def parse_options(kind: str, text: str) -> list[str] | dict[str, str] | None:
    """Options text -> a list (one per line) or, when every line is ``key: description``, a dict.

    Noul rows take no options, or ``true: ...`` / ``false: ...`` notes. Raises QuestionError for
    keys that repeat, or noul lines other than true/false.
    """
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    pairs = [PAIR.match(ln) for ln in lines]
    if kind == "noul":
        if not lines:
            return None
        if not all(pairs) or {m.group(1).lower() for m in pairs} - {"true", "false"}:
            raise QuestionError("a yes/no question takes no options, or 'true: ...' / 'false: ...' notes")
        return {m.group(1).lower(): m.group(2) for m in pairs}
    if not lines or not all(pairs):
        return lines
    keyed: dict[str, str] = {}
    for n, m in enumerate(pairs, 1):
        if m.group(1) in keyed:
            raise QuestionError(f"option key {m.group(1)!r} on line {n} is used twice; keys must differ")
        keyed[m.group(1)] = m.group(2)
    return keyed


def row_spec(row: QuestionRow, qid: str | None = None, max_options: int | None = None) -> dict:
    """The System One question of one builder row (validated by ``system_one.question``, or by the
    option scorer's rules when ``max_options`` is given)."""
    if row.kind not in PRIMITIVES:
        raise QuestionError(f"unknown question type {row.kind!r}; pick one of {list(PRIMITIVES)}")
    text, criteria = (row.text or "").strip(), parse_options(row.kind, row.options)
    n = len(criteria or ())
    if max_options is None and row.kind != "noul" and n > MAX_OPTIONS:
        raise QuestionError(f"{n} options; at most {MAX_OPTIONS} for the letter-readout models (one letter per "
                            "option, A..Z); the option scorer, asked alone, takes up to 255")
    if row.kind == "choice" and isinstance(criteria, list) and max_options is not None:
        repeated = next((o for i, o in enumerate(criteria) if o in criteria[:i]), None)
        if repeated is not None:
            raise QuestionError(f"option {repeated!r} is listed twice; options must differ")
        criteria = {o: o for o in criteria}
    elif row.kind == "choice" and isinstance(criteria, list):
        # plain lines: each option is its own key; build it first so duplicates are refused, not merged
        criteria = {o: o for o in Choice(text or "?", criteria, qid=qid).options}
    spec = {"type": row.kind, "instructions": text, "criteria": criteria}
    if criteria is None:
        del spec["criteria"]
    return spec


def _strip_qid(qid: str, message: str) -> str:
    """Messages start with ``question 'q1': `` (``Question`` from transformers' parser); next to the
    row itself that is noise."""
    prefix = f"question {qid!r}: "
    return message[len(prefix):] if message.lower().startswith(prefix.lower()) else message


def _parse(qid: str, spec: dict, max_options: int | None):
    """The row's one parse: System One's letter rules, or the option scorer's with ``max_options``."""
    if max_options is None:
        return system_one.question(qid, spec)
    from core.decision.option.request import OptionRequestError, parse_question  # torch: a model is loaded

    try:
        return parse_question(qid, spec, max_options)
    except OptionRequestError as err:
        raise QuestionError(str(err)) from None


def build_questions(rows: Sequence[QuestionRow], max_options: int | None = None) -> BuiltQuestions:
    """Validate every non-blank builder row; ids are ``q1``.. by row position.

    ``max_options``: the option scorer's limit when only option scorers are asked (None: letter models).
    """
    questions: dict[str, dict] = {}
    parsed, errors = [], {}
    for i, row in enumerate(rows):
        qid = question_id(i)
        if row.blank:
            continue
        try:
            spec = row_spec(row, qid, max_options)
            parsed.append(_parse(qid, spec, max_options))
        except QuestionError as err:
            errors[qid] = _strip_qid(qid, str(err))
            continue
        questions[qid] = spec
    return BuiltQuestions(system_one.ParsedQuestions(questions, parsed), errors)


def parse_state(text: str | Mapping[str, Any] | None) -> str | dict:
    """The state box: a JSON object (text starting with ``{``) becomes a record, anything else text.

    Raises QuestionError when the state is empty or looks like JSON but does not parse.
    """
    if isinstance(text, Mapping):
        state: str | dict = dict(text)
    else:
        raw = (text or "").strip()
        if not raw:
            raise QuestionError("the state is empty; type the situation the questions are about")
        state = raw
        if raw.startswith("{"):
            try:
                state = json.loads(raw)
            except json.JSONDecodeError as err:
                raise QuestionError(f"the state starts with '{{' but is not valid JSON: {err.msg} at line "
                                    f"{err.lineno}, column {err.colno}") from None
            except RecursionError:
                raise QuestionError(f"the state is {TOO_DEEP}") from None
            if not isinstance(state, dict):
                raise QuestionError("a JSON state must be one object {field: value}")
    try:
        render_state(state)  # raises on an empty record
    except RecursionError:  # a record that parsed a few frames short of the limit still renders by recursion
        raise QuestionError(f"the state is {TOO_DEEP}") from None
    return state


def record_rows(state: str | Mapping[str, Any]) -> list[list[str]]:
    """A record state as [field, value] rows for a table (text values as is, others as JSON)."""
    if not isinstance(state, Mapping):
        return []
    return [[str(k), v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)] for k, v in state.items()]


@dataclass(frozen=True)
class Reading:
    """One typed answer plus the UI's close-call badge."""

    answer: system_one.SystemOneAnswer

    @property
    def margin(self) -> float:
        """Top probability minus the second, in [0, 1]."""
        return self.answer.margin

    @property
    def close(self) -> bool:
        return self.margin < CLOSE_MARGIN


def reading(qid: str, answer: Mapping[str, Any]) -> Reading:
    """A System One answer read once into its typed record, with the close-call badge."""
    return Reading(system_one.SystemOneAnswer.of(qid, answer))


# ---- one Ask: state + builder rows + one or two models -> answers, or errors per field


@dataclass
class AskResult:
    """Everything one press of Ask produces; ``errors`` keys are the fields they belong next to."""

    questions: dict[str, str] = field(default_factory=dict)
    """qid -> question text, for every row that validated."""
    answers: dict[str, dict[str, dict]] = field(default_factory=dict)
    """model key -> {qid: System One answer}."""
    usage: dict[str, dict] = field(default_factory=dict)
    """model key -> the Decider's usage record (tokens, path)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """model key -> wall time of its score call."""
    errors: dict[str, str] = field(default_factory=dict)
    """``state``, ``questions``, ``model``, ``model_b`` or a qid -> message."""
    model_errors: dict[str, str] = field(default_factory=dict)
    """model key -> why it gave no answers (an endpoint refused, timed out, answered badly)."""


def ask(models: Mapping[str, DecisionModel], state_text: str | Mapping[str, Any], rows: Sequence[QuestionRow]) -> AskResult:
    """Validate the state and rows, then score them under each model (model key -> DecisionModel).

    Any error stops before a model runs, so a result has either answers or errors, never stale ones.
    """
    result = AskResult()
    built = build_questions(rows, question_limit(models))
    result.errors.update(built.errors)
    if not built.questions and not built.errors:
        result.errors["questions"] = "add at least one question (a question text and its options)"
    try:
        state = parse_state(state_text)
    except QuestionError as err:
        result.errors["state"] = str(err)
        state = None
    result.questions = {q: s["instructions"] for q, s in built.questions.items()}
    if not result.errors:
        result.errors.update(limit_errors(models, state, built.questions))
    if result.errors:
        return result
    for key, run in run_models(models, state, built.questions).items():
        result.seconds[key] = run.seconds
        if run.error:
            result.model_errors[key] = run.error
        else:
            result.answers[key], result.usage[key] = run.answers, run.usage
    return result
