"""Decision questions (Choice, Score, Noul), their answers, and how a request's state is rendered.

A question is validated when it is built, so a bad one never reaches a model; every message names
the question and the option at fault. Answers are pydantic records whose ``to_dict()`` is plain
JSON. These records live here rather than in ``core/records.py`` because they are the decision
engine's wire types and are used by nothing else; ``core.decision`` re-exports them.

    q = Choice("Which team owns this?", ["billing", "security"], qid="team")
    make_answer(q, [0.8, 0.2]).to_dict()  # {"kind": "choice", "value": "billing", ...}
"""

import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from core.records import text_problem

MIN_OPTIONS, MAX_OPTIONS = 2, 26
PRIMITIVES = ("choice", "score", "noul")


class QuestionError(ValueError):
    """A question (or a System One question) that the engine refuses, with the reason."""


def _name(qid: str | None, text: str) -> str:
    if qid is not None:
        return f"question {qid!r}"
    short = text.strip()[:40] + ("..." if len(text.strip()) > 40 else "")
    return f"question {short!r}"


@dataclass(frozen=True)
class Question:
    """Base of the three primitives: a question text and 2..26 single-line options."""

    text: str
    options: tuple[str, ...]
    qid: str | None = field(default=None, kw_only=True)
    """Caller's id, used only in error messages and result keys (never shown to the model)."""
    kind: ClassVar[str] = ""

    def __post_init__(self):
        where = _name(self.qid, self.text if isinstance(self.text, str) else "")
        if not isinstance(self.text, str) or not self.text.strip():
            raise QuestionError(f"{where}: the question text is empty")
        if why := text_problem(self.text):
            raise QuestionError(f"{where}: the question text {why}")
        if isinstance(self.options, str) or not isinstance(self.options, Sequence):
            raise QuestionError(f"{where}: options must be a list of strings, got {type(self.options).__name__}")
        opts = tuple(self.options)
        if len(opts) < MIN_OPTIONS:
            raise QuestionError(f"{where}: {len(opts)} option(s); a {self.kind} needs at least {MIN_OPTIONS}")
        if len(opts) > MAX_OPTIONS:
            raise QuestionError(f"{where}: {len(opts)} options; at most {MAX_OPTIONS} (one per letter A..Z)")
        seen: dict[str, int] = {}
        for i, opt in enumerate(opts, 1):
            if not isinstance(opt, str):
                raise QuestionError(f"{where}: option {i} is {type(opt).__name__}, not text")
            if not opt.strip():
                raise QuestionError(f"{where}: option {i} is empty")
            if why := text_problem(opt):
                raise QuestionError(f"{where}: option {i} {why}")
            if "\n" in opt.strip() or "\r" in opt.strip():
                raise QuestionError(f"{where}: option {i} ({opt.strip()[:30]!r}...) spans several lines")
            if opt.strip() in seen:
                raise QuestionError(f"{where}: option {i} ({opt.strip()!r}) duplicates option {seen[opt.strip()]}")
            seen[opt.strip()] = i
        object.__setattr__(self, "options", tuple(o.strip() for o in opts))


@dataclass(frozen=True)
class Choice(Question):
    """Unordered options; the answer is the most probable one."""

    kind: ClassVar[str] = "choice"


@dataclass(frozen=True)
class Score(Question):
    """Ordered levels, low to high; the answer adds ``score = sum_i p_i * i / (K - 1)``."""

    kind: ClassVar[str] = "score"


@dataclass(frozen=True)
class Noul(Question):
    """A yes/no question: options exactly ("true", "false"); the answer carries ``p_true``."""

    options: tuple[str, ...] = ("true", "false")
    kind: ClassVar[str] = "noul"

    def __post_init__(self):
        where = _name(self.qid, self.text if isinstance(self.text, str) else "")
        if tuple(self.options) != ("true", "false"):
            raise QuestionError(f"{where}: a noul's options are exactly ['true', 'false'], got {list(self.options)}")
        if isinstance(self.text, str) and self.text.strip() and "?" not in self.text:
            raise QuestionError(f"{where}: a noul must be phrased as a question (it has no '?')")
        super().__post_init__()


QUESTION_TYPES: dict[str, type[Question]] = {"choice": Choice, "score": Score, "noul": Noul}


def question_from_dict(qid: str | None, spec: Mapping[str, Any]) -> Question:
    """Build a question from ``{"kind": "choice", "text": ..., "options": [...]}``."""
    if not isinstance(spec, Mapping):
        raise QuestionError(f"{_name(qid, '?')}: expected an object, got {type(spec).__name__}")
    kind = spec.get("kind", spec.get("type"))
    if kind not in QUESTION_TYPES:
        raise QuestionError(f"{_name(qid, str(spec.get('text', '?')))}: unknown primitive {kind!r} (expected one of {list(PRIMITIVES)})")
    extra = set(spec) - {"kind", "type", "text", "options"}
    if extra:
        raise QuestionError(f"{_name(qid, str(spec.get('text', '?')))}: unknown field(s) {sorted(extra)}")
    if kind == "noul":
        return Noul(spec.get("text", ""), tuple(spec.get("options", ("true", "false"))), qid=qid)
    return QUESTION_TYPES[kind](spec.get("text", ""), spec.get("options", ()), qid=qid)


class Truncation(BaseModel):
    """How much of a request was cut to fit the model (only when the caller opted in)."""

    model_config = ConfigDict(extra="forbid")
    state_tokens_removed: int = 0
    """State tokens dropped from its start (the last ``max_state_tokens`` are kept, as published)."""
    question_tokens_removed: int = 0
    """Suffix tokens dropped from the start of this question's text (as published: its end is kept;
    options and the answer cue are never cut)."""


class Answer(BaseModel):
    """One question's answer; plain JSON through ``to_dict()``."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["choice", "score", "noul"]
    value: str
    """The most probable option (ties go to the earlier option)."""
    probs: dict[str, float]
    """Option -> probability, in the declared option order; sums to 1."""
    confidence: float
    """Max option probability, in [0, 1]."""
    entropy_confidence: float
    """1 - H(p) / ln K, clipped to [0, 1]; 1 means one-hot, 0 uniform."""
    score: float | None = None
    """Score only: sum_i p_i * i / (K - 1), in [0, 1]."""
    p_true: float | None = None
    """Noul only: probability of "true"."""
    truncated: Truncation | None = None
    """Set when the state or this question was cut to fit; None when nothing was cut."""

    def to_dict(self) -> dict:
        return self.model_dump(exclude_none=True)


def entropy_confidence(probs: Sequence[float]) -> float:
    """1 - H(p)/ln K with 0 ln 0 = 0, clipped to [0, 1]."""
    k = len(probs)
    h = -sum(p * math.log(p) for p in probs if p > 0.0)
    return min(1.0, max(0.0, 1.0 - h / math.log(k)))


def make_answer(question: Question, probs: Sequence[float], truncated: Truncation | None = None) -> Answer:
    """The answer record for ``question`` given its option probabilities (declared order)."""
    probs = [float(p) for p in probs]
    if len(probs) != len(question.options):
        raise ValueError(f"{len(probs)} probabilities for {len(question.options)} options")
    best = max(range(len(probs)), key=lambda i: (probs[i], -i))
    fields: dict[str, Any] = {}
    if question.kind == "score":
        fields["score"] = sum(p * i for i, p in enumerate(probs)) / (len(probs) - 1)
    if question.kind == "noul":
        fields["p_true"] = probs[0]
    return Answer(
        kind=question.kind, value=question.options[best], probs=dict(zip(question.options, probs)),
        confidence=probs[best], entropy_confidence=entropy_confidence(probs), truncated=truncated, **fields,
    )


# ---- the state of a request (System One requests: core.decision.system_one)


def render_state(state: str | Mapping[str, Any]) -> str:
    """A string state as is; a dict state as one ``key: value`` line per entry (JSON for non-text)."""
    if isinstance(state, str):
        text = state
    elif isinstance(state, Mapping):
        text = "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in state.items())
    else:
        raise QuestionError(f"state must be text or an object, got {type(state).__name__}")
    if not text.strip():
        raise QuestionError("state is empty")
    if why := text_problem(text):
        raise QuestionError(f"the state {why}")
    return text
