"""Example states for the Decisions tab, each with questions that fit it.

Every example is the kind of input the shipped models were trained on (core.decision.data): a
support ticket, an order record (a JSON object), an access-policy request, each with the training
data's own questions, and one genuinely ambiguous ticket in the same phrasing with one billing
and one security cue, whose true posterior is 0.5/0.5 between the two (the known-posterior
probe's two-cue case), so a calibrated model should split its probability. The last is a ticket
as a person writes it (no field names, no department's keyword): the real-body readouts read it,
the tiny models trained on synthetic data alone warn that it is unlike their data
(``core.decision.evaluation.familiarity``). Another is a request to an assistant, with the questions the
calibrated agent asks about it (``core.clarify.cued.field_question``): what the ask-or-act agent's reader
(decision-smollm2-pooled-cued) answers before the agent decides what to ask.

Each example is written through its data's own renderers and carries what that data's rules say of each answer
(``Example.known``), so the tab can show a known answer beside what a model says (``known_answers``).
"""

import json
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from core.clarify.cued import TEMPLATES, cue_posterior, cue_sentence, field_question
from core.clarify.families import FIELDS
from core.decision.data import access, orders, triage
from demo.decisions.builder import QuestionRow

Known = Mapping[str, float]
"""A question's known posterior: option text -> probability (one-hot where the data's rules decide)."""


@dataclass(frozen=True)
class Example:
    """A named state, the builder rows that go with it, and what is known of each row's answer."""

    name: str
    state: str
    """Text, or a JSON object as text (the state box shows it as a record)."""
    rows: tuple[QuestionRow, ...]
    known: Mapping[str, Known] = field(default_factory=dict)
    """Question text -> its known posterior, from the rules of the data the example is written like."""


TICKET_QUESTIONS = (
    QuestionRow("choice", triage.Q_DEPARTMENT, "\n".join(triage.DEPARTMENTS)),
    QuestionRow("score", triage.Q_PRIORITY, "\n".join(triage.PRIORITIES)),
    QuestionRow("noul", triage.Q_PAGE, ""),
)
"""The triage data's three questions of a ticket: department, priority, page now."""


def field_row(field_name: str) -> QuestionRow:
    """The calibrated agent's question about a clarify field, as a builder row."""
    text, options = field_question(field_name)
    return QuestionRow("choice", text, "\n".join(options))


def ticket(name: str, ticket_id: str, tier: str, cues: Sequence[str], note: str, rows=TICKET_QUESTIONS) -> Example:
    """A ticket written as the triage data writes one, with what its rules say of each answer."""
    known = triage.known_answers(cues, note)
    return Example(name, triage.ticket_state(ticket_id, tier, cues, note), tuple(rows),
                   {row.text: known[row.text] for row in rows})


def order(record: dict) -> Example:
    """An order record (the keys in the data's order), with the answers its rules give."""
    return Example("Order record", json.dumps(record), (
        QuestionRow("choice", orders.Q_STATUS, "SHIPPED\nDELIVERED\nRETURNED\nON_HOLD"),
        QuestionRow("score", orders.Q_ITEMS, "\n".join(orders.ITEM_LEVELS)),
        QuestionRow("noul", orders.Q_REFUND, ""),
    ), orders.known_answers(record))


def request(request_id: str, system: str, role: str, account: str, held: int, required: int) -> Example:
    """An access request (levels as indices into ``access.LEVELS``), with the policy's answers."""
    return Example("Access request", access.request_state(request_id, system, role, account, held, required), (
        QuestionRow("choice", access.Q_SYSTEM, "ANALYTICS\nWIKI\nPAYROLL"),
        QuestionRow("score", access.Q_CLEARANCE, "\n".join(access.LEVELS)),
        QuestionRow("noul", access.Q_GRANT, ""),
    ), access.known_answers(system, account, held, required))


def assistant_request(opening: str, cues: Sequence[tuple[str, str, tuple, int]], fields: Sequence[str]) -> Example:
    """A request to the assistant in scenario set v3's phrasing: each cue (field, kind, values named, which of the
    kind's sentences); every field in ``fields`` asked, its known posterior the cue's (a field without one: the prior)."""
    said = {f: (kind, hinted) for f, kind, hinted, _ in cues}
    state = " ".join([opening] + [cue_sentence(TEMPLATES[kind][i], f, hinted) for f, kind, hinted, i in cues])
    known = {}
    for f in fields:
        kind, hinted = said.get(f, ("none", ()))
        known[field_question(f)[0]] = dict(zip(map(str, FIELDS[f].values), cue_posterior(f, kind, hinted)))
    return Example("A request to an assistant (ask or act)", state, tuple(field_row(f) for f in fields), known)


EXAMPLES: tuple[Example, ...] = (
    ticket("Support ticket", "4471", "BUSINESS", ["I was charged twice"], "would like it fixed this week"),
    order({"order": "4000123", "status": "DELIVERED", "payment": "PAID", "carrier": "UPS", "items": 3,
           "express": False}),
    request("4000456", "ANALYTICS", "ENGINEER", "ACTIVE", held=1, required=2),
    ticket("Ambiguous ticket", "5120", "FREE", ["someone tried a suspicious login", "the card payment was declined"],
           "a few users noticed", rows=(TICKET_QUESTIONS[0], TICKET_QUESTIONS[2])),
    assistant_request("Set up a celebration.", [("event_type", "clear", ("farewell",), 0),
                                                ("date", "two", ("this week", "next week"), 1),
                                                ("guest_count", "clear", (20,), 0)],
                      ("event_type", "date", "guest_count", "venue")),
    Example(
        "Ticket as a person writes it",
        "Hi there, our finance person says the last two invoices both charged us for 40 seats, but we cut "
        "down to 25 in October. Could someone look into it and credit us the difference? Thanks, Dana",
        TICKET_QUESTIONS,
        {triage.Q_DEPARTMENT: {"BILLING": 1.0}},  # its author's label, as the natural tickets' labels are given
    ),
)


def known_answers(state: str, rows: Sequence[QuestionRow]) -> dict[int, Known]:
    """Row index -> the known posterior of its answer, for the rows of an example asked about its own state as it
    stands (a row whose question, kind or options were edited, or an edited state, has none)."""
    ex = next((e for e in EXAMPLES if e.state == (state or "").strip()), None)
    if ex is None:
        return {}
    return {i: ex.known[row.text] for i, row in enumerate(rows) if row in ex.rows and row.text in ex.known}


OPENING = "Ticket as a person writes it"
"""The example the Ask view opens on, so a first Ask answers: a ticket as visitors write them, which the default
model (the pooled readout) reads and a tiny model warns on."""


def example_names() -> list[str]:
    return [e.name for e in EXAMPLES]


def find_example(name: str) -> Example:
    """The example called ``name``; raises KeyError naming the ones that exist."""
    for ex in EXAMPLES:
        if ex.name == name:
            return ex
    raise KeyError(f"no example called {name!r}; examples: {example_names()}")
