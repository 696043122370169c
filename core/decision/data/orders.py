"""Synthetic order records rendered as JSON-ish states, with one question per primitive.

A second kind of state for every primitive: the choice reads a categorical field (status), the
score bins a count (items), and the noul applies a two-field rule (refund due iff the order was
cancelled or returned AND was paid). Answers are deterministic, so the posterior is one-hot.
"""

import json
import random

from core.decision.data.nota import choice_options, injection_tags
from core.decision.data.rows import NOUL_OPTIONS, DecisionRow, determined_row

STATUSES = ["PENDING", "SHIPPED", "DELIVERED", "CANCELLED", "RETURNED", "ON_HOLD"]
CARRIERS = ["DHL", "UPS", "FEDEX", "USPS", "DPD"]
PAYMENTS = ["PAID", "UNPAID", "REFUNDED"]
ITEM_LEVELS = ["1 item", "2 to 3 items", "4 to 6 items", "7 or more items"]
ITEM_BOUNDS = [1, 3, 6]
"""Upper item count of each level but the last (so 7+ is the top level)."""

Q_STATUS = "What is the status of this order?"
Q_ITEMS = "How many items does this order contain?"
Q_REFUND = "Is a refund due on this order?"


def item_level(items: int) -> int:
    """Index into ITEM_LEVELS for an item count >= 1."""
    if items < 1:
        raise ValueError(f"an order holds at least one item, got {items}")
    return sum(items > bound for bound in ITEM_BOUNDS)


def refund_due(status: str, payment: str) -> bool:
    """The two-field rule: a paid order that was cancelled or returned is owed a refund."""
    return status in ("CANCELLED", "RETURNED") and payment == "PAID"


def known_answers(record: dict) -> dict[str, dict[str, float]]:
    """Each question's answer (question text -> option -> p, one-hot: the rules decide) about an order record."""
    refund = refund_due(record["status"], record["payment"])
    return {Q_STATUS: {record["status"]: 1.0}, Q_ITEMS: {ITEM_LEVELS[item_level(record["items"])]: 1.0},
            Q_REFUND: {NOUL_OPTIONS[0 if refund else 1]: 1.0}}


def order_rows(rng: random.Random, order_id: str) -> list[DecisionRow]:
    """Draw one order and ask its three questions."""
    status, payment = rng.choice(STATUSES), rng.choice(PAYMENTS)
    items = rng.randint(1, 12)
    record = {"order": order_id, "status": status, "carrier": rng.choice(CARRIERS),
              "items": items, "payment": payment, "express": rng.random() < 0.5}
    keys = list(record)[1:]
    rng.shuffle(keys)  # field order varies so the model must read names, not positions
    state = json.dumps({"order": order_id, **{k: record[k] for k in keys}})
    cid = f"orders-{order_id}"
    k = rng.randint(3, 5)
    opts = choice_options(status, rng.sample([s for s in STATUSES if s != status], k - 1), rng)
    level = item_level(items)
    refund = refund_due(status, payment)
    return [
        determined_row(cid, "orders", state, Q_STATUS, opts.options, "choice", opts.label,
                       injection_tags(opts.injection, "status")),
        determined_row(cid, "orders", state, Q_ITEMS, list(ITEM_LEVELS), "score", level, ["items"]),
        determined_row(cid, "orders", state, Q_REFUND, list(NOUL_OPTIONS), "noul", 0 if refund else 1, ["refund"]),
    ]

