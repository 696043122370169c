"""Typed records that cross a boundary: scenarios, turns, episodes, rubric breakdowns.

Everything written to disk or handed between core, demo and train is one of these pydantic
models with ``extra="forbid"``, so a malformed log or a typo in a field name fails loudly at the
edge instead of flowing on as a dict. The episode record is versioned (``EPISODE_VERSION``).
The edge's readers of plain values live here too (a form's number, an operator's setting, a flag's count, port
or output file), so every edge reads each one way and words a refusal the same.
"""

import argparse
import math
import os
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Mapping

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

Difficulty = Literal["easy", "medium", "hard"]
Value = str | int | float
"""A hidden-profile value: categorical text, or a number for counts and minutes."""

Termination = Literal["plan", "over_budget", "max_steps", "unparseable", "running"]
"""Why an episode ended: a plan was proposed; an ask_question came with the budget spent;
the step limit was reached; the agent's turn held no parseable tool call; or not ended yet."""

EPISODE_VERSION = 1
RubricName = Literal["v1", "v2", "v3"]
"""Rubric versions: v1 published, v2 corrected, v3 = v2 plus a per-question cost (cued scenarios)."""
CueKind = Literal["none", "clear", "two", "weak"]
"""How a v3 request speaks about a field: not at all, one clear cue, two competing cues, one weak cue."""
CUES_VERSION = 1
BELIEFS_VERSION = 1

def _unit(value: float) -> float:
    if not math.isfinite(value) or not 0.0 <= value <= 1.0 + 1e-9:  # 1e-9: a weighted sum's rounding
        raise ValueError(f"must be a finite number in [0, 1], got {value}")
    return value


Unit = Annotated[float, AfterValidator(_unit)]
"""A score or rubric component: a finite number in [0, 1]."""
Finite = Annotated[float, Field(allow_inf_nan=False)]
"""A reward or weight: any finite number (step rewards may be negative)."""
Count = Annotated[int, Field(ge=0)]
"""A count or index: 0 or more."""


def field_problem(exc: ValidationError) -> str:
    """A schema error in plain words: the first bad field, what is wrong with it, how many more."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(record)"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"field {loc}: {first['msg']}{more}"


def plain_problem(err: Exception) -> str:
    """A file's parse or schema error as a message shows it: a schema error as ``field_problem`` words it (not
    pydantic's own text, with its types, input values and help link), any other error its message."""
    return field_problem(err) if isinstance(err, ValidationError) else str(err)


def form_number(value: Any, whole: bool = True, least: float = -math.inf,
                most: float = math.inf) -> int | float | None:
    """A number a form, an API caller, an operator or a flag sent: finite, whole unless ``whole`` is False (a form's
    10.0 counts) and in [least, most], else None; a boolean is no number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if isinstance(value, bool) or not math.isfinite(number) or (whole and not number.is_integer()):
        return None
    if not least <= number <= most:
        return None
    return int(number) if whole else number


class SettingError(ValueError):
    """An operator's setting (an environment variable or a flag) that is not what it must be; the message names it."""


def setting(name: str, default: int | float, least: float = 0, most: float = math.inf, whole: bool = True,
            environ: Mapping[str, str] = os.environ) -> int | float:
    """The operator's number in ``environ[name]``, ``default`` when unset or blank; read at start, so a typo stops the
    app with the variable's name and what it takes, not with ``int()``'s error from deep inside an import."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    number = form_number(raw, whole, least, most)
    if number is None:
        kind = "a whole number" if whole else "a number"
        bound = f"from {least:g} to {most:g}" if math.isfinite(most) else f">= {least:g}"
        raise SettingError(f"{name} must be {kind} {bound}, got {raw!r}")
    return number


def at_least(least: float, whole: bool = True, most: float = math.inf, name: str = "") -> Callable[[str], int | float]:
    """An argparse ``type`` for a count, a duration or a port: a number in [least, most], whole unless ``whole`` is
    False (argparse names a refusal from the function's name: "invalid whole number >= 1 value: '0'")."""
    def number(text: str) -> int | float:
        value = form_number(text, whole, least, most)
        if value is None:
            raise ValueError(text)
        return value

    number.__name__ = name or f"{'whole number' if whole else 'number'} >= {least:g}"
    return number


port = at_least(0, most=65535, name="port")
"""A listen port for argparse's ``type``: a whole number 0..65535 (0 lets the system pick); "invalid port value"."""


def output_file(text: str) -> Path:
    """An argparse ``type`` for a file a run writes when it ends (a bench's ``--json``): its folder is made now, and one
    that cannot be made or written is refused before the run spends its minutes."""
    path = Path(text)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot make the folder of {text}: {err.strerror}") from None
    if path.is_dir() or not os.access(path.parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: " + ("it is a folder" if path.is_dir() else
                                                                      "its folder is not writable"))
    return path


def text_problem(text: str) -> str | None:
    """Why ``text`` is no Unicode text, or None: JSON's "\\ud800" decodes to a lone surrogate, which no tokenizer,
    JSON writer or table can encode (each raised from deep inside)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"holds a lone surrogate (\\u{ord(text[err.start]):04x}) at character {err.start + 1}, which is not text"
    return None


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def trusted(cls: type[BaseModel], **values: Any) -> Any:
    """Build a record from values the caller built itself, skipping validation.

    The environment's hot path makes several records per step; ``model_construct`` costs ~10 us
    each, this ~1 us. Every field must be given (no defaults are filled in); tests check that the
    result equals the validated record.
    """
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(cls.model_fields)
    if values.keys() != names:
        missing = sorted(set(cls.model_fields) - set(values))
        raise TypeError(f"trusted {cls.__name__} needs every field; missing {missing}, got extra "
                        f"{sorted(set(values) - set(cls.model_fields))}")
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


class FieldCue(_Record):
    """What a v3 request says about one required field, and the generator's posterior given it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: CueKind
    hinted: list[Value] = Field(default_factory=list)
    """The values the request names (none: [], clear and weak: one, two: two), in text order."""
    posterior: list[float]
    """P(value | request) under the generator, in the field's vocabulary order; sums to 1."""


class Cues(_Record):
    """A v3 scenario's cues: the KNOWN posterior of every required field (versioned on its own)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = CUES_VERSION
    """Schema version of this block; v1/v2 scenarios carry no block at all."""
    fields: dict[str, FieldCue]
    """Required field -> its cue and posterior."""


class Scenario(_Record):
    """One clarify task: a vague request and the hidden profile behind it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int | None = None
    """Generator seed; None for hand-written scenarios."""
    source_id: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """The source log's own id for a scenario that names no generator seed (else None; not
    written when None, so logs of generated scenarios keep their bytes)."""
    family: str
    difficulty: Difficulty
    """Published name: ``task_id``."""
    title: str
    """Published name: ``task_title`` (e.g. "Mild Ambiguity")."""
    request: str
    hidden_profile: dict[str, Value]
    """Field -> value, in the order the generator drew them."""
    critical_fields: list[str]
    """Critical fields present in the profile, sorted."""
    required_keys: list[str]
    """Keys a plan must hold to pass the format gate (the family's list)."""
    field_keys: list[str]
    """Sorted profile keys."""
    max_steps: Count
    max_questions: Count = 6
    cues: Cues | None = Field(default=None, exclude_if=lambda v: v is None)
    """v3 (clarifylab-cued-v3) only: the request's cues and their known posteriors; None (and not
    written) for every other scenario, so v1/v2 logs keep their bytes."""

    @property
    def id(self) -> str:
        """Published scenario id, ``seed{seed}_{family}_{difficulty}``, or the source's own id."""
        if self.seed is None and self.source_id:
            return self.source_id
        return f"seed{self.seed}_{self.family}_{self.difficulty}"


class ToolCall(_Record):
    """A parsed tool call: one of get_task_info, ask_question, propose_plan (or anything else)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class RewardBreakdown(_Record):
    """A rubric's verdict on one episode: the total and every component, always fresh."""

    rubric: RubricName
    total: Unit
    """Final score in [0, 1]; 0 when the gate fails."""
    gate_passed: bool
    components: dict[str, Unit]
    """Component name (as published, e.g. ``FieldMatchRubric``) -> value in [0, 1]."""
    weights: dict[str, Finite]
    """Component name -> weight in the weighted sum (the gate has none)."""


class Turn(_Record):
    """One agent step and the environment's answer to it."""

    index: Count
    """0-based step number within the episode."""
    raw: str
    """The agent's raw text for this step (scripted policies write the call they made)."""
    call: ToolCall | None = None
    """The parsed call; None when the text held no parseable call."""
    parse_error: str | None = None
    """Why ``raw`` could not be parsed, when ``call`` is None."""
    result: dict[str, Any] = Field(default_factory=dict)
    """The tool's result fields, or ``{"error": ...}``."""
    reward: Finite = 0.0
    """Per-step reward (ask_question table, 0 for get_task_info, the score for propose_plan)."""

    @field_validator("result")
    @classmethod
    def _scored_result(cls, result: dict[str, Any]) -> dict[str, Any]:
        """A result's ``score`` (a plan's verdict) is shown as a number, so it must be one."""
        score = result.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                  or not math.isfinite(score)):
            raise ValueError(f"its score must be a finite number, got {score!r:.40}")
        return result


class Generation(_Record):
    """How an episode's agent text was produced (empty for scripted policies)."""

    temperature: float | None = None
    top_p: float | None = None
    max_new_tokens: int | None = None
    seed: int | None = None
    """Sampling seed of this episode."""
    extra: dict[str, Any] = Field(default_factory=dict)


class Recorded(_Record):
    """Scores as a source log recorded them, kept next to our own re-scoring."""

    source: str
    """Where the episode came from (e.g. ``published-trace``)."""
    score: Unit
    breakdown: dict[str, Unit] = Field(default_factory=dict)
    label: str | None = None
    """The source's model label."""


class BeliefStep(_Record):
    """A decision-driven agent's beliefs after ``turn`` (-1: before any question)."""

    turn: int
    """Index of the turn just answered; -1 for the beliefs read from the request alone."""
    asked: str | None = None
    """The field the agent asked about at this turn (None at the start)."""
    fields: dict[str, list[float]]
    """Field -> the agent's distribution over its vocabulary (one-hot once answered)."""
    gains: dict[str, float] = Field(default_factory=dict)
    """Field -> expected gain of asking it now, weight * (1 - max p); 0 once answered."""


class Beliefs(_Record):
    """Per-step beliefs beside the generator's posterior, so the viewer never runs a model."""

    version: int = BELIEFS_VERSION
    """Schema version of this block."""
    model: str
    """The decision model that formed the beliefs (e.g. ``checkpoints/decision-rlcd``)."""
    cost: float
    """The rubric's cost per question the agent weighed gains against."""
    steps: list[BeliefStep]


class Episode(_Record):
    """One complete (or ended) clarify episode, as logged one JSON object per line."""

    version: int = EPISODE_VERSION
    """Schema version; bumped on every breaking change."""
    scenario: Scenario
    policy: str
    """Policy or model identity (``oracle``, ``model:checkpoints/clarify-grpo``, ...)."""
    sample: Count = 0
    """Sample index when a scenario is played K times."""
    generation: Generation = Field(default_factory=Generation)
    rubric: RubricName
    turns: list[Turn] = Field(default_factory=list)
    plan: dict[str, Any] | None = None
    """The final parsed plan, or None when no plan parsed."""
    plan_raw: str | None = None
    """The plan argument exactly as the agent gave it."""
    score: Unit = 0.0
    """In [0, 1]."""
    breakdown: RewardBreakdown | None = None
    """Set on every ended episode (gate failures included); None only while running."""
    termination: Termination = "running"
    questions_asked: Count = 0
    fields_revealed: list[str] = Field(default_factory=list)
    recorded: Recorded | None = None
    """Scores from an imported source log, when there is one."""
    beliefs: Beliefs | None = Field(default=None, exclude_if=lambda v: v is None)
    """Decision-driven agents only: the model's belief per field at every step (not written when None)."""

    @property
    def id(self) -> str:
        """Unique within a run: scenario id plus sample index."""
        return f"{self.scenario.id}#{self.sample}"
