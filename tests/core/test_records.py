"""Records: trusted construction equals validation; ids read as published."""

import pytest

from core.records import RewardBreakdown, ToolCall, trusted


def test_trusted_equals_validated():
    values = dict(rubric="v1", total=0.5, gate_passed=True, components={"A": 1.0}, weights={"A": 1.0})
    fast = trusted(RewardBreakdown, **values)
    assert fast == RewardBreakdown(**values)
    assert fast.model_dump() == values and fast.model_fields_set == set(values)
    assert RewardBreakdown.model_validate_json(fast.model_dump_json()) == fast


def test_trusted_demands_every_field():
    with pytest.raises(TypeError, match=r"missing \['arguments'\]"):
        trusted(ToolCall, name="get_task_info")
    with pytest.raises(TypeError, match=r"extra \['colour'\]"):
        trusted(ToolCall, name="x", colour="red")


@pytest.mark.parametrize("value, whole, expected", [
    (3, True, 3), ("10", True, 10), (10.0, True, 10), ("2.5", False, 2.5), (-4, True, -4),
    (2.5, True, None), (float("inf"), True, None), (float("nan"), False, None), (None, True, None),
    ("ten", True, None), (True, True, None), ([1], True, None), ("1e999", False, None),
])
def test_form_number_takes_finite_numbers_only(value, whole, expected):
    from core.records import form_number

    assert form_number(value, whole) == expected and type(form_number(value, whole)) is type(expected)
