"""core.decision.rotation: the orders and the merge exactly, rows shown in every order, and an adapter arm whose card
reads choices in every cyclic order answering the mean of its readings, through every path, the card and the
pipeline."""

import json
import shutil

import numpy as np
import pytest
import torch

from core.decision import system_one
from core.decision.data.rows import NOTA, DecisionRow
from core.decision.export.adapter import DecisionExportError, load_adapter_decider, read_adapter_card, set_choice_orders
from core.decision.questions import Choice, Noul, Score
from core.decision.rotation import merge_all, merge_readings, question_orders, reorder, rows_in_orders
from tests.fixtures.tiny_adapter_arm import build_tiny_llama, export_tiny_arm

TICKET = "My card was charged twice for one invoice."


def test_a_choice_is_read_in_each_cyclic_order_and_score_and_noul_in_their_one():
    assert question_orders("choice", "abc", "cyclic") == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    assert question_orders("choice", "abc", "given") == [[0, 1, 2]]
    assert question_orders("score", "abcd", "cyclic") == [[0, 1, 2, 3]]
    assert question_orders("noul", ("true", "false"), "cyclic") == [[0, 1]]
    assert reorder(["a", "b", "c"], [2, 0, 1]) == ["c", "a", "b"]
    with pytest.raises(ValueError, match="choice_orders 'every'"):
        question_orders("choice", "abc", "every")


def test_none_of_the_above_stays_last_where_training_puts_it():
    assert question_orders("choice", ["a", "b", "c", NOTA], "cyclic") == [[0, 1, 2, 3], [1, 2, 0, 3], [2, 0, 1, 3]]
    assert question_orders("choice", ["a", NOTA], "cyclic") == [[0, 1]]  # one option to turn: read once
    assert question_orders("choice", [NOTA, "a", "b"], "cyclic") == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]  # not last


def test_readings_are_mapped_back_to_the_given_order_and_averaged():
    orders = [[0, 1, 2], [1, 2, 0]]
    # the second reading showed (b, c, a): it gave b 0.6, c 0.3, a 0.1
    probs = np.array([[0.5, 0.3, 0.2, 0.0], [0.6, 0.3, 0.1, 0.0]])
    assert merge_readings(probs, orders).tolist() == pytest.approx([0.3, 0.45, 0.25])
    assert merge_readings(torch.tensor(probs), orders).tolist() == pytest.approx([0.3, 0.45, 0.25])
    with pytest.raises(ValueError, match="not a permutation"):
        merge_readings(probs, [[0, 1, 2], [1, 1, 0]])
    with pytest.raises(ValueError, match="2 readings for 1 orders"):
        merge_readings(probs, orders[:1])


def test_merge_all_gives_one_row_per_question_with_zeros_beyond_its_options():
    readings = [(0, [0, 1]), (1, [0, 1, 2]), (1, [1, 2, 0]), (1, [2, 0, 1])]
    probs = np.array([[0.7, 0.3, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    out = merge_all(probs, readings, 2)
    assert out.ravel().tolist() == pytest.approx([0.7, 0.3, 0.0, 1 / 3, 2 / 3, 0.0])  # b was read first twice
    with pytest.raises(ValueError, match="cover questions"):
        merge_all(probs, readings, 3)


def test_rows_are_shown_in_every_order_with_label_and_posterior_following_their_option():
    row = DecisionRow(context_id="c", source="natural", state="s", question="Which team?", options=["a", "b", "c"],
                      kind="choice", label=2, posterior=[0.0, 0.25, 0.75], tags=[])
    flag = row.model_copy(update={"question": "Page?", "options": ["true", "false"], "kind": "noul", "label": 0,
                                  "posterior": [1.0, 0.0]})
    shown, readings = rows_in_orders([row, flag], "cyclic")
    assert [r.options for r in shown] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["true", "false"]]
    assert [r.options[r.label] for r in shown] == ["c", "c", "c", "true"]
    assert [r.posterior[r.options.index("c")] for r in shown[:3]] == [0.75] * 3
    assert readings == [(0, [0, 1, 2]), (0, [1, 2, 0]), (0, [2, 0, 1]), (1, [0, 1])] and shown[0] is row
    assert rows_in_orders([row], "given") == ([row], [(0, [0, 1, 2])])


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    """A tiny arm as given, and its copy whose card reads choices in every cyclic order."""
    root = tmp_path_factory.mktemp("orders")
    arm = export_tiny_arm(root / "arm", build_tiny_llama(root / "base"))
    cyclic = shutil.copytree(arm, root / "cyclic")
    set_choice_orders(cyclic, "cyclic")
    return arm, cyclic


def test_a_cyclic_arm_answers_the_mean_of_its_arms_readings_in_every_order_by_every_path(arms):
    plain, cyclic = load_adapter_decider(arms[0]), load_adapter_decider(arms[1])
    assert (plain.choice_orders, cyclic.choice_orders) == ("given", "cyclic")
    options = ("billing", "security", "infra", "product")
    questions = [Choice("Which team?", options), Score("How urgent?", ("low", "high", "critical")), Noul("Page someone?")]
    readings = []
    for s in range(4):
        shown = options[s:] + options[:s]
        p = plain.decide(TICKET, [Choice("Which team?", shown)])[0].probs
        readings.append([p[o] for o in options])
    req = cyclic.tokenize(TICKET, questions)
    assert len(req.suffixes) == 4 + 1 + 1 and [i for i, _ in req.readings] == [0, 0, 0, 0, 1, 2]
    for path in ("reference", "shared", "packed"):
        got = cyclic.probabilities(req, path=path)
        assert got[0, :4].tolist() == pytest.approx(np.mean(readings, 0).tolist(), abs=1e-5)
        assert float(got[0, 4:].abs().sum()) == 0
        as_given = plain.probabilities(plain.tokenize(TICKET, questions[1:]), path=path)
        assert torch.allclose(got[1:], as_given, atol=1e-5)  # score and noul: read once, as given
    answers = cyclic.decide(TICKET, questions)
    assert answers[0].value == options[int(np.argmax(np.mean(readings, 0)))]
    assert sum(answers[0].probs.values()) == pytest.approx(1.0, abs=1e-6)
    served = cyclic.score({"state": TICKET, "questions": {"team": {"type": "choice", "instructions": "Which team?",
                                                                    "criteria": dict.fromkeys(options)}}})
    assert system_one.probabilities_of(served["answers"]["team"]) == pytest.approx(answers[0].probs, abs=1e-6)
    assert served["usage"]["questions"] == 1  # one question, read in 4 orders


def test_a_cut_question_is_cut_alike_in_every_order(arms):
    from core.decision.decider import Limits

    cyclic = load_adapter_decider(arms[1], limits=Limits(max_suffix_tokens=60))
    long = Choice("Which of these teams, given everything in the ticket above and all we know, should take it? " * 3,
                  ("billing", "security", "infra"))
    req = cyclic.tokenize(TICKET, [long], truncate=True)
    assert req.truncations[0].question_tokens_removed > 0 and len(req.suffixes) == 3
    assert all(len(s) <= 60 for s in req.suffixes)


def test_the_card_says_how_choices_are_read_and_refuses_another_value(arms, tmp_path):
    assert read_adapter_card(arms[0]).choice_orders == "given" and read_adapter_card(arms[1]).choice_orders == "cyclic"
    with pytest.raises(DecisionExportError, match="choice_orders 'shuffled'"):
        set_choice_orders(arms[0], "shuffled")
    assert read_adapter_card(arms[0]).choice_orders == "given"  # unchanged by the refusal
    broken = shutil.copytree(arms[1], tmp_path / "broken")
    card = json.loads((broken / "decision.json").read_text())
    (broken / "decision.json").write_text(json.dumps({**card, "choice_orders": "sideways"}))
    with pytest.raises(DecisionExportError, match="(?s)decision.json of broken is malformed.*choice_orders.*sideways"):
        load_adapter_decider(broken)


def test_a_cyclic_arm_answers_through_the_pipeline_as_its_decider(arms):
    from transformers import pipeline

    import core.decision.auto_model  # noqa: F401  (registers our exports as decision models)

    request = {"state": TICKET, "questions": {"team": {"type": "choice", "instructions": "Which team?",
                                                        "criteria": {"billing": None, "security": None, "infra": None}}}}
    ours = load_adapter_decider(arms[1]).score(request)["answers"]
    theirs = pipeline("decision", model=str(arms[1]))(request)
    assert system_one.probabilities_of(theirs["team"]) == pytest.approx(system_one.probabilities_of(ours["team"]), abs=1e-5)
    plain = load_adapter_decider(arms[0]).score(request)["answers"]
    assert system_one.probabilities_of(plain["team"]) != pytest.approx(system_one.probabilities_of(ours["team"]), abs=1e-4)


def test_reading_in_another_order_is_a_copy_and_a_model_without_letters_is_refused():
    from core.decision.rotation import reading_in

    class Letters:
        choice_orders = "given"

    model = Letters()
    twin = reading_in(model, "cyclic")
    assert twin is not model and twin.choice_orders == "cyclic" and model.choice_orders == "given"
    assert reading_in(model, "given") is model and reading_in(twin, "cyclic") is twin
    with pytest.raises(ValueError, match="reads a choice one way only"):
        reading_in(object(), "cyclic")
    with pytest.raises(ValueError, match="choice_orders 'all'"):
        reading_in(model, "all")
