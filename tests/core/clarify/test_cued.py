"""Scenario set v3: cues render into the request and the record keeps their exact posterior."""

import random
from collections import Counter

import pytest

from core.clarify.cued import INFORMATIVE_REQUESTS, KINDS, WEAK_P, draw_cue, field_question, map_value, noun, posterior
from core.clarify.families import FAMILIES, FIELDS
from core.clarify.scenarios import (
    CUED_HELDOUT_SEEDS, CUED_TRAIN_SEEDS, generate_cued, generate_scenario, load_cued, load_scenarios,
)
from core.records import Scenario

HELDOUT = load_cued()


def test_the_heldout_set_is_seed_major_and_disjoint_from_training_seeds():
    assert len(HELDOUT) == 300 and HELDOUT[0].id == "seed70000_event_planning_easy"
    assert not set(CUED_HELDOUT_SEEDS) & set(CUED_TRAIN_SEEDS)
    assert load_scenarios("clarifylab-cued-v3", 100) == HELDOUT[:100]
    assert generate_cued(70_000, "easy") == HELDOUT[0]  # deterministic in (seed, difficulty)


def test_every_record_holds_a_posterior_per_required_field_that_contains_its_value():
    for s in HELDOUT:
        assert list(s.hidden_profile) == s.required_keys == list(FAMILIES[s.family].required)
        assert set(s.cues.fields) == set(s.required_keys)
        for field, cue in s.cues.fields.items():
            assert len(cue.posterior) == len(FIELDS[field].values) and sum(cue.posterior) == pytest.approx(1.0)
            assert cue.posterior[list(FIELDS[field].values).index(s.hidden_profile[field])] > 0


@pytest.mark.parametrize("kind, hinted, max_p", [
    ("none", 0, None),  # no sentence: the uniform prior
    ("clear", 1, 1.0),  # one value named for sure
    ("two", 2, 0.5),  # two competing values, 0.5/0.5
    ("weak", 1, WEAK_P),  # a hedged value
])
def test_each_cue_kind_has_its_posterior_and_sentence(kind, hinted, max_p):
    cue, value, text = draw_cue("venue", kind, random.Random(1))
    k = len(FIELDS["venue"].values)
    assert len(cue.hinted) == hinted and (text == "") == (kind == "none")
    assert max(cue.posterior) == pytest.approx(max_p if max_p is not None else 1 / k)
    if kind != "none":
        assert noun("venue") in text.lower() and all(str(v) in text for v in cue.hinted)


def test_the_hidden_values_follow_the_stated_posteriors():
    rng = random.Random(0)
    weak = [draw_cue("severity", "weak", rng) for _ in range(4000)]
    assert sum(v == c.hinted[0] for c, v, _ in weak) / 4000 == pytest.approx(WEAK_P, abs=0.03)
    two = [draw_cue("severity", "two", rng) for _ in range(4000)]
    assert sum(v == c.hinted[0] for c, v, _ in two) / 4000 == pytest.approx(0.5, abs=0.03)
    assert all(v in c.hinted for c, v, _ in two)


def test_the_mix_of_cue_kinds_follows_the_difficulty():
    kinds = {d: Counter(c.kind for s in HELDOUT if s.difficulty == d for c in s.cues.fields.values())
             for d in ("easy", "hard")}
    assert kinds["easy"]["clear"] > kinds["hard"]["clear"] and kinds["hard"]["none"] > kinds["easy"]["none"]
    assert set(kinds["easy"]) | set(kinds["hard"]) == set(KINDS)


def test_requests_open_with_a_template_that_hints_no_value():
    for s in HELDOUT:
        opener = next(r for r in FAMILIES[s.family].requests if s.request.startswith(r))
        assert opener not in INFORMATIVE_REQUESTS


def test_the_record_round_trips_and_older_scenarios_write_no_cues():
    s = HELDOUT[5]
    assert Scenario.model_validate_json(s.model_dump_json()) == s
    old = generate_scenario(0, "easy")
    assert old.cues is None and "cues" not in old.model_dump_json()
    assert posterior(old, "stack") == [0.2] * 5  # no cues: the uniform prior


def test_map_value_breaks_ties_towards_the_earlier_value():
    assert map_value("severity", [0.2, 0.4, 0.4]) == "moderate"
    assert map_value("severity", [1 / 3] * 3) == "mild" == FIELDS["severity"].values[0]
    with pytest.raises(ValueError, match="severity: 2 probabilities for 3 values"):
        map_value("severity", [0.5, 0.5])


def test_field_question_offers_the_vocabulary_as_text():
    text, options = field_question("guest_count")
    assert text == "What should the guest count be?" and options == ["5", "10", "20", "50", "100"]
