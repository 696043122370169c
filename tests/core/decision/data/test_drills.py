"""Binding drills: the state names the answer's text verbatim; options follow the sources' rules."""

import random

import pytest

from core.decision.data import NOTA
from core.decision.data.drills import KNOWN_VALUES, drill_row, drill_rows, made_up_value


def test_drills_are_deterministic_in_the_seed():
    assert drill_rows(3, 20) == drill_rows(3, 20)
    assert drill_rows(3, 20) != drill_rows(4, 20)


def test_the_answer_is_named_in_the_state_and_no_distractor_is():
    for row in drill_rows(0, 300):
        answer = row.options[row.label]
        others = [o for i, o in enumerate(row.options) if i != row.label and o != NOTA]
        if answer == NOTA:
            assert "nota_answer" in row.tags
        else:
            assert answer in row.state
        for other in others:  # a distractor never appears (not even inside a longer value)
            assert other not in row.state


def test_drill_options_follow_the_choice_rules():
    rows = drill_rows(1, 400)
    assert {len(r.options) for r in rows} <= set(range(2, 7))
    assert all(r.kind == "choice" and r.source == "drill" for r in rows)
    assert all(NOTA not in r.options[:-1] for r in rows)  # NOTA only ever last
    injected = sum(NOTA in r.options for r in rows) / len(rows)
    assert 0.4 < injected < 0.6  # 0.15 answer + 0.35 distractor


def test_values_mix_known_and_made_up():
    values = {o for r in drill_rows(2, 300) for o in r.options if o != NOTA}
    assert values & set(KNOWN_VALUES) and values - set(KNOWN_VALUES)


def test_made_up_values_are_upper_case_words():
    rng = random.Random(0)
    for _ in range(50):
        v = made_up_value(rng)
        assert v.replace("_", "").isalpha() and v.isupper() and v not in KNOWN_VALUES


def test_negative_count_is_refused():
    with pytest.raises(ValueError, match="drill count"):
        drill_rows(0, -1)


def test_single_drill_row_is_valid():
    row = drill_row(random.Random(5), 7)
    assert row.context_id == "drill-7" and row.posterior[row.label] == 1.0
