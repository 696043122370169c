"""Reading a choice in every cyclic order of its options, and averaging the readings back.

A letter arm answers in the order its options are given. Choice options are shuffled in training, so every order
is one the arm knows, yet its readings in different orders disagree; their mean is an ensemble the arm already
holds (results/smollm2_decision/orders/rule.md). Score and noul options keep their one trained order, and "None of
the above" stays last, where training always puts it (``core.decision.data.nota``).

    orders = question_orders("choice", ["a", "b", "c"], "cyclic")   # [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    merged = merge_readings(probs, orders)            # probs[i] read in orders[i], merged in the given order
    shown, readings = rows_in_orders(rows, "cyclic")  # evaluation rows, each as the served arm reads it
    per_row = merge_all(probs_of_shown, readings, len(rows))
"""

import copy
from typing import Sequence

from core.decision.data.rows import NOTA

CHOICE_ORDERS = ("given", "cyclic")
"""How a choice question is read: once as given, or once in each cyclic order of its options (averaged)."""


def checked(choice_orders: str) -> str:
    """``choice_orders`` if it is one of ``CHOICE_ORDERS``; else ValueError naming them."""
    if choice_orders not in CHOICE_ORDERS:
        raise ValueError(f"choice_orders {choice_orders!r}: expected one of {list(CHOICE_ORDERS)}")
    return choice_orders


def reading_in(decider, choice_orders: str):
    """``decider`` reading every choice in ``choice_orders``: itself when it already does, else a shallow copy, so a
    cached decider that every visitor shares is never changed. A model without letter readings (it scores each
    option's own text, or answers through a pipeline or an endpoint) reads a choice one way only: ValueError."""
    own = getattr(decider, "choice_orders", None)
    if own == checked(choice_orders):
        return decider
    if own is None:
        raise ValueError(f"it reads a choice one way only ({type(decider).__name__}: no letter readout whose option "
                         "order could turn); pick a letter-readout model")
    twin = copy.copy(decider)
    twin.choice_orders = choice_orders
    return twin


def question_orders(kind: str, options: Sequence[str], choice_orders: str) -> list[list[int]]:
    """The orders a question of ``kind`` with these ``options`` is read in; ``order[j]`` is the given option shown at
    place j. The first is always the given order; a last "None of the above" stays last."""
    n = len(options)
    if checked(choice_orders) == "given" or kind != "choice":
        return [list(range(n))]
    m = n - 1 if options[-1] == NOTA else n  # the options that turn
    return [[(j + s) % m for j in range(m)] + list(range(m, n)) for s in range(m)]


def reorder(options: Sequence, order: Sequence[int]) -> list:
    """The options as shown in ``order``."""
    return [options[k] for k in order]


def merge_readings(probs, orders: Sequence[Sequence[int]]):
    """The mean of readings ``probs[i]`` (numpy or torch, [readings, >= n]) taken in ``orders[i]``, each mapped back
    to the given order: [n], same type. Places beyond n (the readout's masked letters) are dropped."""
    if len(probs) != len(orders) or not orders:
        raise ValueError(f"{len(probs)} readings for {len(orders)} orders")
    n = len(orders[0])
    merged = probs[0][:n] * 0
    for p, order in zip(probs, orders):
        if sorted(order) != list(range(n)):
            raise ValueError(f"order {list(order)} is not a permutation of {n} options")
        merged[list(order)] += p[:n]
    return merged / len(orders)


def merge_all(probs, readings: Sequence[tuple[int, Sequence[int]]], count: int):
    """Per-reading probabilities [readings, W] -> per-question [count, W]: ``readings[k]`` = (question, order) of
    row k; each question's readings merged (``merge_readings``), zeros beyond its options."""
    if len(probs) != len(readings):
        raise ValueError(f"{len(probs)} readings of probabilities for {len(readings)} readings")
    out = probs[:count] * 0
    mine: dict[int, list[int]] = {}
    for k, (i, _) in enumerate(readings):
        mine.setdefault(i, []).append(k)
    if sorted(mine) != list(range(count)):
        raise ValueError(f"the readings cover questions {sorted(mine)}, not 0..{count - 1}")
    for i, ks in mine.items():
        orders = [readings[k][1] for k in ks]
        out[i, : len(orders[0])] = merge_readings(probs[ks], orders)
    return out


def rows_in_orders(rows: Sequence, choice_orders: str) -> tuple[list, list[tuple[int, list[int]]]]:
    """Decision rows (``core.decision.data.rows.DecisionRow``) as a served arm reading ``choice_orders`` shows them:
    one row per reading, options, label and posterior reordered; and each one's (row, order) for ``merge_all``."""
    shown, readings = [], []
    for i, r in enumerate(rows):
        for order in question_orders(r.kind, r.options, choice_orders):
            shown.append(r if order == sorted(order) else r.model_copy(update={
                "options": reorder(r.options, order), "label": order.index(r.label),
                "posterior": reorder(r.posterior, order) if r.posterior else r.posterior}))
            readings.append((i, order))
    return shown, readings
