"""Natural-language support tickets over triage's labels and questions: the transfer test's data.

A ticket reads like one a customer writes: a paraphrase from one issue family (from two families of
two departments in ~20% "ambiguous" tickets, whose department is then 0.5/0.5 between them), one
urgency phrase that fixes the priority, and optional greeting, company context and sign-off, with
seeded typos. The three questions are triage's (department choice of all four, no "none of the
above"; priority score; page-now noul, true iff P1/P0 with no noise), so every posterior is exact:
one-hot, or 0.5/0.5 on an ambiguous department. Families are split-disjoint (``ticket_families``).
A phrasebook names the issue families drawn from: v1 (the first 36), v2 (v1 plus 24 more training
families, ``more_ticket_families``), extra (v2's 24 extra training families alone: tickets from issue families a
v1-trained stage never read), fresh (extra's issue families and 12 extra urgency families: every family deciding a
training answer new to a v1-trained stage), wide (fresh with 24 more issue families: twelve a department); all draw
val and test from v1's families alone, identically.

    natural_contexts("test", 400, seed=0)  # -> 400 tickets, three DecisionRows each
"""

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.decision.data.more_ticket_families import MORE_ISSUE_FAMILIES, MORE_URGENCY_FAMILIES, WIDE_ISSUE_FAMILIES
from core.decision.data.rows import NOUL_OPTIONS, DecisionRow, one_hot
from core.decision.data.ticket_families import (
    COMPANY_CONTEXT, DEPARTMENT_KEYWORDS, GREETINGS, ISSUE_FAMILIES, SIGNOFFS, SLOT_VALUES, SPLITS,
    URGENCY_FAMILIES, Family, families_in,
)
from core.decision.data.triage import DEPARTMENTS, PRIORITIES, Q_DEPARTMENT, Q_PAGE, Q_PRIORITY

SOURCE = "natural"
_EXTRA_ISSUES = [f for f in ISSUE_FAMILIES if f.split != "train"] + MORE_ISSUE_FAMILIES
PHRASEBOOKS: dict[str, list[Family]] = {
    "v1": ISSUE_FAMILIES, "v2": ISSUE_FAMILIES + MORE_ISSUE_FAMILIES, "extra": _EXTRA_ISSUES, "fresh": _EXTRA_ISSUES,
    "wide": _EXTRA_ISSUES + WIDE_ISSUE_FAMILIES,
}
"""Issue families per phrasebook."""
_FRESH_URGENCY = [f for f in URGENCY_FAMILIES if f.split != "train"] + MORE_URGENCY_FAMILIES
URGENCY_BOOKS: dict[str, list[Family]] = {"fresh": _FRESH_URGENCY, "wide": _FRESH_URGENCY}
"""Urgency families of the phrasebooks that have their own (the others: ``URGENCY_FAMILIES``)."""


def phrasebook_families(phrasebook: str) -> list[Family]:
    """A phrasebook's issue families, or a ValueError naming the phrasebooks there are."""
    if phrasebook not in PHRASEBOOKS:
        raise ValueError(f"unknown phrasebook {phrasebook!r}; expected one of {sorted(PHRASEBOOKS)}")
    return PHRASEBOOKS[phrasebook]


P_AMBIGUOUS = 0.2
P_TYPOS = 0.3
"""Share of tickets passed through ``add_typos``."""
TYPO_RATE = 0.12
"""Per eligible word (four or more letters) of a typo'd ticket."""
P_GREETING, P_CONTEXT, P_SIGNOFF = 0.5, 0.35, 0.4
P_TERSE = 0.2
"""Tickets of just the issue and the urgency phrase, no filler (short tickets exist)."""
P_LOWERCASE = 0.1
KEYBOARD_NEIGHBOURS = {
    "a": "qs", "b": "vn", "c": "xv", "d": "sf", "e": "wr", "f": "dg", "g": "fh", "h": "gj", "i": "uo",
    "j": "hk", "k": "jl", "l": "k", "m": "n", "n": "bm", "o": "ip", "p": "o", "q": "w", "r": "et",
    "s": "ad", "t": "ry", "u": "yi", "v": "cb", "w": "qe", "x": "zc", "y": "tu", "z": "x",
}


@dataclass(frozen=True)
class NaturalTicket:
    """One drawn natural ticket: its hidden labels, what it was built from, and its text."""

    ticket_id: str
    department: str
    priority: str
    issue_families: tuple[Family, ...]
    """One family, or two of different departments (ambiguous; the label is one of them)."""
    urgency_family: Family
    text: str
    typo: bool
    """Whether ``add_typos`` changed the text."""

    @property
    def ambiguous(self) -> bool:
        return len(self.issue_families) == 2

    @property
    def page(self) -> bool:
        """Page now iff P1_HIGH or P0_CRITICAL (no noise)."""
        return PRIORITIES.index(self.priority) >= 2


def add_typos(text: str, rng: random.Random, rate: float = TYPO_RATE) -> str:
    """Seeded keyboard typos: each word of 4+ letters, with p ``rate``, gets one slip.

    A slip is one of: swap two adjacent inner letters, drop an inner letter, double a letter, or
    hit a neighbouring key. The first letter stays (people rarely miss it), case is kept, and
    punctuation and spacing are untouched, so the text stays readable. Pure given ``rng``'s state.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"typo rate must be in [0, 1], got {rate}")

    def slip(match: re.Match) -> str:
        word = match.group(0)
        if rng.random() >= rate:
            return word
        i = rng.randrange(1, len(word) - 1)
        kind = rng.choice(("swap", "drop", "double", "neighbour"))
        if kind == "swap":
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        if kind == "drop":
            return word[:i] + word[i + 1:]
        if kind == "double":
            return word[:i] + word[i] + word[i:]
        near = rng.choice(KEYBOARD_NEIGHBOURS[word[i].lower()])
        return word[:i] + (near.upper() if word[i].isupper() else near) + word[i + 1:]

    return re.sub(r"[A-Za-z]{4,}", slip, text)


def has_department_keyword(text: str) -> bool:
    """Whether any department's name or obvious word appears in ``text`` (case-insensitive substring)."""
    lowered = text.lower()
    return any(word in lowered for words in DEPARTMENT_KEYWORDS.values() for word in words)


def _fill(template: str, rng: random.Random) -> str:
    """A template with its slots filled from ``SLOT_VALUES``."""
    return template.format(**{slot: rng.choice(values) for slot, values in SLOT_VALUES.items()})


def _compose(issues: list[str], urgency: str, rng: random.Random) -> str:
    """The ticket text: optional greeting and context, the issue(s), the urgency, optional sign-off."""
    if rng.random() < P_TERSE:
        return " ".join([*issues, urgency])
    body = list(issues)
    if len(issues) == 1 and rng.random() < P_CONTEXT:
        body.insert(rng.randrange(2), rng.choice(COMPANY_CONTEXT))
    if len(issues) == 2:
        body[1] = rng.choice(("Also, ", "Separately, ", "And one more thing: ", "On top of that, ")) + \
            body[1][0].lower() + body[1][1:]
    # the urgency usually comes last, sometimes first ("Urgent-ish: ..." is how people open)
    body.insert(0 if rng.random() < 0.25 else len(body), urgency)
    text = " ".join(body)
    if rng.random() < P_GREETING:
        text = f"{rng.choice(GREETINGS)}\n{text}"
    if rng.random() < P_SIGNOFF:
        text = f"{text}\n{rng.choice(SIGNOFFS)}"
    return text


def draw_natural_ticket(rng: random.Random, ticket_id: str, split: str, department: str, priority: str,
                        issue_table: Sequence[Family] = ISSUE_FAMILIES,
                        urgency_table: Sequence[Family] = URGENCY_FAMILIES) -> NaturalTicket:
    """Draw one ticket of ``split`` whose (primary) department and priority are given.

    With p ``P_AMBIGUOUS`` a second issue from another department (uniform) is described and the
    label is drawn 0.5/0.5 between the two departments. ``issue_table``, ``urgency_table``: the phrasebook's.
    """
    issue_pool = families_in(split, list(issue_table))
    families = [rng.choice([f for f in issue_pool if f.label == department])]
    label = department
    if rng.random() < P_AMBIGUOUS:
        other = rng.choice([d for d in DEPARTMENTS if d != department])
        families.append(rng.choice([f for f in issue_pool if f.label == other]))
        rng.shuffle(families)
        label = rng.choice((department, other))
    urgency_family = rng.choice([f for f in families_in(split, list(urgency_table)) if f.label == priority])
    issues = [_fill(rng.choice(f.templates), rng) for f in families]
    text = _compose(issues, rng.choice(urgency_family.templates), rng)
    if rng.random() < P_LOWERCASE:
        text = text.lower()
    typo = False
    if rng.random() < P_TYPOS:
        typed = add_typos(text, rng)
        typo, text = typed != text, typed
    return NaturalTicket(ticket_id, label, priority, tuple(families), urgency_family, text, typo)


def natural_rows(ticket: NaturalTicket, rng: random.Random) -> list[DecisionRow]:
    """Triage's three questions about a natural ticket, with exact posteriors (options as triage shows them)."""
    cid = f"natural-{ticket.ticket_id}"
    tags = [f"family:{f.name}" for f in ticket.issue_families] + [f"urgency:{ticket.urgency_family.name}"]
    tags.append("ambiguous" if ticket.ambiguous else "clear")
    tags += ["typo"] * ticket.typo + ["no_keyword"] * (not has_department_keyword(ticket.text))
    options = list(DEPARTMENTS)
    rng.shuffle(options)
    described = [f.label for f in ticket.issue_families]
    department_posterior = [described.count(o) / len(described) for o in options]
    level = PRIORITIES.index(ticket.priority)
    return [
        DecisionRow(context_id=cid, source=SOURCE, state=ticket.text, question=Q_DEPARTMENT, options=options,
                    kind="choice", label=options.index(ticket.department), posterior=department_posterior,
                    tags=tags + ["department"]),
        DecisionRow(context_id=cid, source=SOURCE, state=ticket.text, question=Q_PRIORITY,
                    options=list(PRIORITIES), kind="score", label=level, posterior=one_hot(level, len(PRIORITIES)),
                    tags=tags + ["priority"]),
        DecisionRow(context_id=cid, source=SOURCE, state=ticket.text, question=Q_PAGE, options=list(NOUL_OPTIONS),
                    kind="noul", label=0 if ticket.page else 1, posterior=one_hot(0 if ticket.page else 1, 2),
                    tags=tags + ["escalate"]),
    ]


def deciding_families(tags: Sequence[str]) -> set[str]:
    """The family tags that fix a natural row's answer: the issue families for the department, else the urgency."""
    prefix = "family:" if "department" in tags else "urgency:"
    return {t for t in tags if t.startswith(prefix)}


def deciding_family(tags: Sequence[str]) -> str | None:
    """The one family a natural row is resampled with: the first of its deciding families in tag order (an
    ambiguous ticket's two come shuffled); None for a row that names none (a synthetic or uploaded one)."""
    deciding = deciding_families(tags)
    return next((t for t in tags if t in deciding), None)


def family_counts(tag_lists: Iterable[Sequence[str]]) -> dict[str, int]:
    """How many issue and urgency families decide the answers of rows with these tags: a natural split's
    held-out families are few, and a figure over its tickets speaks for those families only."""
    found: dict[str, set[str]] = {"issue": set(), "urgency": set()}
    for tags in tag_lists:
        for tag in deciding_families(tags):
            found["issue" if tag.startswith("family:") else "urgency"].add(tag)
    return {kind: len(names) for kind, names in found.items()}


def natural_contexts(split: str, n: int, seed: int, phrasebook: str = "v1") -> list[list[DecisionRow]]:
    """``n`` natural tickets of ``split`` (three rows each), deterministic in (split, n, seed, phrasebook).

    Each split draws from its own stream (``natural/{seed}/{split}``) and its own families; the
    first ``k`` tickets do not depend on ``n``. Departments and priorities are balanced in blocks
    of four (each block a shuffle of the four), so small splits stay balanced.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    issue_table = phrasebook_families(phrasebook)
    urgency_table = URGENCY_BOOKS.get(phrasebook, URGENCY_FAMILIES)
    rng = random.Random(f"natural/{seed}/{split}")
    contexts: list[list[DecisionRow]] = []
    departments: list[str] = []
    priorities: list[str] = []
    for i in range(n):
        if i % 4 == 0:
            departments, priorities = rng.sample(DEPARTMENTS, 4), rng.sample(PRIORITIES, 4)
        ticket = draw_natural_ticket(rng, f"{split}-{seed}-{i}", split, departments[i % 4], priorities[i % 4],
                                     issue_table, urgency_table)
        contexts.append(natural_rows(ticket, rng))
    return contexts


def split_profile(contexts: list[list[DecisionRow]]) -> dict:
    """What a drawn split is made of: exact shares over its tickets and the department ceiling.

    The ceiling is the Bayes-optimal department accuracy, the mean max posterior of the department
    rows (1 - 0.5 x the ambiguous share): no model can beat it on these labels.
    """
    if not contexts:
        return {"tickets": 0}  # nothing drawn: no share to report, and a 0.0 would be a lie
    first = [rows[0] for rows in contexts]
    words = sorted(len(r.state.split()) for r in first)

    def share(tag: str) -> float:
        return sum(tag in r.tags for r in first) / len(first)

    return {
        "tickets": len(first), "rows": sum(len(rows) for rows in contexts),
        "ambiguous": share("ambiguous"), "typo": share("typo"), "no_keyword": share("no_keyword"),
        "words_median": words[len(words) // 2], "words_max": words[-1],
        "under_60_words": sum(w < 60 for w in words) / len(words),
        "department_ceiling": sum(max(r.posterior) for r in first) / len(first),
        "departments": {d: sum(r.options[r.label] == d for r in first) for d in DEPARTMENTS},
        "page_now": sum(rows[2].label == 0 for rows in contexts) / len(contexts),
        "families": sorted({t.split(":", 1)[1] for r in first for t in r.tags if t.startswith("family:")}),
        "urgency_families": sorted({t.split(":", 1)[1] for r in first for t in r.tags if t.startswith("urgency:")}),
    }
