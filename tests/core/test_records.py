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
