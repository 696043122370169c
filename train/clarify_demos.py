"""Scripted demonstrations for the clarify warmup: who to ask, what to ask, and a plan from answers.

The demonstrator asks one fixed question per field (each one checked to reveal its field under
both simulator versions), in a per-(family, difficulty) order found by exhaustive search over
field subsets on training seeds, and proposes a plan that copies every revealed value and writes
"unknown" for a required field the user could not state. It is deliberately imperfect: each
question is skipped with a probability (``DemoStyle``), so a model that imitates it asks too
little, and reinforcement learning has something to fix. With ``p_detour`` it also wastes a
question now and then (untrained), so a model sees how to go on after a question that brought
nothing. Run by train/clarify_sft.py; ``python -m train.clarify_demos`` scores it (results/clarify_demonstrator.txt).
"""

import json
import random
from dataclasses import dataclass

from core.clarify.environment import ClarifyEnv
from core.clarify.families import FAMILIES
from core.records import Episode, Scenario, ToolCall
from core.clarify.toolcalls import render_tool_call

QUESTIONS = {
    "stack": "Which language and framework should I use?",
    "scale": "How many users do you expect?",
    "auth": "What authentication do you need?",
    "datastore": "Which database should I use?",
    "deployment_target": "Where should I deploy it?",
    "language_version": "Which runtime version?",
    "test_coverage": "How much test coverage?",
    "primary_symptom": "What is your main symptom?",
    "duration": "How long have you had it?",
    "severity": "How severe is it?",
    "age_band": "How old are you?",
    "prior_conditions": "Any medical history?",
    "medications": "Are you taking any medication?",
    "order_id": "What is your order number?",
    "item_issue": "What happened to the item?",
    "refund_or_replace": "Do you want a refund or a replacement?",
    "urgency": "How urgent is this?",
    "channel_preferred": "Which contact channel do you prefer?",
    "participants": "Who should attend?",
    "date": "What date works?",
    "time": "What time of day?",
    "duration_minutes": "How many minutes should it last?",
    "platform": "Which platform should we use?",
    "event_type": "What kind of event is it?",
    "guest_count": "How many guests?",
    "venue": "Which venue?",
    "budget_band": "What is your budget?",
    "theme": "What theme do you want?",
    "dietary_constraints": "Any dietary needs?",
}
"""One question per field; tests check each reveals its field in every profile (v1 and v2)."""

EXTRA_FIELDS = {
    ("coding_requirements", "easy"): ("deployment_target",),
    ("coding_requirements", "medium"): (),
    ("coding_requirements", "hard"): ("deployment_target", "test_coverage"),
    ("medical_intake", "easy"): ("age_band",),
    ("medical_intake", "medium"): ("age_band", "prior_conditions", "medications"),
    ("medical_intake", "hard"): ("age_band", "prior_conditions", "medications"),
    ("support_triage", "easy"): ("urgency",),
    ("support_triage", "medium"): ("urgency", "channel_preferred"),
    ("support_triage", "hard"): ("urgency", "channel_preferred"),
    ("meeting_scheduling", "easy"): ("duration_minutes",),
    ("meeting_scheduling", "medium"): ("duration_minutes", "platform"),
    ("meeting_scheduling", "hard"): ("duration_minutes", "platform"),
    ("event_planning", "easy"): (),
    ("event_planning", "medium"): (),
    ("event_planning", "hard"): ("theme", "dietary_constraints"),
}
"""Fields beyond the required ones worth a question, per (family, difficulty).

Found by scoring every subset of each family's fields on 100-150 training scenarios per cell:
the best subset was the same under v1 and v2 in every cell (its cells' v1 means 0.81-0.88 on training seeds
0-149: ``python -m train.clarify_demos --scenarios generated:0-149 --samples 1``)."""

UNKNOWN = "unknown"


@dataclass(frozen=True)
class DemoStyle:
    """How faithfully the demonstrator follows its own best plan."""

    p_required: float = 1.0
    """Probability of asking about each required field (else its plan value is "unknown")."""
    p_extra: float = 1.0
    """Probability of asking about each extra field worth a question."""
    p_detour: float = 0.0
    """Probability of a wasted question before each planned one, where the budget leaves room: a
    field the plan does not need, or a repeat. The turn after it is the recovery a model learns;
    the detour itself is not trained (``detour_turns``)."""


def expert_fields(scenario: Scenario) -> list[str]:
    """The fields the full-strength demonstrator asks about, in asking order."""
    return list(scenario.required_keys) + list(EXTRA_FIELDS[(scenario.family, scenario.difficulty)])


def demo_calls(scenario: Scenario, style: DemoStyle, rng: random.Random) -> list[str]:
    """The fields this demonstration will ask about (a random thinning of the expert's list)."""
    required = set(scenario.required_keys)
    return [f for f in expert_fields(scenario)
            if rng.random() < (style.p_required if f in required else style.p_extra)]


def plan_from(scenario: Scenario, revealed: dict) -> dict[str, str]:
    """Required fields first (their value, or "unknown"), then every other revealed field."""
    plan = {k: str(revealed[k]) if k in revealed else UNKNOWN for k in scenario.required_keys}
    plan.update({k: str(v) for k, v in revealed.items() if k not in plan})
    return plan


def play_demo(scenario: Scenario, rubric: str, style: DemoStyle, rng: random.Random) -> Episode:
    """One demonstration episode; every turn's raw text is the Qwen3-form call the model will copy."""
    env = ClarifyEnv(scenario, rubric)
    fields = demo_calls(scenario, style, rng)[: scenario.max_questions]
    room = min(scenario.max_questions, scenario.max_steps - 1) - len(fields)
    asked: list[str] = []
    for field in fields:
        wasted = detour_fields(scenario, asked)
        if style.p_detour and room > 0 and wasted and rng.random() < style.p_detour:
            asked.append(rng.choice(wasted))
            room -= 1
            _step(env, ToolCall(name="ask_question", arguments={"question": QUESTIONS[asked[-1]]}))
        asked.append(field)
        _step(env, ToolCall(name="ask_question", arguments={"question": QUESTIONS[field]}))
    plan = json.dumps(plan_from(scenario, env.revealed), ensure_ascii=False)
    _step(env, ToolCall(name="propose_plan", arguments={"plan": plan}))
    return env.episode("demo")


def detour_fields(scenario: Scenario, asked: list[str]) -> list[str]:
    """Questions that waste a turn here: fields the expert would not ask about, and repeats."""
    expert = set(expert_fields(scenario))
    return [f for f in FAMILIES[scenario.family].fields if f not in expert] + sorted(set(asked))


FIELD_OF = {question: field for field, question in QUESTIONS.items()}


def detour_turns(episode: Episode) -> set[int]:
    """Indices of the episode's wasted questions (``detour_fields`` at the time they were asked; a
    question that is none of the demonstrator's wastes a turn too)."""
    asked, out = [], set()
    for k, turn in enumerate(episode.turns):
        if turn.call is None or turn.call.name != "ask_question":
            continue
        field = FIELD_OF.get((turn.call.arguments or {}).get("question", ""))
        if field is None or field in detour_fields(episode.scenario, asked):
            out.add(k)
        asked.append(field)
    return out


def _step(env: ClarifyEnv, call: ToolCall) -> None:
    if not env.done:
        env.step(call, raw=render_tool_call(call))


def check_family_tables() -> None:
    """Every field of every family has a question; every extra field belongs to its family."""
    for name, fam in FAMILIES.items():
        missing = [f for f in fam.fields if f not in QUESTIONS]
        if missing:
            raise ValueError(f"no demo question for {name} field(s) {missing}")
    for (name, _), extras in EXTRA_FIELDS.items():
        strangers = [f for f in extras if f not in FAMILIES[name].fields]
        if strangers:
            raise ValueError(f"extra field(s) {strangers} are not fields of {name}")


def demo_scores(scenarios: list[Scenario], rubric: str, style: DemoStyle, samples: int, seed: int) -> list[Episode]:
    """``samples`` demonstrations of each scenario, one random stream for all (the score of the demonstrator)."""
    rng = random.Random(seed)
    return [play_demo(s, rubric, style, rng) for s in scenarios for _ in range(samples)]


def main(argv: list[str] | None = None) -> int:
    """Score the demonstrator: its mean with the run summary's 95% interval (``summarize``), and each cell's mean."""
    import argparse
    from collections import defaultdict

    from core.clarify.scenarios import SPEC_HELP, load_scenarios
    from core.runs.summary import summarize

    ap = argparse.ArgumentParser(prog="python -m train.clarify_demos", description=main.__doc__)
    ap.add_argument("--scenarios", default="clarifyrl-heldout", help=SPEC_HELP)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--rubric", default="v1", choices=["v1", "v2"])
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--p_required", type=float, default=1.0)
    ap.add_argument("--p_extra", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    check_family_tables()
    scenarios = load_scenarios(args.scenarios, args.limit)
    episodes = demo_scores(scenarios, args.rubric, DemoStyle(args.p_required, args.p_extra), args.samples, args.seed)
    summary = summarize(episodes, policy="demo", scenarios=args.scenarios, samples=args.samples, limit=args.limit)
    cells = defaultdict(list)
    for e in episodes:
        cells[(e.scenario.family, e.scenario.difficulty)].append(e.score)
    for (family, difficulty), cell in sorted(cells.items()):
        print(f"{family:20s} {difficulty:7s} {sum(cell) / len(cell):.3f} ({len(cell)} episodes)")
    means = [sum(c) / len(c) for c in cells.values()]
    print(f"cells' means {min(means):.3f}-{max(means):.3f}")
    print(f"demonstrator (p_required {args.p_required}, p_extra {args.p_extra}) on {args.scenarios}"
          f"{'' if args.limit is None else f' (first {args.limit})'}, rubric {args.rubric}, {len(episodes)} episodes: "
          f"{summary.avg_score:.3f} [{summary.avg_score_ci[0]:.3f}, {summary.avg_score_ci[1]:.3f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
