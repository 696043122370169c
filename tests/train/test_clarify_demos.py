"""The demonstrator: its questions reveal their fields, its plans copy answers."""

import random

import pytest

from core.clarify.families import FAMILIES
from core.clarify.scenarios import generate_scenario
from core.clarify.user_sim import respond
from train.clarify_demos import EXTRA_FIELDS, QUESTIONS, UNKNOWN, DemoStyle, check_family_tables, expert_fields, play_demo

SCENARIOS = [generate_scenario(seed, d) for seed in range(300) for d in ("easy", "medium", "hard")]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_every_question_reveals_its_field_in_every_profile(version):
    for s in SCENARIOS:
        for field in s.hidden_profile:
            assert respond(s.hidden_profile, s.family, QUESTIONS[field], version)[1] == field, (field, s.id)


def test_tables_cover_every_family():
    check_family_tables()
    assert {f for f, _ in EXTRA_FIELDS} == set(FAMILIES)


def test_full_strength_demo_asks_the_expert_list_and_copies_answers():
    s = generate_scenario(11, "hard")
    episode = play_demo(s, "v2", DemoStyle(), random.Random(0))
    asked = [t.call.arguments["question"] for t in episode.turns[:-1]]
    assert asked == [QUESTIONS[f] for f in expert_fields(s)][: s.max_questions]
    assert episode.termination == "plan"
    for key, value in episode.plan.items():
        assert value == (str(s.hidden_profile[key]) if key in episode.fields_revealed else UNKNOWN)


def test_skipping_every_question_still_proposes_a_complete_plan():
    s = generate_scenario(12, "medium")
    episode = play_demo(s, "v1", DemoStyle(p_required=0.0, p_extra=0.0), random.Random(0))
    assert len(episode.turns) == 1 and episode.questions_asked == 0
    assert episode.plan == {k: UNKNOWN for k in s.required_keys}
    assert episode.breakdown.gate_passed


def test_detours_waste_questions_the_budget_can_spare_and_the_plan_keeps_the_experts():
    from train.clarify_demos import FIELD_OF, detour_turns

    detoured = 0
    for s in SCENARIOS[:60]:
        plain = play_demo(s, "v2", DemoStyle(), random.Random(0))
        episode = play_demo(s, "v2", DemoStyle(p_detour=1.0), random.Random(0))
        asked = [t.call.arguments["question"] for t in episode.turns[:-1]]
        wasted = detour_turns(episode)
        kept = [q for k, q in enumerate(asked) if k not in wasted]
        assert kept == [QUESTIONS[f] for f in expert_fields(s)][: s.max_questions]  # the expert's list, in order
        assert {k: v for k, v in episode.plan.items() if k in plain.plan} == plain.plan  # detours add
        assert set(episode.plan) - set(plain.plan) <= {FIELD_OF[asked[k]] for k in wasted}  # what they revealed
        assert episode.termination == "plan"
        assert len(asked) <= min(s.max_questions, s.max_steps - 1)
        assert len(wasted) == len(asked) - len(expert_fields(s)[: s.max_questions])
        for k in wasted:  # a field the plan does not need, or a repeat
            field = FIELD_OF[asked[k]]
            assert field not in expert_fields(s) or field in [FIELD_OF[q] for q in asked[:k]]
        detoured += len(wasted)
        assert not detour_turns(plain)
    assert detoured > 30


def test_without_detours_the_demos_are_those_of_before():
    s = generate_scenario(21, "medium")
    a = play_demo(s, "v2", DemoStyle(p_required=0.8, p_extra=0.5), random.Random(3))
    b = play_demo(s, "v2", DemoStyle(p_required=0.8, p_extra=0.5, p_detour=0.0), random.Random(3))
    assert a.model_dump() == b.model_dump()


def test_the_score_command_prints_the_mean_its_episodes_make(capsys):
    from core.clarify.scenarios import load_scenarios
    from train.clarify_demos import demo_scores, main

    assert main(["--limit", "6", "--samples", "2", "--p_required", "0.8", "--p_extra", "0.5"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    episodes = demo_scores(load_scenarios("clarifyrl-heldout", 6), "v1", DemoStyle(0.8, 0.5), 2, 0)
    assert len(episodes) == 12 and f"12 episodes: {sum(e.score for e in episodes) / 12:.3f} [" in last
