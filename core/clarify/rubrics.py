"""Rubrics: the published scoring (v1), its corrected form (v2) and v3 (v2 plus a question cost), as pure functions.

score = 0 unless the FormatCheck gate passes (>= 0.5); otherwise
0.50 FieldMatch + 0.20 InfoGain + 0.15 QuestionEfficiency + 0.15 HallucinationCheck (v1, v2), or
max(0, FieldMatch - QUESTION_COST * questions) (v3, for the cued scenarios: asking pays only when
the answer is uncertain, see ``ask_gain``).
Every call returns a fresh RewardBreakdown holding the total and every component, gate failures
included, so a breakdown always belongs to its own episode. docs/environment.md
lists each v1/v2 difference; the environment and the GRPO reward both call ``score``.
"""

from dataclasses import dataclass
from typing import Any, Collection, Literal, Mapping

from core.clarify.families import CRITICAL_WEIGHT, FAMILIES, FIELDS, GATE_THRESHOLD, OTHER_WEIGHT, RUBRIC_WEIGHTS, SYNONYM_SETS
from core.records import RewardBreakdown, Scenario, trusted

RubricVersion = Literal["v1", "v2", "v3"]
VERSIONS = ("v1", "v2", "v3")
QUESTION_COST = 0.08
"""v3: score lost per question asked (break-even in docs/environment.md, "Rubric v3")."""
V3_WEIGHTS = {"FieldMatchRubric": 1.0, "QuestionCostRubric": -1.0}
"""v3: total = FieldMatch - QuestionCost (QuestionCost = QUESTION_COST * questions), floored at 0."""
UNKNOWN_MARKERS = frozenset({"", "unknown", "n/a", "na", "not specified", "unspecified", "not provided", "tbd", "?"})
"""v2: plan values that say "the user never told me" (after normalisation)."""
_SCALARS = (str, int, float)


@dataclass(frozen=True)
class Composition:
    """A gate plus a weighted sum; checked when built (lengths agree, weights sum to 1)."""

    gate: str
    threshold: float
    names: tuple[str, ...]
    weights: tuple[float, ...]

    def __post_init__(self):
        if len(self.names) != len(self.weights):
            raise ValueError(f"{len(self.names)} components but {len(self.weights)} weights")
        if abs(sum(self.weights) - 1.0) > 1e-9:
            raise ValueError(f"weights sum to {sum(self.weights)}, not 1.0")
        if any(w < 0 for w in self.weights):
            raise ValueError(f"negative weight in {self.weights}")


COMPOSITION = Composition(
    gate="FormatCheckRubric",
    threshold=GATE_THRESHOLD,
    names=tuple(f"{name}Rubric" for name in RUBRIC_WEIGHTS),
    weights=tuple(RUBRIC_WEIGHTS.values()),
)
WEIGHTS = dict(zip(COMPOSITION.names, COMPOSITION.weights))


def normalise_value(value: Any) -> str:
    """str(), strip, lower-case, "-" and "_" to spaces, collapse whitespace (punctuation kept)."""
    return " ".join(str(value).strip().lower().replace("-", " ").replace("_", " ").split())


_SYNONYM_OF = {normalise_value(v): i for i, group in enumerate(SYNONYM_SETS) for v in group}
_EDGE_PUNCT = ".!?,;:'\"`"


def _float_equal(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def values_equal_v1(plan_value: Any, true_value: Any) -> bool:
    """Published equality: normalised equal, one synonym set, or equal as floats."""
    a, b = normalise_value(plan_value), normalise_value(true_value)
    if a == b:
        return True
    group = _SYNONYM_OF.get(a)
    return (group is not None and group == _SYNONYM_OF.get(b)) or _float_equal(a, b)


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def contains_phrase(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` as a whole phrase: no letter or digit glued to an end of it that is one.

    A scan, not a compiled pattern: the phrase may be an uploaded log's value of any length, and a cache of
    patterns compiled from such values grew with every episode a visitor opened."""
    head, tail = phrase[:1].isalnum(), phrase[-1:].isalnum()
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        if not (head and start and text[start - 1] in _WORD_CHARS) and \
                not (tail and end < len(text) and text[end] in _WORD_CHARS):
            return True
        start = text.find(phrase, start + 1)
    return False


def values_equal_v2(field: str, plan_value: Any, true_value: Any) -> bool:
    """v1 equality on a scalar, or the true value stated as a whole phrase inside the plan value
    (e.g. the simulator's own "At a restaurant.") with no other value of the field's vocabulary."""
    if plan_value is None or isinstance(plan_value, bool) or not isinstance(plan_value, _SCALARS):
        return False
    a = normalise_value(plan_value).strip(_EDGE_PUNCT).strip()
    if values_equal_v1(a, true_value):
        return True
    b = normalise_value(true_value)
    if not b or not contains_phrase(a, b):
        return False
    others = (normalise_value(v) for v in FIELDS[field].values if normalise_value(v) != b)
    return not any(o and contains_phrase(a, o) for o in others)


def _is_filled(value: Any, version: RubricVersion) -> bool:
    if value is None or (isinstance(value, str) and not value.strip()):
        return False
    return version == "v1" or (isinstance(value, _SCALARS) and not isinstance(value, bool))


def format_check(scenario: Scenario, plan: Mapping | None, version: RubricVersion = "v1") -> float:
    """1 if the plan is an object holding every demanded key with a filled value, else 0.

    v1 demands the family's required keys; v2 only those the user can know (present in the
    hidden profile) and counts only scalar values as filled.
    """
    if not isinstance(plan, Mapping):
        return 0.0
    keys = scenario.required_keys
    if version != "v1":
        keys = [k for k in keys if k in scenario.hidden_profile]
    return 1.0 if all(k in plan and _is_filled(plan[k], version) for k in keys) else 0.0


def field_match(scenario: Scenario, plan: Mapping | None, version: RubricVersion = "v1") -> float:
    """Weighted recall over the hidden profile (critical fields weigh 2, others 1)."""
    total = got = 0.0
    critical = scenario.critical_fields
    for field, true_value in scenario.hidden_profile.items():
        weight = CRITICAL_WEIGHT if field in critical else OTHER_WEIGHT
        total += weight
        if plan is not None and field in plan:
            same = values_equal_v1(plan[field], true_value) if version == "v1" else values_equal_v2(field, plan[field], true_value)
            if same:
                got += weight
    return got / total if total else 1.0


def info_gain(scenario: Scenario, revealed: Collection[str]) -> float:
    """Fraction of the scenario's critical fields revealed by questions (1 if it has none)."""
    critical = scenario.critical_fields
    if not critical:
        return 1.0
    return sum(1 for f in critical if f in revealed) / len(critical)


def question_efficiency(scenario: Scenario, questions_asked: int) -> float:
    """max(0, 1 - questions / budget): every question counts, useful or not."""
    return max(0.0, 1.0 - questions_asked / scenario.max_questions)


def hallucination_check(scenario: Scenario, plan: Mapping | None, revealed: Collection[str],
                        version: RubricVersion = "v1") -> float:
    """Fraction of the plan's judged keys (``judged_keys``) that were revealed by questions (1 if none are judged)."""
    judged = judged_keys(scenario, plan, version)
    return sum(key in revealed for key in judged) / len(judged) if judged else 1.0


def judged_keys(scenario: Scenario, plan: Mapping | None, version: RubricVersion = "v1") -> list[str]:
    """The plan keys HallucinationCheck judges, in plan order; the replay's marks read the same list.

    v1 judges plan keys that are fields of the family. v2 (and v3, which has no such component but
    marks the same way) also judges keys outside the family (never revealed, so they cost), and skips
    family fields absent from the hidden profile whose value says "unknown" (the honest answer for a
    key the user cannot know). A family the environment lacks (a rebuilt trace's) has its profile's keys as fields.
    """
    if not plan:
        return []
    family = FAMILIES.get(scenario.family)
    family_fields = family.fields if family else tuple(scenario.hidden_profile)
    judged = []
    for key, value in plan.items():
        if key in family_fields:
            if version != "v1" and key not in scenario.hidden_profile and _says_unknown(value):
                continue
        elif version == "v1":
            continue
        judged.append(key)
    return judged


def _says_unknown(value: Any) -> bool:
    return value is None or (isinstance(value, _SCALARS) and normalise_value(value).strip(_EDGE_PUNCT) in UNKNOWN_MARKERS)


def field_weight(scenario: Scenario, field: str) -> float:
    """The share of FieldMatch that ``field`` carries (critical 2, others 1, over the hidden profile)."""
    if field not in scenario.hidden_profile:
        return 0.0
    total = sum(CRITICAL_WEIGHT if f in scenario.critical_fields else OTHER_WEIGHT for f in scenario.hidden_profile)
    return (CRITICAL_WEIGHT if field in scenario.critical_fields else OTHER_WEIGHT) / total


def ask_gain(weight: float, probs: Collection[float]) -> float:
    """v3: expected score gained by asking a field before proposing its MAP value, in closed form.

    Asked, the field is matched for sure; not asked, the MAP value matches with probability max p.
    So the gain is ``weight * (1 - max p)``, and asking pays iff it exceeds ``QUESTION_COST``.
    """
    return weight * (1.0 - max(probs))


def score_v3(scenario: Scenario, plan: Mapping | None, questions_asked: int) -> RewardBreakdown:
    """v3: the v2 gate and FieldMatch, less QUESTION_COST per question (floored at 0)."""
    gate = format_check(scenario, plan, "v3")
    match, cost = field_match(scenario, plan, "v3"), QUESTION_COST * questions_asked
    passed = gate >= COMPOSITION.threshold
    total = max(0.0, match - cost) if passed else 0.0
    components = {COMPOSITION.gate: gate, "FieldMatchRubric": match, "QuestionCostRubric": cost}
    return trusted(RewardBreakdown, rubric="v3", total=total, gate_passed=passed, components=components,
                   weights=dict(V3_WEIGHTS))


def score(scenario: Scenario, plan: Mapping | None, revealed: Collection[str], questions_asked: int,
          version: RubricVersion = "v1") -> RewardBreakdown:
    """Score one ended episode; pure. ``plan`` is None when no plan parsed to an object."""
    if version not in VERSIONS:
        raise ValueError(f"unknown rubric version {version!r}; expected v1, v2 or v3")
    if plan is not None and not isinstance(plan, Mapping):
        plan = None
    if version == "v3":
        return score_v3(scenario, plan, questions_asked)
    gate = format_check(scenario, plan, version)
    parts = (
        field_match(scenario, plan, version),
        info_gain(scenario, revealed),
        question_efficiency(scenario, questions_asked),
        hallucination_check(scenario, plan, revealed, version),
    )
    passed = gate >= COMPOSITION.threshold
    total = 0.0
    if passed:
        for w, v in zip(COMPOSITION.weights, parts):
            total += w * v
    components = {COMPOSITION.gate: gate, **dict(zip(COMPOSITION.names, parts))}
    return trusted(RewardBreakdown, rubric=version, total=total, gate_passed=passed,
                   components=components, weights=dict(WEIGHTS))
