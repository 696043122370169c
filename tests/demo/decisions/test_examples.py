"""The Decisions tab's examples: written as their data writes states, each answer's known posterior its rules'."""

import pytest

from demo.decisions import examples
from demo.decisions.builder import QuestionRow, parse_options


@pytest.mark.parametrize("ex", examples.EXAMPLES, ids=lambda ex: ex.name)
def test_each_known_posterior_is_over_its_rows_options_and_sums_to_one(ex):
    asked = {row.text: row for row in ex.rows}
    assert ex.known and set(ex.known) <= set(asked), ex.name
    for text, known in ex.known.items():
        row = asked[text]
        options = parse_options(row.kind, row.options) or ["true", "false"]
        assert set(known) <= set(options) and sum(known.values()) == pytest.approx(1.0), (ex.name, text)


def test_the_ambiguous_ticket_splits_its_department_and_the_assistant_request_says_nothing_of_the_venue():
    ambiguous = examples.find_example("Ambiguous ticket").known["Which department should handle this ticket?"]
    assert ambiguous == {"SECURITY": 0.5, "BILLING": 0.5}
    request = examples.find_example("A request to an assistant (ask or act)").known
    assert set(request["What should the venue be?"].values()) == {0.2}
    assert request["What should the date be?"] == {"today": 0.0, "tomorrow": 0.0, "this week": 0.5, "next week": 0.5}


def test_only_an_examples_own_rows_about_its_own_state_have_a_known_answer():
    ex = examples.find_example("Order record")
    rows = list(ex.rows)
    assert examples.known_answers(ex.state, rows) == {0: {"DELIVERED": 1.0}, 1: {"2 to 3 items": 1.0},
                                                      2: {"false": 1.0}}
    assert examples.known_answers(ex.state + " ", rows) == examples.known_answers(ex.state, rows)  # the box's spaces
    edited = [rows[0], QuestionRow("score", rows[1].text, "1 item\n2 or more items"), rows[2]]
    assert set(examples.known_answers(ex.state, edited)) == {0, 2}
    assert examples.known_answers(ex.state.replace('"items": 3', '"items": 9'), rows) == {}
    assert examples.known_answers("", rows) == {}
