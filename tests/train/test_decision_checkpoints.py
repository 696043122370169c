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


BEFORE_REEXPORT = {
    "warmup": [[0.0867764, 0.073069, 0.2317659, 0.6083887], [0.000445, 9.4e-05, 0.0009863, 0.9984747], [0.8938584, 0.1061416]],
    "rlcd": [[0.2271161, 0.0109341, 0.6957765, 0.0661733], [0.0004528, 5.45e-05, 0.0009552, 0.9985374], [0.9258583, 0.0741416]],
    "rlvr": [[2.14e-05, 5.37e-05, 0.9993248, 0.0006001], [0.0003775, 3.9e-06, 0.0002117, 0.9994069], [0.9985267, 0.0014733]],
    "oracle": [[0.2403557, 0.0133857, 0.7269021, 0.0193566], [0.0003801, 6.96e-05, 0.0006968, 0.9988534], [0.8999349, 0.1000652]],
}
"""The probabilities of the request above from each checkpoint in our earlier layout, before it was
re-exported into the published one (rounded to 1e-7)."""


@pytest.mark.parametrize("arm", ARMS)
def test_reexported_model_answers_as_before_on_every_path(arm):
    decider = load_decider(_dir(arm))
    state = ("Ticket 42\nCustomer tier: FREE\nMessage: I was charged twice; the servers are unreachable.\n"
             "Note: production is completely down.")
    questions = [
        Choice("Which department should handle this ticket?", ["BILLING", "SECURITY", "INFRASTRUCTURE", "PRODUCT_SUPPORT"]),
        Score("What priority does this ticket have?", ["P3_LOW", "P2_NORMAL", "P1_HIGH", "P0_CRITICAL"]),
        Noul("Should an on-call engineer be paged immediately?"),
    ]
    for path in ("reference", "shared", "packed"):
        got = [list(a.probs.values()) for a in decider.decide(state, questions, path=path)]
        diff = max(abs(x - y) for g, b in zip(got, BEFORE_REEXPORT[arm]) for x, y in zip(g, b))
        assert diff <= 1e-6, (path, diff)
    assert {p.name for p in _dir(arm).glob("*.safetensors")} == {"model.safetensors", "decision_head.safetensors"}


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
