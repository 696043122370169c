"""Scenarios: the deterministic generator, the published file format and named scenario sets.

``generate_scenario(seed, difficulty)`` draws from ``random.Random(seed)`` in exactly the order the
published environment did, so it regenerates the 300 frozen held-out scenarios (seeds 10000-10099)
key for key. ``load_scenarios(spec)`` turns a scenario-set spec (see ``SPEC_HELP``) into records.
"""

import json
import random
from pathlib import Path
from typing import Any, Iterable, Sequence

from pydantic import ValidationError

from core.clarify.cued import CUE_MIX, INFORMATIVE_REQUESTS, KINDS, draw_cue
from core.clarify.families import DIFFICULTIES, FAMILIES, FIELDS, MAX_QUESTIONS, MAX_STEPS, MIN_CRITICAL, PROFILE_SIZE, TITLES
from core.records import Cues, Scenario, trusted

TRAIN_SEEDS = range(0, 10_000)
"""Seeds the training code draws scenarios from."""
PUBLISHED_HELDOUT_SEEDS = range(10_000, 10_100)
"""Seeds of the published held-out list (each played as easy, medium, hard)."""
CLARIFYLAB_HELDOUT_SEEDS = range(50_000, 60_000)
"""Seed range our own frozen held-out set was drawn from (disjoint from both ranges above)."""
CLARIFYLAB_HELDOUT_PER_CELL = 10
"""Scenarios per (family, difficulty) cell of our held-out set: 5 x 3 x 10 = 150."""
CLARIFYLAB_HELDOUT_FILE = Path(__file__).resolve().parent / "data" / "clarifylab_heldout.json"
CUED_TRAIN_SEEDS = TRAIN_SEEDS
"""Seeds the decision data's cued rows draw from (disjoint from the held-out range below)."""
CUED_HELDOUT_SEEDS = range(70_000, 70_100)
"""clarifylab-cued-v3: each seed as easy, medium, hard (300 scenarios, seed-major)."""

SPEC_HELP = (
    "clarifyrl-heldout (the published 300: seeds 10000-10099 x easy,medium,hard; the first 50 are "
    "the published table's slice) | clarifylab-heldout (our frozen 150, 10 per family x difficulty) | "
    "clarifylab-cued-v3 (300 requests with cues of known posterior, seeds 70000-70099 x easy,medium,hard; "
    "score with --rubric v3) | "
    "generated:LO-HI[:DIFFICULTIES][:FAMILIES] (inclusive seed range, each seed as each listed "
    "difficulty; comma-separated lists, default all; a family filter keeps only scenarios whose "
    "drawn family is listed) | PATH to a JSON list in the published held-out format"
)

PUBLISHED_KEYS = (
    "family", "task_id", "task_title", "request", "hidden_profile", "critical_fields",
    "required_keys", "field_keys", "max_steps", "max_questions", "seed",
)


def generate_scenario(seed: int, difficulty: str) -> Scenario:
    """Draw one scenario; the draw order is the published one (docs/environment.md, "Scenario generation")."""
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"unknown difficulty {difficulty!r}; expected one of {', '.join(DIFFICULTIES)}")
    rng = random.Random(seed)
    family = FAMILIES[rng.choice(list(FAMILIES))]
    lo, hi = PROFILE_SIZE[difficulty]
    n = min(rng.randint(lo, hi), len(family.fields))
    if difficulty == "easy":
        chosen = rng.sample(list(family.critical), k=min(n, len(family.critical)))
    else:
        chosen = list(family.required)
        if n > len(chosen):
            rest = [f for f in family.fields if f not in chosen]
            chosen += rng.sample(rest, k=min(n - len(chosen), len(rest)))
    profile: dict[str, Any] = {f: rng.choice(FIELDS[f].values) for f in chosen}
    need = min(MIN_CRITICAL[difficulty], len(family.critical), n)
    present = [f for f in family.critical if f in profile]
    if len(present) < need:
        missing = [f for f in family.critical if f not in profile]
        for f in rng.sample(missing, k=min(need - len(present), len(missing))):
            if f not in profile:
                profile[f] = rng.choice(FIELDS[f].values)
    request = rng.choice(family.requests)
    # every field is built here from the tables, so validation would only cost time (training
    # draws a scenario per rollout group); tests compare these records with validated ones
    return trusted(
        Scenario,
        seed=seed,
        source_id=None,
        family=family.name,
        difficulty=difficulty,
        title=TITLES[difficulty],
        request=request,
        hidden_profile=profile,
        critical_fields=sorted(f for f in family.critical if f in profile),
        required_keys=list(family.required),
        field_keys=sorted(profile),
        max_steps=MAX_STEPS[difficulty],
        max_questions=MAX_QUESTIONS,
        cues=None,
    )


def scenario_to_published(s: Scenario) -> dict:
    """The published held-out format (``task_id``/``task_title``), keys in published order."""
    return {
        "family": s.family, "task_id": s.difficulty, "task_title": s.title, "request": s.request,
        "hidden_profile": dict(s.hidden_profile), "critical_fields": list(s.critical_fields),
        "required_keys": list(s.required_keys), "field_keys": list(s.field_keys),
        "max_steps": s.max_steps, "max_questions": s.max_questions, "seed": s.seed,
    }


def scenario_from_published(obj: Any) -> Scenario:
    """Read one published-format scenario; raises ValueError naming what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError(f"a scenario must be a JSON object, got {type(obj).__name__}")
    unknown = [k for k in obj if k not in PUBLISHED_KEYS]
    if unknown:
        raise ValueError(f"unknown scenario key(s) {unknown}; expected keys {list(PUBLISHED_KEYS)}")
    fields = {("difficulty" if k == "task_id" else "title" if k == "task_title" else k): v for k, v in obj.items()}
    family = FAMILIES.get(fields.get("family"))
    if family is None:
        raise ValueError(f"unknown family {fields.get('family')!r}; expected one of {', '.join(FAMILIES)}")
    fields.setdefault("required_keys", list(family.required))
    profile = fields.get("hidden_profile")
    if isinstance(profile, dict):
        fields.setdefault("field_keys", sorted(profile))
        fields.setdefault("critical_fields", sorted(f for f in family.critical if f in profile))
        strangers = [f for f in profile if f not in family.fields]
        if strangers:
            raise ValueError(f"hidden_profile field(s) {strangers} are not fields of family {family.name!r}")
    if fields.get("difficulty") in TITLES:
        fields.setdefault("title", TITLES[fields["difficulty"]])
        fields.setdefault("max_steps", MAX_STEPS[fields["difficulty"]])
    try:
        return Scenario.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"scenario field {loc}: {first['msg']}") from None


def read_published(path: str | Path) -> list[Scenario]:
    """Read a JSON list of published-format scenarios; errors name the file and entry."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"scenario file {path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, list):
        raise ValueError(f"{path.name}: expected a JSON list of scenarios, got {type(data).__name__}")
    out = []
    for i, obj in enumerate(data):
        try:
            out.append(scenario_from_published(obj))
        except ValueError as exc:
            raise ValueError(f"{path.name} entry {i}: {exc}") from None
    return out




def generate_range(seeds: Iterable[int], difficulties: Sequence[str] = DIFFICULTIES,
                   families: Sequence[str] | None = None) -> list[Scenario]:
    """Each seed as each difficulty (in that order), optionally keeping only some families."""
    out = [generate_scenario(seed, d) for seed in seeds for d in difficulties]
    return out if families is None else [s for s in out if s.family in families]


def build_clarifylab_heldout() -> list[Scenario]:
    """Our balanced held-out set: the first seeds in CLARIFYLAB_HELDOUT_SEEDS filling each cell."""
    cells = {(f, d): 0 for f in FAMILIES for d in DIFFICULTIES}
    out = []
    for seed in CLARIFYLAB_HELDOUT_SEEDS:
        for d in DIFFICULTIES:
            s = generate_scenario(seed, d)
            if cells[(s.family, d)] < CLARIFYLAB_HELDOUT_PER_CELL:
                cells[(s.family, d)] += 1
                out.append(s)
        if all(c == CLARIFYLAB_HELDOUT_PER_CELL for c in cells.values()):
            return out
    raise RuntimeError("the held-out seed range is too small to fill every cell")


# ---- scenario set v3: cued requests (the cues themselves: core.clarify.cued) --------------------


def generate_cued(seed: int, difficulty: str) -> Scenario:
    """One v3 scenario: the seed's family and request, one cue per required field, profile = required fields."""
    base = generate_scenario(seed, difficulty)
    rng = random.Random(f"cued-v3/{seed}/{difficulty}")
    family = FAMILIES[base.family]
    cues, profile, sentences = {}, {}, []
    for field in family.required:
        kind = rng.choices(KINDS, weights=CUE_MIX[difficulty])[0]
        cues[field], profile[field], text = draw_cue(field, kind, rng)
        if text:
            sentences.append(text)
    rng.shuffle(sentences)
    opener = base.request
    if opener in INFORMATIVE_REQUESTS:
        opener = rng.choice([r for r in family.requests if r not in INFORMATIVE_REQUESTS])
    return Scenario(
        seed=seed, family=base.family, difficulty=base.difficulty, title=base.title,
        request=" ".join([opener, *sentences]), hidden_profile=profile,
        critical_fields=sorted(f for f in family.critical if f in profile), required_keys=list(family.required),
        field_keys=sorted(profile), max_steps=base.max_steps, max_questions=base.max_questions, cues=Cues(fields=cues))


def cued_range(seeds: Iterable[int], difficulties: Sequence[str] = DIFFICULTIES) -> list[Scenario]:
    """Each seed as each difficulty, seed-major (the held-out set's order)."""
    return [generate_cued(seed, d) for seed in seeds for d in difficulties]


def load_cued() -> list[Scenario]:
    """The held-out ``clarifylab-cued-v3`` set (300 scenarios)."""
    return cued_range(CUED_HELDOUT_SEEDS)


def _split_list(text: str, allowed: Sequence[str], what: str) -> list[str]:
    if text in ("", "all"):
        return list(allowed)
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        raise ValueError(f"unknown {what} {bad or text!r}; expected a comma-separated list of {', '.join(allowed)}")
    return items


def _parse_generated(spec: str) -> list[Scenario]:
    parts = spec.split(":")[1:]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"bad spec {spec!r}: expected generated:LO-HI[:DIFFICULTIES][:FAMILIES]")
    try:
        lo, hi = (int(x) for x in parts[0].split("-"))
    except ValueError:
        raise ValueError(f"bad seed range {parts[0]!r} in {spec!r}: expected LO-HI, e.g. 0-99") from None
    if hi < lo:
        raise ValueError(f"bad seed range {parts[0]!r}: HI is below LO")
    difficulties = _split_list(parts[1] if len(parts) > 1 else "", DIFFICULTIES, "difficulty")
    families = _split_list(parts[2], list(FAMILIES), "family") if len(parts) > 2 else None
    return generate_range(range(lo, hi + 1), difficulties, families)


def load_scenarios(spec: str, limit: int | None = None) -> list[Scenario]:
    """Scenarios named by ``spec`` (see SPEC_HELP), the first ``limit`` of them when given."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if spec == "clarifyrl-heldout":
        out = generate_range(PUBLISHED_HELDOUT_SEEDS)
    elif spec == "clarifylab-heldout":
        out = read_published(CLARIFYLAB_HELDOUT_FILE)
    elif spec == "clarifylab-cued-v3":
        out = load_cued()
    elif spec.startswith("generated:"):
        out = _parse_generated(spec)
    elif Path(spec).suffix == ".json" or Path(spec).exists():
        out = read_published(spec)
    else:
        raise ValueError(f"unknown scenario spec {spec!r}; expected {SPEC_HELP}")
    return out if limit is None else out[:limit]
