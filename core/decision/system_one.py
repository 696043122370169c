"""System One requests and answers for our letter-readout models (the shape of transformers.decision).

A request is ``{"state": ..., "questions": {name: {"type", "instructions", "criteria"}}}``. It is
validated by ``transformers.decision.parse_questions`` itself, so errors are worded as the pipeline
and ``transformers serve`` word them, naming the question; then each question becomes one of our
primitives (the text our model was trained to read). Answers carry System One's fields with its
confidence definitions, plus our extras (``EXTRAS``), so any System One client reads them unchanged.

    spec = system_one.question("team", {"type": "choice", "criteria": {"BIL": "billing", "SEC": None}})
    system_one.answer(spec, [0.8, 0.2])  # {"type": "choice", "choice": "BIL", "confidence": 0.6, ...}
"""

import json
import math
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from core.decision.model import MAX_P_SOURCE
from core.decision.questions import MAX_OPTIONS, Choice, Noul, Question, QuestionError, Score, Truncation, entropy_confidence

EXTRAS = {
    "max_p": "max_k p_k, the top option's probability (System One's `confidence` is rescaled, see below)",
    "entropy_confidence": "1 - H(p) / ln K, clipped to [0, 1]; 1 one-hot, 0 uniform",
    "p_true": "noul only: p('true'), the same number as System One's `noul`",
    "truncated": "only when the caller opted into truncation: tokens cut from the state and this question",
}
"""Keys our answers add to System One's, with their meaning (docs/decision_engine.md lists them too)."""


@dataclass(frozen=True)
class SystemOneQuestion:
    """One validated System One question and the primitive our model reads for it."""

    name: str
    type: str
    """``choice``, ``score`` or ``noul``."""
    options: tuple[str, ...]
    """System One's option keys in answer order: choice keys, ``"0".."K-1"`` or ``("true", "false")``."""
    descriptions: tuple[Any, ...]
    """Each option's criterion as given (text, JSON content or None)."""
    primitive: Question
    """The Choice / Score / Noul shown to our model (same option order)."""


MAX_QUESTIONS = 64
"""Questions one request may ask: a served model answers requests one at a time, so one request's work is bounded
(2,000 questions kept a real-body model busy for 83 s)."""


def _config():
    from transformers.decision import DecisionConfig

    return DecisionConfig()  # labels A..Z, noul options in the order true, false (like our Noul)


def content_text(value: Any) -> str:
    """System One content as prompt text: None is empty, text as is, anything else its JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class ParsedQuestions(dict):
    """A request's questions ``{name: spec}`` with their parse kept (``parsed``, in order), so one
    Ask validates each question once and every model asked reads that same parse."""

    def __init__(self, specs: Mapping[str, Any], parsed: Sequence[Any]):
        super().__init__(specs)
        self.parsed = tuple(parsed)


def kept_parse(specs: Mapping[str, Any], kind: type) -> list | None:
    """The parse ``specs`` carries when it is a ``ParsedQuestions`` of ``kind`` records, else None."""
    if isinstance(specs, ParsedQuestions) and all(isinstance(q, kind) for q in specs.parsed):
        return list(specs.parsed)
    return None


def questions(specs: Mapping[str, Any]) -> list[SystemOneQuestion]:
    """Validate a request's ``questions`` with transformers' parser, then build our primitives.

    Raises:
        QuestionError: with ``parse_questions``' own message (every invalid question, each named),
            or, for a question it accepts that our letter readout cannot ask, a message naming it.
    """
    kept = kept_parse(specs, SystemOneQuestion)
    return kept if kept is not None else [from_parsed(q) for q in parse(specs)]


def parse(specs: Mapping[str, Any]) -> list:
    """transformers' parsed questions (``name``, ``type``, ``options``, ``descriptions``), in order
    (a ``ParsedQuestions``' own ``SystemOneQuestion``s, which carry the same fields).

    Raises:
        QuestionError: with ``parse_questions``' own message, or naming a count over ``MAX_QUESTIONS``.
    """
    from transformers.decision import parse_questions

    kept = kept_parse(specs, SystemOneQuestion)
    if kept is not None:
        return kept
    if isinstance(specs, Mapping) and len(specs) > MAX_QUESTIONS:
        raise QuestionError(f"{len(specs):,} questions; at most {MAX_QUESTIONS} per request (send more requests)")
    try:
        return parse_questions(specs, _config())
    except ValueError as err:
        raise QuestionError(str(err)) from None


def question(name: str, spec: Any) -> SystemOneQuestion:
    """One question, validated as part of a one-question request."""
    return questions({name: spec})[0]


def from_parsed(q) -> SystemOneQuestion:
    text, descs = content_text(q.instructions), tuple(q.descriptions)
    if q.type == "noul":
        notes = "; ".join(f"{o} means: {content_text(d).strip()}" for o, d in zip(q.options, descs)
                          if content_text(d).strip())
        shown = f"{text.strip()}\n({notes})" if notes and text.strip() else text
        primitive: Question = Noul(shown, qid=q.name)
    elif q.type == "choice":  # the description is what the model reads; a bare key reads as itself
        primitive = Choice(text, tuple(content_text(d) or o for o, d in zip(q.options, descs)), qid=q.name)
    else:
        primitive = Score(text, tuple(content_text(d) for d in descs), qid=q.name)
    return SystemOneQuestion(q.name, q.type, tuple(q.options), descs, primitive)


def system_one_confidence(kind: str, probs: Sequence[float]) -> float:
    """System One's confidence, in [0, 1]; 1.0 for a single option.

    choice: ``(p_max - 1/K) / (1 - 1/K)``, clipped at 0: 0 for a uniform answer, 1 for one-hot.
    score: ``1 - E|level - best| / D``, clipped at 0, where ``best`` is the most probable level and
    ``D = mean_i |i - (K-1)/2|`` is that distance's value under a uniform answer about the centre.
    noul answers carry no confidence (``noul`` is the probability itself).
    """
    k = len(probs)
    if k == 1:
        return 1.0
    best = max(range(k), key=lambda i: (probs[i], -i))
    if kind == "choice":
        return max(0.0, (probs[best] - 1 / k) / (1 - 1 / k))
    if kind == "score":
        distance = sum(p * abs(i - best) for i, p in enumerate(probs))
        uniform = sum(abs(i - (k - 1) / 2) for i in range(k)) / k
        return max(0.0, 1 - distance / uniform)
    raise ValueError(f"{kind!r} answers have no System One confidence")


def answer(q, probs: Sequence[float], truncated: Truncation | None = None) -> dict:
    """The System One answer to ``q`` (ours or transformers' parsed question) plus our ``EXTRAS``.

    ``choice`` is the most probable key (ties go to the earlier one); ``score`` is the expected
    level ``sum_i p_i * i`` (in 0..K-1, not rescaled); ``legend`` maps level keys to their criteria.
    """
    probs = [float(p) for p in probs]
    if len(probs) != len(q.options):
        raise ValueError(f"question {q.name!r}: {len(probs)} probabilities for {len(q.options)} options")
    by_option = dict(zip(q.options, probs))
    best = max(range(len(probs)), key=lambda i: (probs[i], -i))
    if q.type == "noul":
        out: dict[str, Any] = {"type": "noul", "noul": by_option["true"], "p_true": by_option["true"]}
    elif q.type == "choice":
        out = {"type": "choice", "choice": q.options[best], "confidence": system_one_confidence("choice", probs),
               "probabilities": by_option}
    else:
        out = {"type": "score", "score": sum(i * p for i, p in enumerate(probs)),
               "legend": dict(zip(q.options, q.descriptions)), "confidence": system_one_confidence("score", probs),
               "probabilities": by_option}
    out["max_p"] = probs[best]
    out["entropy_confidence"] = entropy_confidence(probs)
    if truncated is not None:
        out["truncated"] = truncated.model_dump()
    return out


def option_probabilities(q, ans: Mapping[str, Any]) -> list[float]:
    """Option probabilities in ``q.options`` order from a System One answer (a noul gives p, 1 - p)."""
    if q.type == "noul":
        return [float(ans["noul"]), 1.0 - float(ans["noul"])]
    return [float(ans["probabilities"][o]) for o in q.options]


def top_option(ans: Mapping[str, Any]) -> str:
    """The answer's most probable option key (``true``/``false`` for a noul)."""
    if ans["type"] == "noul":
        return "true" if ans["noul"] >= 0.5 else "false"
    probs = ans["probabilities"]
    return max(probs, key=lambda k: (probs[k], -list(probs).index(k)))


def probabilities_of(ans: Mapping[str, Any]) -> dict[str, float]:
    """Option -> probability of any System One answer (a noul's are derived from ``noul``)."""
    if ans["type"] == "noul":
        return {"true": float(ans["noul"]), "false": 1.0 - float(ans["noul"])}
    return {k: float(v) for k, v in ans["probabilities"].items()}


class SystemOneAnswer(BaseModel):
    """One System One answer as a typed record: what a front end shows of it, read once."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    qid: str
    type: Literal["choice", "score", "noul"]
    top: str
    """The most probable option key (``true``/``false`` for a noul)."""
    probabilities: dict[str, float]
    """Option -> probability (a noul's derived from ``noul``); sums to 1."""
    confidence: float | None = None
    """System One's ``confidence`` (its source is the model's ``confidence_source``); None for a letter noul."""
    max_p: float
    """The top option's probability, in [0, 1]."""
    entropy_confidence: float
    """1 - H(p) / ln K, in [0, 1]."""
    value: float | None = None
    """score: the expected level (0..K-1); noul: p(true); choice: None."""
    margin: float
    """Top probability minus the second, in [0, 1]."""

    @classmethod
    def of(cls, qid: str, ans: Mapping[str, Any]) -> "SystemOneAnswer":
        """Read a System One answer (ours or an endpoint's); extras we do not show are left out."""
        probs = probabilities_of(ans)
        top = sorted(probs.values(), reverse=True)
        return cls(qid=qid, type=ans["type"], top=top_option(ans), probabilities=probs, confidence=ans.get("confidence"),
                   max_p=ans.get("max_p", top[0]), entropy_confidence=ans.get("entropy_confidence",
                   entropy_confidence(list(probs.values()))), value=ans.get("score", ans.get("noul")),
                   margin=float(top[0] - (top[1] if len(top) > 1 else 0.0)))


def split_request(state: Any, specs: Mapping[str, Any] | None) -> tuple[Any, Mapping[str, Any]]:
    """``(state, questions)`` from either call form: ``score(request)`` (a dict or its JSON, worded as
    transformers' ``prepare_inputs`` words a bad one) or ``score(state, questions)``."""
    if specs is None:
        if isinstance(state, str) and state.lstrip().startswith("{"):  # the request's JSON, as the pipeline takes it
            try:
                state = json.loads(state)
            except json.JSONDecodeError as err:
                raise QuestionError(f"the request is not valid JSON: {err.msg} at line {err.lineno}") from None
        if not isinstance(state, Mapping) or "state" not in state or "questions" not in state:
            raise QuestionError('A request is {"state": ..., "questions": {name: question, ...}}, as a dict or its JSON.')
        extra = set(state) - {"state", "questions", "model", "assets"}
        if extra:
            raise QuestionError(f"unknown request field(s) {sorted(extra)}")
        if state.get("assets"):
            raise QuestionError("assets (images) need a model that reads images; this one reads text")
        return state["state"], state["questions"]
    return state, specs


def spec_of(question: Question) -> dict:
    """Our primitive as a System One question: options are the criteria keys, shown as themselves."""
    if question.kind == "noul":
        return {"type": "noul", "instructions": question.text}
    if question.kind == "score":
        return {"type": "score", "instructions": question.text, "criteria": list(question.options)}
    return {"type": "choice", "instructions": question.text, "criteria": dict.fromkeys(question.options)}


class SystemOneModel:
    """The Decider interface for anything that answers System One requests (``_run``).

    Subclasses answer ``_run(state, specs) -> (answers, input_tokens)`` with System One answers;
    this class validates requests, adds our extras, and turns primitives into requests for
    ``decide`` (calibration reports, Compare).
    """

    path_name = "system one"
    name = ""
    confidence_source = MAX_P_SOURCE
    max_options = MAX_OPTIONS
    """transformers' decision labels A..Z (``DecisionConfig``), as our letter readout."""

    def state_familiarity(self, text: str) -> None:
        """Not our training data: no familiarity signal (the tab says so)."""
        return None

    def limit_errors(self, state: Any, questions: Mapping[str, Any]) -> dict[str, str]:
        """No limits of ours: the model refuses what it cannot take (``score`` raises)."""
        return {}

    def _run(self, state: Any, specs: Mapping[str, Any]) -> tuple[dict, int]:
        raise NotImplementedError

    def score(self, state: Any, questions: Mapping[str, Any] | None = None, **_: Any) -> dict:
        """A System One request -> ``{"answers", "usage"}``, answers with our extras added."""
        state, specs = split_request(state, questions)
        asked = parse(specs)
        if isinstance(state, str) and not state.strip():
            raise QuestionError("state is empty")
        answers, tokens = self._run(state, specs)
        out = {q.name: {**answer(q, option_probabilities(q, answers[q.name])), **answers[q.name]} for q in asked}
        usage = {"input_tokens": tokens, "output_tokens": 0, "questions": len(asked), "path": self.path_name}
        return {"answers": out, "usage": usage}

    def decide(self, state: Any, questions: Sequence[Question]) -> list:
        """Our primitives -> ``Answer`` records, one request for all questions about ``state``."""
        from core.decision.questions import make_answer

        if not questions:
            raise QuestionError("no questions were given")
        names = [f"q{i}" for i in range(len(questions))]
        specs = dict(zip(names, (spec_of(q) for q in questions)))
        answers, _ = self._run(state, specs)
        parsed = {q.name: q for q in parse(specs)}
        return [make_answer(q, option_probabilities(parsed[n], answers[n])) for n, q in zip(names, questions)]


def is_finite_distribution(probs: Sequence[float], tol: float = 1e-4) -> bool:
    """True when ``probs`` are finite, in [0, 1] and sum to 1 within ``tol``."""
    return all(math.isfinite(p) and -tol <= p <= 1 + tol for p in probs) and abs(sum(probs) - 1) <= tol
