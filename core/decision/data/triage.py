"""Synthetic support-triage tickets whose answers have a KNOWN posterior (the calibration probe).

A ticket has a department (uniform over four), a priority (uniform over four) and a customer
tier. Its message holds one cue phrase from its department; with p 0.3 a cue from another
(uniform) department is added and with p 0.4 the label moves to that other department; cues are
shuffled. By symmetry a two-cue ticket's department is 0.5/0.5 between its cues and a one-cue
ticket's is certain. The note cue fixes the priority; "page on-call?" is true iff P1/P0, flipped
with p 0.1, so its calibrated confidence is 0.90.
"""

import random
from dataclasses import dataclass
from typing import Sequence

from core.decision.data.nota import choice_options, choice_posterior, injection_tags
from core.decision.data.rows import NOUL_OPTIONS, DecisionRow, one_hot

DEPARTMENT_CUES: dict[str, list[str]] = {
    "BILLING": ["I was charged twice", "the invoice total is wrong", "my refund never arrived",
                "the card payment was declined", "there is an unexpected fee on my statement"],
    "INFRASTRUCTURE": ["the servers are unreachable", "the disk is full on our node",
                       "latency spiked on every request", "the deploy pipeline is stuck",
                       "the database connection times out"],
    "SECURITY": ["someone tried a suspicious login", "I got a reset email I never asked for",
                 "a phishing message reached our staff", "an api key was leaked in a commit",
                 "an unknown device is signed in to my account"],
    "PRODUCT_SUPPORT": ["I cannot find the export button", "how do I invite a teammate",
                        "the dashboard layout changed", "please add a dark mode",
                        "the tutorial link is broken"],
}
PRIORITY_CUES: dict[str, list[str]] = {
    "P3_LOW": ["no rush at all", "whenever you have time", "just a minor annoyance"],
    "P2_NORMAL": ["would like it fixed this week", "moderate impact for us", "a few users noticed"],
    "P1_HIGH": ["it is blocking our team today", "many users are affected", "urgent please"],
    "P0_CRITICAL": ["production is completely down", "every customer is affected",
                    "we are losing revenue every minute"],
}
CUE_OF = {cue: label for table in (DEPARTMENT_CUES, PRIORITY_CUES) for label, said in table.items() for cue in said}
"""Each cue phrase -> the department or priority it says (no phrase says two)."""
DEPARTMENTS = list(DEPARTMENT_CUES)
PRIORITIES = list(PRIORITY_CUES)
"""Low to high, the order of the score question's levels."""
TIERS = ["FREE", "STARTER", "BUSINESS", "ENTERPRISE"]

P_SECOND_CUE = 0.3
P_RELABEL = 0.4
P_PAGE_FLIP = 0.1

Q_DEPARTMENT = "Which department should handle this ticket?"
Q_PRIORITY = "What priority does this ticket have?"
Q_PAGE = "Should an on-call engineer be paged immediately?"


@dataclass(frozen=True)
class Ticket:
    """One drawn ticket: its hidden labels and the rendered state."""

    ticket_id: str
    department: str
    cue_departments: tuple[str, ...]
    """Departments whose cues appear in the message (one or two)."""
    priority: str
    page: bool
    state: str


def draw_ticket(rng: random.Random, ticket_id: str, two_cue: bool | None = None) -> Ticket:
    """Draw a ticket; ``two_cue`` forces the second-cue branch (for the probe), None draws it."""
    department = rng.choice(DEPARTMENTS)
    priority = rng.choice(PRIORITIES)
    tier = rng.choice(TIERS)
    cues = [rng.choice(DEPARTMENT_CUES[department])]
    cue_departments = [department]
    if two_cue is None:
        two_cue = rng.random() < P_SECOND_CUE
    if two_cue:
        other = rng.choice([d for d in DEPARTMENTS if d != department])
        cues.append(rng.choice(DEPARTMENT_CUES[other]))
        cue_departments.append(other)
        if rng.random() < P_RELABEL:
            department = other
    rng.shuffle(cues)
    page = priority in ("P1_HIGH", "P0_CRITICAL")
    if rng.random() < P_PAGE_FLIP:
        page = not page
    state = ticket_state(ticket_id, tier, cues, rng.choice(PRIORITY_CUES[priority]))
    return Ticket(ticket_id, department, tuple(sorted(cue_departments)), priority, page, state)


def ticket_state(ticket_id: str, tier: str, cues: Sequence[str], note: str) -> str:
    """A ticket as the data writes it: its message the cue phrases, its note the priority's cue."""
    return f"Ticket {ticket_id}\nCustomer tier: {tier}\nMessage: {'; '.join(cues)}.\nNote: {note}."


def department_prior(cue_departments: Sequence[str]) -> dict[str, float]:
    """P(department | cues): certain with one cue, 0.5/0.5 between two cues."""
    return {d: 1.0 / len(cue_departments) for d in cue_departments}


def page_probability(priority: str) -> float:
    """P(page on-call now | priority): the rule (P1 or P0) holds but for a flip with p ``P_PAGE_FLIP``."""
    return 1.0 - P_PAGE_FLIP if PRIORITIES.index(priority) >= 2 else P_PAGE_FLIP


def known_answers(cues: Sequence[str], note: str) -> dict[str, dict[str, float]]:
    """Each question's known posterior (question text -> option -> p) for a ticket whose message holds ``cues``
    and whose note is ``note``: what the generator's rules say of any ticket so written."""
    unknown = [c for c in [*cues, note] if c not in CUE_OF]
    if unknown:
        raise ValueError(f"not one of the data's cue phrases: {unknown}")
    departments, priority = [CUE_OF[cue] for cue in cues], CUE_OF[note]
    page = page_probability(priority)
    return {Q_DEPARTMENT: department_prior(departments), Q_PRIORITY: {priority: 1.0},
            Q_PAGE: {NOUL_OPTIONS[0]: page, NOUL_OPTIONS[1]: 1.0 - page}}


def ticket_rows(ticket: Ticket, rng: random.Random, inject: bool = True) -> list[DecisionRow]:
    """The three questions about a ticket; ``inject=False`` shows all four departments (probe)."""
    cid = f"triage-{ticket.ticket_id}"
    tags = ["two_cue" if len(ticket.cue_departments) == 2 else "one_cue"]
    distractors = [d for d in DEPARTMENTS if d != ticket.department]
    if inject:
        opts = choice_options(ticket.department, distractors, rng)
        options, label, injection = opts.options, opts.label, opts.injection
    else:
        options = list(DEPARTMENTS)
        rng.shuffle(options)
        label, injection = options.index(ticket.department), "none"
    posterior = choice_posterior(options, DEPARTMENTS, department_prior(ticket.cue_departments))
    level = PRIORITIES.index(ticket.priority)
    p_true = page_probability(ticket.priority)
    return [
        DecisionRow(context_id=cid, source="triage", state=ticket.state, question=Q_DEPARTMENT,
                    options=options, kind="choice", label=label, posterior=posterior,
                    tags=tags + injection_tags(injection, "department")),
        DecisionRow(context_id=cid, source="triage", state=ticket.state, question=Q_PRIORITY,
                    options=list(PRIORITIES), kind="score", label=level,
                    posterior=one_hot(level, 4), tags=tags + ["priority"]),
        DecisionRow(context_id=cid, source="triage", state=ticket.state, question=Q_PAGE,
                    options=list(NOUL_OPTIONS), kind="noul", label=0 if ticket.page else 1,
                    posterior=[p_true, 1.0 - p_true], tags=tags + ["escalate"]),
    ]
