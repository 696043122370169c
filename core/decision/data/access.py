"""Synthetic access-policy decisions: a request, the requester's clearance, and the rule to apply.

The third kind of state: the choice names the requested system, the score reads the clearance
level (ordered), and the noul is the policy decision itself (grant iff clearance reaches the
system's required level and the requester is not a suspended account). Deterministic answers.
"""

import random

from core.decision.data.nota import choice_options, injection_tags
from core.decision.data.rows import NOUL_OPTIONS, DecisionRow, determined_row

SYSTEMS = ["PAYROLL", "WIKI", "CODE_REPO", "HR_PORTAL", "ANALYTICS", "BACKUPS", "CRM"]
LEVELS = ["LEVEL_1", "LEVEL_2", "LEVEL_3", "LEVEL_4"]
ROLES = ["ENGINEER", "CONTRACTOR", "MANAGER", "INTERN", "AUDITOR"]
ACCOUNT_STATES = ["ACTIVE", "ACTIVE", "ACTIVE", "SUSPENDED"]
"""Drawn uniformly, so one request in four comes from a suspended account."""

Q_SYSTEM = "Which system is being requested?"
Q_CLEARANCE = "What clearance level does the requester hold?"
Q_GRANT = "Should this access request be granted?"


def request_state(request_id: str, system: str, role: str, account: str, held: int, required: int) -> str:
    """An access request as the data writes it (levels as indices into ``LEVELS``)."""
    return (f"Request {request_id}: access to {system}\nRequester: {role}, account {account}\n"
            f"Clearance held: {LEVELS[held]}\nPolicy: {system} requires {LEVELS[required]} or higher.")


def granted(held: int, required: int, account: str) -> bool:
    """The policy: clearance at or above the system's level, and an account that is not suspended."""
    return held >= required and account == "ACTIVE"


def known_answers(system: str, account: str, held: int, required: int) -> dict[str, dict[str, float]]:
    """Each question's answer (question text -> option -> p, one-hot: the rules decide) about such a request."""
    return {Q_SYSTEM: {system: 1.0}, Q_CLEARANCE: {LEVELS[held]: 1.0},
            Q_GRANT: {NOUL_OPTIONS[0 if granted(held, required, account) else 1]: 1.0}}


def access_rows(rng: random.Random, request_id: str) -> list[DecisionRow]:
    """Draw one access request and ask its three questions."""
    system, role = rng.choice(SYSTEMS), rng.choice(ROLES)
    held, required = rng.randrange(4), rng.randrange(4)
    account = rng.choice(ACCOUNT_STATES)
    state = request_state(request_id, system, role, account, held, required)
    grant = granted(held, required, account)
    cid = f"access-{request_id}"
    k = rng.randint(2, 6)
    opts = choice_options(system, rng.sample([s for s in SYSTEMS if s != system], k - 1), rng)
    return [
        determined_row(cid, "access", state, Q_SYSTEM, opts.options, "choice", opts.label,
                       injection_tags(opts.injection, "system")),
        determined_row(cid, "access", state, Q_CLEARANCE, list(LEVELS), "score", held, ["clearance"]),
        determined_row(cid, "access", state, Q_GRANT, list(NOUL_OPTIONS), "noul", 0 if grant else 1, ["grant"]),
    ]
