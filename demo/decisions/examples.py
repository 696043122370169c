"""Example states for the Decisions tab, each with questions that fit it.

Four situations a decision model meets: a support ticket, a meeting request (as a JSON record), a
medical intake note, and one that is genuinely ambiguous: a triage ticket in the training data's own
phrasing with one billing and one security cue, whose true posterior is 0.5/0.5 between the two
(the known-posterior probe's two-cue case), so a calibrated model should split its probability.
"""

from dataclasses import dataclass

from demo.decisions.builder import QuestionRow


@dataclass(frozen=True)
class Example:
    """A named state and the builder rows that go with it."""

    name: str
    state: str
    """Text, or a JSON object as text (the state box shows it as a record)."""
    rows: tuple[QuestionRow, ...]


EXAMPLES: tuple[Example, ...] = (
    Example(
        "Support ticket",
        "Ticket 4471\nCustomer tier: BUSINESS\nMessage: I was charged twice for the March invoice and "
        "the refund never arrived.\nNote: would like it fixed this week.",
        (
            QuestionRow("choice", "Which department should handle this ticket?",
                        "BILLING: billing and payments\nINFRA: infrastructure and outages\n"
                        "SECURITY: security and account access\nSUPPORT: product how-to questions"),
            QuestionRow("score", "What priority does this ticket have?", "P3_LOW\nP2_NORMAL\nP1_HIGH\nP0_CRITICAL"),
            QuestionRow("noul", "Should an on-call engineer be paged immediately?", ""),
        ),
    ),
    Example(
        "Meeting request",
        '{"from": "Dana (VP Sales)", "subject": "Quarterly review", "body": "Can we meet Thursday or '
        'Friday afternoon for an hour? I will bring the forecast.", "calendar": {"Thursday": "free after 14:00", '
        '"Friday": "busy all day"}}',
        (
            QuestionRow("choice", "When should the meeting be booked?",
                        "THU: Thursday afternoon\nFRI: Friday afternoon\nASK: ask for another day"),
            QuestionRow("choice", "How long should the slot be?", "30 minutes\n1 hour\n2 hours"),
            QuestionRow("noul", "Does the request need a reply today?", ""),
        ),
    ),
    Example(
        "Medical intake",
        "Intake note: 58-year-old, chest tightness for 40 minutes while climbing stairs, now resting, "
        "mild sweating, history of high blood pressure. Not a diagnosis; triage only.",
        (
            QuestionRow("score", "How urgent is this visit?",
                        "routine appointment\nsame-day visit\nurgent care\nemergency now"),
            QuestionRow("choice", "Which service should see the patient first?",
                        "ED: emergency department\nGP: general practice\nCARD: cardiology clinic"),
            QuestionRow("noul", "Should the patient be told to call emergency services?",
                        "true: call now\nfalse: wait for an appointment"),
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
)


def example_names() -> list[str]:
    return [e.name for e in EXAMPLES]


def find_example(name: str) -> Example:
    """The example called ``name``; raises KeyError naming the ones that exist."""
    for ex in EXAMPLES:
        if ex.name == name:
            return ex
    raise KeyError(f"no example called {name!r}; examples: {example_names()}")
