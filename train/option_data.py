"""Option-scorer data: our decision rows rewritten as System One requests, plus claim records.

Each context of ``core.decision.data`` (triage, orders, access) becomes ONE request: its questions
get random names (never shown), arbitrary option keys (random ids, or the value itself) and
criteria descriptions drawn from paraphrase lists, in shuffled order. "None of the above" is never
shown: where it was the answer, the truth is missing from the options (``missing`` = 1, or the
exact posterior mass for triage); the remaining posterior is the soft target. Every request also
gets a claim question about a field the record states or, half the time, has had removed (the
abstention probe: then no option is right). The rule questions (refund due, access granted) stay.

    python -m train.option_data --out runs/data/option --seed 0
"""

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from core.decision.data.access import ROLES
from core.decision.data.dataset import DataSpec, build_partition
from core.decision.data.orders import CARRIERS
from core.decision.data.rows import NOTA, DecisionRow
from core.decision.data.store import sha256_file
from core.decision.data.triage import TIERS
from train.decision_run import parse_config

SPLITS = {"train": "format", "val": "val", "test": "test"}
"""Our split -> the decision partition its contexts come from (test = the letter models' test split)."""
GLOSS = {
    "BILLING": ["charges, invoices, refunds and payments", "money questions: fees and statements"],
    "INFRASTRUCTURE": ["servers, disks, deploys and databases", "systems that are down or slow"],
    "SECURITY": ["suspicious logins, phishing, leaked keys", "account safety and intrusions"],
    "PRODUCT_SUPPORT": ["how-to questions and product feedback", "using the product: buttons, invites, layout"],
    "P3_LOW": ["no rush"], "P2_NORMAL": ["this week"], "P1_HIGH": ["today, blocking"], "P0_CRITICAL": ["everything is down"],
}
INSTRUCTIONS = {
    "Which department should handle this ticket?": ["Route the ticket to a team.", "Who should own this ticket?"],
    "What priority does this ticket have?": ["How urgent is the ticket?", "Rate the ticket's priority."],
    "Should an on-call engineer be paged immediately?": ["Page on-call now?", "Does this need an immediate page?"],
    "What is the status of this order?": ["Order status?", "Where is this order in its life cycle?"],
    "How many items does this order contain?": ["Size of the order?", "Count the order's items."],
    "Is a refund due on this order?": ["Do we owe a refund?", "Refund this order?"],
    "Which system is being requested?": ["Requested system?", "Which system does the request name?"],
    "What clearance level does the requester hold?": ["Requester's clearance?", "Rate the clearance held."],
    "Should this access request be granted?": ["Grant access?", "Apply the policy: allow this request?"],
}
CLAIMS = {  # source -> (field values, question, how the field reads in the state)
    "triage": (TIERS, "What plan tier is the customer on?", r"Customer tier: (\w+)\n"),
    "orders": (CARRIERS, "Which carrier ships this order?", r', ?"carrier": "(\w+)"'),
    "access": (ROLES, "What is the requester's role?", r"Requester: (\w+), "),
}


class OptionQuestionRow(BaseModel):
    """One question of a request, with its truth."""

    model_config = ConfigDict(extra="forbid")
    name: str
    type: str
    instructions: str
    keys: list[str]
    descriptions: list[str | None]
    values: list[str]
    """The canonical option texts (what the letter models are shown on the same rows)."""
    label: int | None
    """Index of the true option; None when the truth is not among the options."""
    posterior: list[float]
    """P(option i is the truth | request), summing with ``missing`` to 1."""
    missing: float
    """P(the truth is not among the options)."""
    tags: list[str] = []

    def spec(self) -> dict:
        """The System One question (what the scorer is sent)."""
        if self.type == "score":
            return {"type": "score", "instructions": self.instructions, "criteria": list(self.descriptions)}
        crit = dict(zip(self.keys, self.descriptions))
        if self.type == "noul" and all(d is None for d in self.descriptions):
            crit = None
        return {"type": self.type, "instructions": self.instructions, "criteria": crit}


class OptionContext(BaseModel):
    """One request: a state and its questions."""

    model_config = ConfigDict(extra="forbid")
    context_id: str
    source: str
    state: str
    questions: list[OptionQuestionRow]

    def request(self) -> dict:
        return {q.name: q.spec() for q in self.questions}


def _key(rng: random.Random, value: str, style: str, i: int) -> str:
    if style == "value":
        return value.lower() if rng.random() < 0.5 else value
    if style == "index":
        return f"opt{i + 1}"
    return "".join(rng.choice("abcdefghjkmnpqrstuvwxyz0123456789") for _ in range(rng.randint(2, 5)))


def _describe(rng: random.Random, value: str, kind: str) -> str | None:
    """A criteria description carrying the value's meaning (a key alone carries it when None)."""
    r = rng.random()
    if kind == "choice" and r < 0.2:
        return None
    words = value.replace("_", " ").lower()
    glosses = GLOSS.get(value, [])
    options = [value, f"{words}", *(f"{value}: {g}" for g in glosses), *(f"{words} ({g})" for g in glosses)]
    return rng.choice(options)


def rewrite(row: DecisionRow, rng: random.Random) -> OptionQuestionRow | None:
    """A decision row as an option-scorer question (see the module docstring); None under 2 options left."""
    shown = [i for i, o in enumerate(row.options) if o != NOTA]
    if len(shown) < 2:
        return None
    posterior = row.posterior or [float(i == row.label) for i in range(len(row.options))]
    missing = sum(posterior[i] for i, o in enumerate(row.options) if o == NOTA)
    label = shown.index(row.label) if row.label in shown else None
    values = [row.options[i] for i in shown]
    instructions = rng.choice([row.question, *INSTRUCTIONS.get(row.question, [])])
    if row.kind == "noul":
        keys, descs = ["true", "false"], [None, None]
        if rng.random() < 0.3:
            descs = ["yes", "no"]
    else:
        style = rng.choice(["value", "random", "index"])
        descs = [_describe(rng, v, row.kind) for v in values]
        if row.kind == "score":
            descs = [d or v for d, v in zip(descs, values)]
        keys = [v if d is None else _key(rng, v, style, i) for i, (v, d) in enumerate(zip(values, descs))]
        if len({k.lower() for k in keys}) < len(keys):  # random ids collided: fall back to positions
            keys = [v if d is None else f"opt{i + 1}" for i, (v, d) in enumerate(zip(values, descs))]
    return OptionQuestionRow(name=f"q{rng.randrange(16**6):06x}", type=row.kind, instructions=instructions, keys=keys,
                             descriptions=descs, values=values, label=label,
                             posterior=[posterior[i] for i in shown], missing=missing, tags=list(row.tags))


def claim_question(source: str, state: str, rng: random.Random, stated: bool) -> tuple[str, OptionQuestionRow]:
    """(state, question) about a field the record states, or the state with that field removed."""
    values, question, pattern = CLAIMS[source]
    found = re.search(pattern, state)
    if found is None:
        raise ValueError(f"{source} state lacks the claim field ({pattern}): {state[:60]!r}")
    truth = found.group(1)
    if not stated:
        state = state[: found.start()] + ("Requester: " if source == "access" else "") + state[found.end():]
    k = rng.randint(3, len(values))
    shown = [truth, *rng.sample([v for v in values if v != truth], k - 1)] if stated else rng.sample(values, k)
    rng.shuffle(shown)
    style = rng.choice(["value", "random", "index"])
    descs = [_describe(rng, v, "choice") for v in shown]
    keys = [v if d is None else _key(rng, v, style, i) for i, (v, d) in enumerate(zip(shown, descs))]
    if len({k.lower() for k in keys}) < len(keys):
        keys = [v if d is None else f"opt{i + 1}" for i, (v, d) in enumerate(zip(shown, descs))]
    label = shown.index(truth) if stated else None
    row = OptionQuestionRow(
        name=f"q{rng.randrange(16**6):06x}", type="choice", instructions=question, keys=keys, descriptions=descs,
        values=shown, label=label, posterior=[float(i == label) for i in range(k)], missing=0.0 if stated else 1.0,
        tags=["claim", "stated" if stated else "unstated"])
    return state, row


def contexts_of(rows: list[DecisionRow], rng: random.Random, claims: bool = True) -> list[OptionContext]:
    """Group rows by context, rewrite each, add a claim question, shuffle question order."""
    grouped: dict[str, list[DecisionRow]] = {}
    for r in rows:
        grouped.setdefault(r.context_id, []).append(r)
    out = []
    for cid, group in grouped.items():
        state, questions = group[0].state, [q for q in (rewrite(r, rng) for r in group) if q is not None]
        if claims:
            state, claim = claim_question(group[0].source, state, rng, stated=rng.random() < 0.5)
            questions.append(claim)
        rng.shuffle(questions)
        out.append(OptionContext(context_id=cid, source=group[0].source, state=state, questions=questions))
    return out


@dataclass(frozen=True)
class DataConfig:
    """Which contexts, how many, where."""

    out: str = field(default="runs/data/option", metadata={"help": "output directory (must not hold data)"})
    seed: int = field(default=0, metadata={"help": "seed of the decision data and of the rewriting"})
    train: int = field(default=6000, metadata={"help": "train contexts (from the decision 'format' partition)"})
    val: int = field(default=400, metadata={"help": "val contexts (temperature, head early stop)"})
    test: int = field(default=2667, metadata={"help": "test contexts (2667 = the letter models' whole test split)"})


def read_contexts(path: str | Path) -> list[OptionContext]:
    return [OptionContext.model_validate_json(line) for line in Path(path).read_text().splitlines() if line.strip()]


def main(config: DataConfig) -> Path:
    out = Path(config.out)
    if (out / "manifest.json").exists():
        raise FileExistsError(f"{out} already holds option data; choose a new --out")
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"seed": config.seed, "files": {}}
    for split, partition in SPLITS.items():
        # the option scorer's recipe predates the cued rows (#28): its data stays as shipped
        rows = build_partition(partition, getattr(config, split), config.seed, DataSpec(cued={}))
        contexts = contexts_of(rows, random.Random(f"option-data/{config.seed}/{split}"))
        path = out / f"{split}.jsonl"
        path.write_text("".join(c.model_dump_json() + "\n" for c in contexts))
        manifest["files"][path.name] = {"contexts": len(contexts), "questions": sum(len(c.questions) for c in contexts),
                                        "partition": partition, "sha256": sha256_file(path)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return out


if __name__ == "__main__":
    print(main(parse_config(DataConfig)))
