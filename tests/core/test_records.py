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


@pytest.mark.parametrize("raw, kwargs, expected", [
    ("", {}, 5), ("  ", {}, 5), (" 7 ", {}, 7), ("0", {}, 0), ("12.0", {}, 12), ("2.5", {"whole": False}, 2.5),
    ("65535", {"most": 65535}, 65535),
])
def test_setting_reads_the_operators_number(raw, kwargs, expected):
    from core.records import setting

    assert setting("X", 5, environ={"X": raw}, **kwargs) == expected
    assert setting("X", 5, environ={}) == 5


@pytest.mark.parametrize("raw, kwargs, words", [
    ("abc", {}, "X must be a whole number >= 0, got 'abc'"),
    ("-1", {}, "X must be a whole number >= 0, got '-1'"),
    ("0", {"least": 1}, "X must be a whole number >= 1, got '0'"),
    ("2.5", {}, "X must be a whole number >= 0, got '2.5'"),
    ("inf", {"whole": False}, "X must be a number >= 0, got 'inf'"),
    ("99999", {"most": 65535}, "X must be a whole number from 0 to 65535, got '99999'"),
])
def test_a_bad_setting_is_named_with_what_it_takes(raw, kwargs, words):
    from core.records import SettingError, setting

    with pytest.raises(SettingError) as caught:
        setting("X", 5, environ={"X": raw}, **kwargs)
    assert str(caught.value) == words


@pytest.mark.parametrize("text, expected", [("0", 0), ("8000", 8000), ("65535", 65535)])
def test_port_takes_0_to_65535(text, expected):
    from core.records import port

    assert port(text) == expected


@pytest.mark.parametrize("text", ["65536", "-1", "80.5", "http", ""])
def test_port_refuses_the_rest(text):
    from core.records import port

    with pytest.raises(ValueError):
        port(text)


def test_at_least_reads_counts_and_durations_and_names_what_it_takes():
    import argparse

    from core.records import at_least

    assert at_least(1)("3") == 3 and at_least(0.1, whole=False)("0.5") == 0.5
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=at_least(1))
    with pytest.raises(SystemExit):
        parser.parse_args(["--repeats", "0"])
    for bad in ("0", "-1", "2.5", "x", "nan"):
        with pytest.raises(ValueError):
            at_least(1)(bad)


def test_output_file_makes_its_folder_or_refuses_before_the_run(tmp_path):
    import argparse

    from core.records import output_file

    assert output_file(str(tmp_path / "new" / "x.json")) == tmp_path / "new" / "x.json"
    assert (tmp_path / "new").is_dir()
    (tmp_path / "file").write_text("")
    with pytest.raises(argparse.ArgumentTypeError, match="cannot make the folder of"):
        output_file(str(tmp_path / "file" / "x.json"))  # a file stands where the folder would be
    with pytest.raises(argparse.ArgumentTypeError, match="it is a folder"):
        output_file(str(tmp_path))


@pytest.mark.parametrize("value, bounds, expected", [
    ("5", (1, 10), 5), ("1", (1, 10), 1), ("10.0", (1, 10), 10), ("0", (1, 10), None), ("11", (1, 10), None),
    ("-3", (-5, 0), -3),
])
def test_form_number_takes_bounds_inclusive(value, bounds, expected):
    from core.records import form_number

    assert form_number(value, least=bounds[0], most=bounds[1]) == expected
