"""What a decision model is: the one interface every kind implements, the table of kinds, one Ask.

Every kind of decision model (our letter readout ``Decider``, over a tiny body or a LoRA adapter on a real base, the option scorer's ``OptionDecider``,
any chat model's ``PipelineDecider``, a ``SystemOneEndpoint``) implements ``DecisionModel``, so the
Decisions tab, the reports and the scripts ask a model what it is instead of probing it. ``KINDS``
maps each design to the module that opens it (imported on first load: torch comes with the first
model, not the app). A new kind is one module with an ``open_model(location, name)`` and one row
in ``KINDS``. ``run_models`` is one Ask: every model's limits, then its call, timed, its failure
kept as text next to it.

    models = {"rlcd": load_model(LETTER_DESIGN, "checkpoints/decision-rlcd", "rlcd")}
    runs = run_models(models, "Card charged twice.", system_one.parsed_questions(specs))
"""

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from core.decision.questions import Answer, Question
from core.models.availability import design
from core.models.entries import (ADAPTER_DESIGN, ENDPOINT_DESIGN, LETTER_DESIGN, OPTION_DESIGN, PIPELINE_DESIGN, POOLED_DESIGN,
                                 Availability, ModelEntry)

MAX_P_SOURCE = "rescaled max p"
"""System One's confidence of a letter readout or a chat model: (max p - 1/K) / (1 - 1/K)."""
HEAD_SOURCE = "confidence head"
REPORTED_SOURCE = "as the endpoint reports it"

KINDS = {
    LETTER_DESIGN: "core.decision.export.published",
    ADAPTER_DESIGN: "core.decision.export.adapter",
    POOLED_DESIGN: "core.decision.pooled",
    OPTION_DESIGN: "core.decision.option.decider",
    PIPELINE_DESIGN: "core.decision.pipeline",
    ENDPOINT_DESIGN: "core.decision.endpoint",
}
"""Design -> the module whose ``open_model(location, name)`` loads that kind (the one table of kinds)."""


class RequestTooLong(ValueError):
    """A request over a model's limits: ``reason`` says what is over which limit, ``hint`` what a
    caller may do (e.g. pass ``truncate=True``); nothing is ever cut silently."""

    def __init__(self, reason: str, hint: str = ""):
        super().__init__(f"{reason} {hint}".strip())
        self.reason, self.hint = reason, hint


@runtime_checkable
class DecisionModel(Protocol):
    """The interface of every decision model; ``questions`` are System One specs ``{name: spec}``
    (a ``system_one.ParsedQuestions`` keeps their parse, so an Ask validates each question once)."""

    name: str
    """Shown in messages and reports (a picker key, a folder or a URL)."""
    design: str
    """One of ``KINDS``."""
    confidence_source: str
    """What an answer's ``confidence`` is: ``MAX_P_SOURCE``, ``HEAD_SOURCE`` or ``REPORTED_SOURCE``."""
    max_options: int
    """The most options one question may have (26 letters A..Z; the option scorer 255)."""

    def state_familiarity(self, text: str) -> Any:
        """How like its training states a rendered state is (``core.decision.evaluation.familiarity``: a
        ``Familiarity`` by its own training vocabulary, an ``EmbeddingFamiliarity`` in its body's states), or
        None when it has no such signal."""

    def limit_errors(self, state: Any, questions: Mapping[str, Any]) -> dict[str, str]:
        """Why this request is too big for the model, ``{"state" | "questions" | qid: reason}``; empty: it fits."""

    def score(self, state: Any, questions: Mapping[str, Any] | None = None) -> dict:
        """System One answers with every option's probability: ``{"answers": {qid: answer}, "usage": {...}}``."""

    def decide(self, state: Any, questions: Sequence[Question]) -> list[Answer]:
        """Typed ``Answer`` records for our primitives (calibration reports, the probe, Compare)."""


def load_model(design: str, location: str | Path, name: str) -> DecisionModel:
    """Open ``location`` as the kind ``design`` names (raises ValueError saying why it cannot)."""
    if design not in KINDS:
        raise ValueError(f"unknown decision-model design {design!r}; expected one of {list(KINDS)}")
    return importlib.import_module(KINDS[design]).open_model(location, name)


def open_decider(entry: ModelEntry, path: Path | None) -> DecisionModel:
    """What ``core.models.cache.ModelCache(open_decider=...)`` builds a decision model with: the kind
    the entry's design names (``path``: the checked folder, None for a URL)."""
    found = None if path is None else Availability(True, path, "")
    return load_model(design(entry, found), entry.location if path is None else path, entry.key)


def question_limit(models: Mapping[str, DecisionModel]) -> int | None:
    """The option limit a request is built under when it exceeds the letters' 26 (every model asked
    is an option scorer), else None: the request is built under System One's letter rules."""
    from core.decision.questions import MAX_OPTIONS

    limits = [m.max_options for m in models.values()]
    return min(limits) if limits and min(limits) > MAX_OPTIONS else None


# ---- one Ask over several models


@dataclass(frozen=True)
class ModelRun:
    """One model's part of an Ask: its answers and usage, or why it gave none."""

    answers: dict[str, dict] = field(default_factory=dict)
    """qid -> System One answer, in question order (empty when ``error`` is set)."""
    usage: dict = field(default_factory=dict)
    """The model's usage record (tokens, path)."""
    seconds: float = 0.0
    """Wall time of its ``score`` call."""
    error: str = ""
    """Why it gave no answers (an endpoint refused, timed out, answered badly), else empty."""


def limit_errors(models: Mapping[str, DecisionModel], state: Any, questions: Mapping[str, Any]) -> dict[str, str]:
    """Every model's limit check on one request, merged by the part at fault."""
    errors: dict[str, str] = {}
    for model in models.values():
        errors.update(model.limit_errors(state, questions))
    return errors


def run_model(model: DecisionModel, state: Any, questions: Mapping[str, Any]) -> ModelRun:
    """Score the request under ``model``, timed; a ValueError (an endpoint's failure, a pipeline
    model's refusal) becomes the run's ``error``."""
    start = time.perf_counter()
    try:
        scored = model.score(state, questions)
    except ValueError as err:
        return ModelRun(seconds=time.perf_counter() - start, error=str(err))
    return ModelRun(scored["answers"], scored["usage"], time.perf_counter() - start)


def run_models(models: Mapping[str, DecisionModel], state: Any, questions: Mapping[str, Any]) -> dict[str, ModelRun]:
    """``run_model`` under each model, in order: model key -> its run."""
    return {key: run_model(model, state, questions) for key, model in models.items()}
