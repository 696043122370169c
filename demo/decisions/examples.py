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
"""

from dataclasses import dataclass

from core.clarify.cued import field_question
from demo.decisions.builder import QuestionRow


@dataclass(frozen=True)
class Example:
    """A named state and the builder rows that go with it."""

    name: str
    state: str
    """Text, or a JSON object as text (the state box shows it as a record)."""
    rows: tuple[QuestionRow, ...]


TICKET_QUESTIONS = (
    QuestionRow("choice", "Which department should handle this ticket?",
                "BILLING\nINFRASTRUCTURE\nSECURITY\nPRODUCT_SUPPORT"),
    QuestionRow("score", "What priority does this ticket have?", "P3_LOW\nP2_NORMAL\nP1_HIGH\nP0_CRITICAL"),
    QuestionRow("noul", "Should an on-call engineer be paged immediately?", ""),
)
"""The triage data's three questions of a ticket: department, priority, page now."""


def field_row(field: str) -> QuestionRow:
    """The calibrated agent's question about a clarify field, as a builder row."""
    text, options = field_question(field)
    return QuestionRow("choice", text, "\n".join(options))


EXAMPLES: tuple[Example, ...] = (
    Example(
        "Support ticket",
        "Ticket 4471\nCustomer tier: BUSINESS\nMessage: I was charged twice.\nNote: would like it fixed this week.",
        TICKET_QUESTIONS,
    ),
    Example(
        "Order record",
        '{"order": "4000123", "status": "DELIVERED", "payment": "PAID", "carrier": "UPS", "items": 3, '
        '"express": false}',
        (
            QuestionRow("choice", "What is the status of this order?", "SHIPPED\nDELIVERED\nRETURNED\nON_HOLD"),
            QuestionRow("score", "How many items does this order contain?",
                        "1 item\n2 to 3 items\n4 to 6 items\n7 or more items"),
            QuestionRow("noul", "Is a refund due on this order?", ""),
        ),
    ),
    Example(
        "Access request",
        "Request 4000456: access to ANALYTICS\nRequester: ENGINEER, account ACTIVE\nClearance held: LEVEL_2\n"
        "Policy: ANALYTICS requires LEVEL_3 or higher.",
        (
            QuestionRow("choice", "Which system is being requested?", "ANALYTICS\nWIKI\nPAYROLL"),
            QuestionRow("score", "What clearance level does the requester hold?", "LEVEL_1\nLEVEL_2\nLEVEL_3\nLEVEL_4"),
            QuestionRow("noul", "Should this access request be granted?", ""),
        ),
    ),
    Example(
        "Ambiguous ticket",
        "Ticket 5120\nCustomer tier: FREE\nMessage: someone tried a suspicious login; the card payment "
        "was declined.\nNote: a few users noticed.",
        (
            QuestionRow("choice", "Which department should handle this ticket?",
                        "BILLING\nINFRASTRUCTURE\nSECURITY\nPRODUCT_SUPPORT"),
            QuestionRow("noul", "Should an on-call engineer be paged immediately?", ""),
        ),
    ),
    Example(
        "A request to an assistant (ask or act)",
        "Set up a celebration. The kind of event is farewell. Date: either this week or next week. "
        "The guest count is 20.",
        tuple(field_row(f) for f in ("event_type", "date", "guest_count", "venue")),
    ),
    Example(
        "Ticket as a person writes it",
        "Hi there, our finance person says the last two invoices both charged us for 40 seats, but we cut "
        "down to 25 in October. Could someone look into it and credit us the difference? Thanks, Dana",
        TICKET_QUESTIONS,
    ),
)


def example_names() -> list[str]:
    return [e.name for e in EXAMPLES]


def find_example(name: str) -> Example:
    """The example called ``name``; raises KeyError naming the ones that exist."""
    for ex in EXAMPLES:
        if ex.name == name:
            return ex
    raise KeyError(f"no example called {name!r}; examples: {example_names()}")
