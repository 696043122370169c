"""The synthetic decision data: triage posteriors, NOTA injection, the other sources, splits."""

import random
from collections import Counter

import pytest

from core.decision.data import NOTA, DataSpec, DecisionRow, build_dataset, build_partition, probe_rows
from core.decision.data.access import access_rows
from core.decision.data.nota import choice_options, choice_posterior
from core.decision.data.orders import item_level, order_rows
from core.decision.data.triage import (
    DEPARTMENT_CUES, DEPARTMENTS, PRIORITIES, PRIORITY_CUES, Q_PAGE, draw_ticket, ticket_rows,
)

SMALL = DataSpec(contexts={"format": 30, "warmup": 20, "rl": 20, "val": 10, "test": 20}, cued={})
"""Three sources only: the cued rows have their own tests (test_cued.py)."""


def test_cue_tables_have_the_published_shape():
    assert DEPARTMENTS == ["BILLING", "INFRASTRUCTURE", "SECURITY", "PRODUCT_SUPPORT"]
    assert PRIORITIES == ["P3_LOW", "P2_NORMAL", "P1_HIGH", "P0_CRITICAL"]
    assert all(len(cues) == 5 for cues in DEPARTMENT_CUES.values())
    assert all(len(cues) == 3 for cues in PRIORITY_CUES.values())
    every_cue = [c for cues in [*DEPARTMENT_CUES.values(), *PRIORITY_CUES.values()] for c in cues]
    assert len(set(every_cue)) == len(every_cue)


def test_ticket_rates_match_the_generator():
    rng = random.Random(0)
    tickets = [draw_ticket(rng, str(i)) for i in range(20000)]
    two = [t for t in tickets if len(t.cue_departments) == 2]
    assert len(two) / len(tickets) == pytest.approx(0.3, abs=0.015)
    # a two-cue ticket's label is one of its cue departments; each is right half the time
    assert all(t.department in t.cue_departments for t in two)
    first = sum(t.department == t.cue_departments[0] for t in two) / len(two)
    assert first == pytest.approx(0.5, abs=0.03)
    # paging follows P1/P0 except for the 10% flips
    agree = sum(t.page == (t.priority in ("P1_HIGH", "P0_CRITICAL")) for t in tickets) / len(tickets)
    assert agree == pytest.approx(0.9, abs=0.01)


def test_ticket_state_holds_its_cues():
    t = draw_ticket(random.Random(3), "7", two_cue=True)
    found = [d for d, cues in DEPARTMENT_CUES.items() if any(c in t.state for c in cues)]
    assert sorted(found) == sorted(t.cue_departments) and len(found) == 2


def test_three_questions_per_ticket():
    rows = ticket_rows(draw_ticket(random.Random(1), "1"), random.Random(2))
    assert [r.kind for r in rows] == ["choice", "score", "noul"]
    assert len({r.context_id for r in rows}) == 1
    assert rows[1].options == PRIORITIES
    assert rows[2].question == Q_PAGE and rows[2].options == ["true", "false"]
    assert rows[2].posterior in ([0.9, pytest.approx(0.1)], [pytest.approx(0.1), 0.9])


def test_nota_injection_rates_and_shape():
    rng = random.Random(0)
    counts = Counter()
    for _ in range(20000):
        opts = choice_options("X", ["a", "b", "c"], rng)
        counts[opts.injection] += 1
        assert len(opts.options) == 4  # the option count never changes
        if opts.injection != "none":
            assert opts.options[-1] == NOTA and opts.options.count(NOTA) == 1
        answer = NOTA if opts.injection == "nota_answer" else "X"
        assert opts.options[opts.label] == answer
    assert counts["nota_answer"] / 20000 == pytest.approx(0.15, abs=0.01)
    assert counts["nota_distractor"] / 20000 == pytest.approx(0.35, abs=0.012)


def test_unordered_options_are_shuffled():
    rng = random.Random(0)
    firsts = Counter(choice_options("X", ["a", "b", "c"], rng).options[0] for _ in range(2000))
    assert set(firsts) == {"X", "a", "b", "c"}


POSTERIOR_CASES = [
    # (displayed options, prior over the hidden label, expected posterior)
    (["A", "B", "C", "D"], {"A": 1.0}, [1.0, 0.0, 0.0, 0.0]),  # one cue, nothing injected
    (["B", "A", "C", "D"], {"A": 0.5, "B": 0.5}, [0.5, 0.5, 0.0, 0.0]),  # two cues: 0.5/0.5
    (["B", "C", "D", NOTA], {"A": 1.0}, [0.0, 0.0, 0.0, 1.0]),  # one cue removed: NOTA certain
    # A missing beside NOTA: A was the answer (0.15 * 0.5) or B was and A a dropped distractor
    # (0.35 / 3 * 0.5): 0.15 / (0.15 + 0.35/3) = 0.5625 for NOTA
    (["B", "C", "D", NOTA], {"A": 0.5, "B": 0.5}, [0.4375, 0.0, 0.0, 0.5625]),
    (["A", "B", "C", NOTA], {"A": 0.5, "B": 0.5}, [0.5, 0.5, 0.0, 0.0]),  # both shown, D dropped
]


@pytest.mark.parametrize("options, prior, expected", POSTERIOR_CASES)
def test_choice_posterior(options, prior, expected):
    assert choice_posterior(options, ["A", "B", "C", "D"], prior) == pytest.approx(expected)


def test_posterior_matches_simulation_on_two_cue_nota_tickets():
    # empirical check of the 0.5625 case straight from the generator
    rng = random.Random(5)
    hits = total = 0
    for i in range(60000):
        t = draw_ticket(rng, str(i), two_cue=True)
        row = ticket_rows(t, rng)[0]
        if row.options[-1] == NOTA and sum(d in row.options for d in t.cue_departments) == 1:
            total += 1
            hits += row.label == len(row.options) - 1
    assert hits / total == pytest.approx(0.5625, abs=0.02)


def test_impossible_option_set_is_refused():
    with pytest.raises(ValueError, match="impossible"):
        choice_posterior(["B", "C", "D", "E"], ["A", "B", "C", "D"], {"A": 1.0})


ITEM_CASES = [(1, 0), (2, 1), (3, 1), (4, 2), (6, 2), (7, 3), (12, 3)]


@pytest.mark.parametrize("items, level", ITEM_CASES)
def test_item_levels(items, level):
    assert item_level(items) == level


@pytest.mark.parametrize("make", [order_rows, access_rows])
def test_other_sources_cover_every_primitive(make):
    rng = random.Random(0)
    for i in range(200):
        rows = make(rng, str(i))
        assert [r.kind for r in rows] == ["choice", "score", "noul"]
        for r in rows:
            assert r.posterior[r.label] == 1.0


def test_access_grant_rule():
    rng = random.Random(0)
    for i in range(300):
        rows = access_rows(rng, str(i))
        state = rows[0].state
        held = int(state.split("Clearance held: LEVEL_")[1][0])
        required = int(state.split("requires LEVEL_")[1][0])
        grant = held >= required and "SUSPENDED" not in state
        assert rows[2].label == (0 if grant else 1)


def test_partitions_are_context_grouped_and_deterministic():
    a, b = build_dataset(0, SMALL), build_dataset(0, SMALL)
    assert a == b
    owners = {}
    for name, rows in a.items():
        assert len(rows) == 3 * SMALL.contexts[name]
        for r in rows:
            assert owners.setdefault(r.context_id, name) == name
    assert build_dataset(1, SMALL) != a


def test_partition_does_not_depend_on_other_sizes():
    bigger = DataSpec(contexts={**SMALL.contexts, "format": 60})
    assert build_partition("test", 20, 0, SMALL) == build_partition("test", 20, 0, bigger)


def test_every_primitive_sees_several_sources():
    rows = build_partition("format", 300, 0, DataSpec(cued={}))  # the three ticket-like sources
    for kind in ("choice", "score", "noul"):
        assert {r.source for r in rows if r.kind == kind} == {"triage", "orders", "access"}


def test_probe_posteriors():
    rows = probe_rows(0, 50)
    dept = [r for r in rows if r.kind == "choice"]
    assert len(dept) == 100 and all(NOTA not in r.options for r in dept)
    for r in dept:
        expected = 1.0 if "one_cue" in r.tags else 0.5
        assert max(r.posterior) == pytest.approx(expected)
    assert all(max(r.posterior) == pytest.approx(0.9) for r in rows if r.kind == "noul")


ROW_ERRORS = [
    # (overrides, message fragment)
    ({"options": ["only"]}, "options"),  # fewer than 2
    ({"label": 4}, "label"),  # out of range
    ({"kind": "noul"}, "noul options"),  # noul with other options
    ({"posterior": [0.5, 0.5, 0.5, 0.5]}, "posterior"),  # does not sum to 1
    ({"extra": 1}, "Extra inputs"),  # extra="forbid"
]


@pytest.mark.parametrize("overrides, fragment", ROW_ERRORS)
def test_row_validation(overrides, fragment):
    base = dict(context_id="c", source="s", state="x", question="q?", options=["a", "b", "c", "d"],
                kind="choice", label=0)
    with pytest.raises(ValueError, match=fragment):
        DecisionRow(**{**base, **overrides})


def test_prompt_fields_never_carry_the_label():
    row = probe_rows(0, 1)[0]
    assert row.prompt_fields == (row.state, row.question, row.options)


def test_known_answers_are_the_generators_own_posteriors():
    """What ``known_answers`` says of a state written from given parts is what the generator's rows say of every
    state it drew from the same parts (the Decisions tab's examples are written so)."""
    import json
    import re

    from core.decision.data import access, orders, triage

    rng = random.Random(3)
    for i in range(400):
        t = draw_ticket(rng, str(i))
        message, note = re.match(r".*\nMessage: (.*)\.\nNote: (.*)\.$", t.state, re.S).groups()
        known = triage.known_answers(message.split("; "), note)
        for row in ticket_rows(t, random.Random(i), inject=False):
            assert {o: p for o, p in zip(row.options, row.posterior) if p} == \
                {o: p for o, p in known[row.question].items() if p}, (t.state, row.question)
        for row in order_rows(random.Random(i), str(i)):
            assert answer_of(row) == known_one_hot(orders.known_answers(json.loads(row.state))[row.question], row)
        for row in access_rows(random.Random(i), str(i)):
            system = row.state.split("access to ")[1].split("\n")[0]
            account = row.state.split("account ")[1].split("\n")[0]
            held = int(row.state.split("Clearance held: LEVEL_")[1][0]) - 1
            required = int(row.state.split("requires LEVEL_")[1][0]) - 1
            assert row.state == access.request_state(row.context_id.split("-")[1], system, row.state.split(
                "Requester: ")[1].split(",")[0], account, held, required)
            assert answer_of(row) == known_one_hot(access.known_answers(system, account, held, required)[row.question], row)


def test_known_answers_of_a_phrase_the_data_never_writes_are_refused_by_name():
    from core.decision.data import triage

    assert len(triage.CUE_OF) == sum(len(c) for c in (*DEPARTMENT_CUES.values(), *PRIORITY_CUES.values()))
    with pytest.raises(ValueError, match="my printer is on fire"):
        triage.known_answers(["I was charged twice", "my printer is on fire"], "no rush at all")


def answer_of(row: DecisionRow) -> str:
    return row.options[row.label]


def known_one_hot(known: dict, row: DecisionRow) -> str:
    """The one answer the rules give, or "None of the above" where the row's options left it out."""
    (answer,) = [o for o, p in known.items() if p == 1.0]
    return answer if answer in row.options else NOTA
