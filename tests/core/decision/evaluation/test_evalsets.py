"""Labelled evaluation sets: the upload format, its line-numbered errors, and generated rows."""

import json

import pytest

from core.decision.evaluation.evalsets import EvalSetError, load_items, parse_upload

GOOD = [
    {"state": "Card charged twice.", "question": "Which team?", "options": ["billing", "security", "None of the above"],
     "label": "billing", "context_id": "t1"},
    {"state": "Card charged twice.", "question": "Page someone now?", "kind": "noul", "label": "false", "context_id": "t1"},
    {"state": {"msg": "server down"}, "question": "How urgent?", "kind": "score", "options": ["low", "high"], "label": 1},
]


def _jsonl(records) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_jsonl_rows_become_items():
    items = parse_upload("set.jsonl", _jsonl(GOOD).encode())
    assert [it.label for it in items] == [0, 1, 1]
    assert items[0].nota == 2 and items[1].nota is None
    assert items[1].question.options == ("true", "false") and items[1].question.kind == "noul"
    assert items[0].context_id == items[1].context_id == "t1"
    assert items[2].context_id == '{"msg": "server down"}'  # default: the state itself


def test_csv_rows_match_jsonl():
    csv = ("state,question,options,label,kind,context_id\n"
           "Card charged twice.,Which team?,billing|security|None of the above,billing,,t1\n"
           "Card charged twice.,Page someone now?,,false,noul,t1\n")
    items = parse_upload("set.csv", csv)
    assert [(it.question.options, it.label) for it in items] == [
        (("billing", "security", "None of the above"), 0), (("true", "false"), 1)]


def test_a_csv_label_is_an_option_or_else_its_0_based_index():
    """A CSV cell is text: "1" names the option "1" when there is one, else the index the format allows."""
    csv = ("state,question,options,label\n"
           "s,Which team?,billing|security,1\n"
           "s,How many?,0|1|2,1\n"
           "s,Which team?,billing|security,0\n")
    assert [it.label for it in parse_upload("set.csv", csv)] == [1, 1, 0]
    with pytest.raises(EvalSetError, match="line 2: label 2 is outside 0..1"):
        parse_upload("set.csv", "state,question,options,label\ns,Which team?,billing|security,2\n")


def _bad(line2: dict) -> str:
    return _jsonl([GOOD[0], line2])


@pytest.mark.parametrize("name, text, message", [
    ("set.jsonl", _bad({**GOOD[0], "label": "finance"}), "line 2: label 'finance' is not one of the options"),
    ("set.jsonl", _bad({**GOOD[0], "label": 3}), "line 2: label 3 is outside 0..2"),
    ("set.jsonl", _bad({**GOOD[0], "options": ["only"]}), "line 2: question 'Which team?': 1 option(s)"),
    ("set.jsonl", _bad({**GOOD[0], "options": ["a", "a"]}), "line 2: question 'Which team?': option 2 ('a') duplicates"),
    ("set.jsonl", _bad({**GOOD[0], "state": "  "}), "line 2: state is empty"),
    ("set.jsonl", _bad({**GOOD[0], "kind": "poll"}), "line 2: kind 'poll'"),
    ("set.jsonl", _bad({**GOOD[0], "answer": "x"}), "line 2: unknown field(s) ['answer']"),
    ("set.jsonl", _bad({"state": "s", "question": "q?"}), "line 2: missing field(s) ['label']"),
    ("set.jsonl", _jsonl(GOOD[:1]) + "{not json\n", "line 2: not JSON"),
    ("set.jsonl", "\n\n", "holds no rows"),
    ("set.csv", "state,question,options,label\ns,Which?,a|b,c\n", "line 2: label 'c' is not one of the options"),
    ("set.csv", "state,question,options,label\ns,Which?,a|b,a\n" + "x" * 131_073 + ",q?,a|b,a\n",  # csv's field limit
     "line 3: not a readable CSV row (field larger than field limit"),
    ("set.txt", "anything", "expected a .jsonl or .csv file"),
    ("set.jsonl", b"\xff\xfe", "not UTF-8"),
])
def test_malformed_uploads_name_the_line(name, text, message):
    with pytest.raises(EvalSetError) as err:
        parse_upload(name, text)
    assert message in str(err.value)


def test_load_items_reads_the_file_and_refuses_a_missing_one(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(_jsonl(GOOD))
    assert len(load_items("uploaded file", 10, str(path))) == 3
    with pytest.raises(EvalSetError, match="upload a .jsonl or .csv file first"):
        load_items("uploaded file", 10, None)
    with pytest.raises(EvalSetError, match="unknown evaluation set"):
        load_items("tomorrow's data", 10)


def test_generated_sets_when_the_data_generators_exist():
    split, probe = load_items("our test split", 4), load_items("known-posterior probe", 3)
    assert len(split) == 12 and len({it.context_id for it in split}) == 4
    assert len(probe) == 12  # 6 tickets, department + escalate each
    assert sum("two_cue" in it.tags for it in probe) == 6


def test_natural_tickets_are_the_natural_test_split_in_its_order():
    from core.decision.data.natural import natural_contexts
    from core.decision.data.ticket_families import ISSUE_FAMILIES, URGENCY_FAMILIES
    from core.decision.evaluation.evalsets import NATURAL, natural_items

    items = load_items(NATURAL, 4)
    assert len(items) == 12 and len({it.context_id for it in items}) == 4
    rows = [r for rows in natural_contexts("test", 4, 0) for r in rows]
    assert [(it.context_id, it.state, it.question.text, it.label) for it in items] == [
        (r.context_id, r.state, r.question, r.label) for r in rows]
    assert natural_items(2) == items[:6]  # a prefix of the same tickets, whatever the count
    test_only = {f"family:{f.name}" for f in ISSUE_FAMILIES if f.split == "test"} | {
        f"urgency:{f.name}" for f in URGENCY_FAMILIES if f.split == "test"}
    families = [{t for t in it.tags if ":" in t} for it in items]
    assert all(families) and all(f <= test_only for f in families)  # families no training row uses
    other = load_items(NATURAL, 4, seed=1)  # another draw: other tickets of the same held-out families
    assert [(it.context_id, it.state) for it in other] == [(r.context_id, r.state) for rows in
                                                           natural_contexts("test", 4, 1) for r in rows]
    assert {it.state for it in other}.isdisjoint(it.state for it in items)
    assert all({t for t in it.tags if ":" in t} <= test_only for it in other)


@pytest.mark.parametrize("value, draw", [(None, 0), ("", 0), (0, 0), (3.0, 3), ("7", 7), (9999, 9999)])
def test_a_draw_is_a_whole_number_in_range(value, draw):
    from core.decision.evaluation.evalsets import draw_of

    assert draw_of(value) == draw


@pytest.mark.parametrize("value", [-1, 1.5, 10000, "abc", float("nan"), float("inf"), True, [1]])
def test_a_draw_out_of_range_or_not_whole_is_refused_by_name(value):
    from core.decision.evaluation.evalsets import draw_of

    with pytest.raises(EvalSetError, match=r"draw must be a whole number from 0 to 9999; got "):
        draw_of(value)
