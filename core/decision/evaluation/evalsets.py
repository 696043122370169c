"""Labelled evaluation sets for calibration evaluation: our test split, the natural tickets' test split,
the known-posterior probe, or an uploaded JSONL/CSV file in the format below.

Upload format, one labelled question per JSONL line (or CSV row with the same column names):

    {"state": "Card charged twice.", "question": "Which team?", "options": ["billing", "security"],
     "label": "billing", "kind": "choice", "context_id": "t1"}

``state`` is text or a JSON object (CSV: text); ``options`` a list (CSV: one cell, options split by
``|``); ``label`` the correct option's text (or its 0-based index); ``kind`` is ``choice`` (default),
``score`` (options low to high) or ``noul`` (options may be omitted; label ``true`` / ``false``);
``context_id`` groups questions about one state for the bootstrap (default: the state itself).
Every problem is reported with its line number.
"""

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from core.decision.data.rows import NOTA
from core.decision.questions import QUESTION_TYPES, Question, QuestionError, render_state
from core.records import form_number

UPLOAD_FIELDS = {"state", "question", "options", "label", "kind", "context_id"}
MAX_UPLOAD_ROWS = 5000
"""Larger files are refused: every row runs through the model on this CPU while the user waits."""
MAX_UPLOAD_BYTES = 20 * 2**20
"""5,000 rows of long states fit well under this; a larger file is refused before it is read."""


class EvalSetError(ValueError):
    """An evaluation set that cannot be used, with the line at fault."""


@dataclass(frozen=True)
class EvalItem:
    """One labelled question about one state."""

    context_id: str
    """Rows with the same id share a state; the bootstrap resamples whole contexts."""
    state: str | dict
    question: Question
    """A validated Choice, Score or Noul."""
    label: int
    """0-based index of the correct option."""
    tags: tuple[str, ...] = ()
    """Slicing facts from the data generator, e.g. ``two_cue``, ``escalate``."""

    @property
    def nota(self) -> int | None:
        """Index of the "None of the above" option, or None when it is not offered."""
        opts = self.question.options
        return opts.index(NOTA) if NOTA in opts else None


def item_from_row(row: Any) -> EvalItem:
    """An item from a generated data row (anything with state, question, options, kind, label, context_id)."""
    kind = QUESTION_TYPES[row.kind]
    q = kind(row.question, tuple(row.options)) if row.kind != "noul" else kind(row.question)
    return EvalItem(str(row.context_id), row.state, q, int(row.label), tuple(getattr(row, "tags", ())))


def _label_index(label: Any, options: tuple[str, ...]) -> int:
    if isinstance(label, bool):
        label = "true" if label else "false"
    if isinstance(label, str) and label.strip() not in options and label.strip().isdigit():
        label = int(label.strip())  # a CSV cell is text: "0" is the index the format allows, unless an option is "0"
    if isinstance(label, int):
        if not 0 <= label < len(options):
            raise EvalSetError(f"label {label} is outside 0..{len(options) - 1} (there are {len(options)} options)")
        return label
    if not isinstance(label, str) or label.strip() not in options:
        raise EvalSetError(f"label {label!r} is not one of the options {list(options)}")
    return options.index(label.strip())


def parse_record(record: Mapping[str, Any]) -> EvalItem:
    """One upload record -> an item; raises EvalSetError (without a line number) on any problem."""
    if not isinstance(record, Mapping):
        raise EvalSetError(f"expected an object with {sorted(UPLOAD_FIELDS)}, got {type(record).__name__}")
    extra, missing = set(record) - UPLOAD_FIELDS, {"state", "question", "label"} - set(record)
    if extra or missing:
        raise EvalSetError(f"unknown field(s) {sorted(extra)}" if extra else f"missing field(s) {sorted(missing)}")
    kind = record.get("kind") or "choice"
    if kind not in QUESTION_TYPES:
        raise EvalSetError(f"kind {kind!r} is not one of {list(QUESTION_TYPES)}")
    options = record.get("options") or (["true", "false"] if kind == "noul" else [])
    if isinstance(options, str):
        options = [o for o in options.split("|") if o.strip()]
    try:
        render_state(record["state"])
        q = QUESTION_TYPES[kind](record["question"], tuple(options) if isinstance(options, list) else options)
    except QuestionError as err:
        raise EvalSetError(str(err)) from None
    label = _label_index(record["label"], q.options)
    state = record["state"]
    cid = record.get("context_id") or (state if isinstance(state, str) else json.dumps(state, sort_keys=True))
    return EvalItem(str(cid), state, q, label)


def _numbered_records(name: str, text: str) -> Iterable[tuple[int, Any]]:
    if name.lower().endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text))
        try:
            if reader.fieldnames is None:
                raise EvalSetError("line 1: the CSV file has no header row")
            for rec in reader:
                yield reader.line_num, {k: v for k, v in rec.items() if k is not None and v not in (None, "")}
        except csv.Error as err:  # e.g. a field over csv's 131,072-character limit
            raise EvalSetError(f"line {reader.reader.line_num}: not a readable CSV row ({err})") from None
        return
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as err:
                raise EvalSetError(f"line {n}: not JSON ({err.msg} at column {err.colno})") from None
            except RecursionError:  # json recurses once per bracket
                raise EvalSetError(f"line {n}: nested too deeply to be a row (hundreds of brackets "
                                   "inside each other)") from None


def parse_upload(name: str, data: bytes | str) -> list[EvalItem]:
    """Items of an uploaded ``.jsonl`` / ``.csv`` file; raises EvalSetError naming the line."""
    if not name.lower().endswith((".jsonl", ".json", ".csv")):
        raise EvalSetError(f"{name}: expected a .jsonl or .csv file")
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data.removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise EvalSetError(f"{name} is not UTF-8 text (byte {err.start}); is it a binary file?") from None
    items = []
    for n, record in _numbered_records(name, text):
        try:
            items.append(parse_record(record))
        except EvalSetError as err:
            raise EvalSetError(f"line {n}: {err}") from None
        if len(items) > MAX_UPLOAD_ROWS:
            raise EvalSetError(f"more than {MAX_UPLOAD_ROWS} rows; upload a smaller sample")
    if not items:
        raise EvalSetError(f"{name} holds no rows")
    return items


# ---- generated sets (issue 5's data generators)


def split_items(contexts: int, seed: int = 0, partition: str = "test") -> list[EvalItem]:
    """The first ``contexts`` contexts of one of our data partitions (three questions each)."""
    from core.decision.data import DataSpec, build_partition

    return [item_from_row(r) for r in build_partition(partition, contexts, seed, DataSpec())]


def probe_items(tickets_per_kind: int, seed: int = 0) -> list[EvalItem]:
    """The known-posterior probe: one-cue and two-cue tickets, department and escalation questions."""
    from core.decision.data import probe_rows

    return [item_from_row(r) for r in probe_rows(seed, tickets_per_kind)]


def natural_items(tickets: int, seed: int = 0) -> list[EvalItem]:
    """The first ``tickets`` tickets of the natural test split (issue and urgency families no training row
    uses; department, priority and page-now questions): the set the real-body arms are judged on."""
    from core.decision.data.natural import natural_contexts

    return [item_from_row(r) for rows in natural_contexts("test", tickets, seed) for r in rows]


MAX_DRAW = 9999
"""A generated set's draws (seeds) a visitor may ask for; draw 0 is the one every documented figure reads."""


def draw_of(value) -> int:
    """A generated set's draw (its seed) from a form or API value: a whole number 0..``MAX_DRAW`` (blank: 0).

    Why: one draw of 400 natural tickets puts about ±0.045 on a department figure; reading another draw of the
    same held-out families shows how far a figure moves (results/smollm2_decision/heldout_rl/rule.md)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0
    if (number := form_number(value, least=0, most=MAX_DRAW)) is None:
        raise EvalSetError(f"draw must be a whole number from 0 to {MAX_DRAW}; got {str(value)[:40]!r}")
    return number


SPLIT, NATURAL, PROBE, UPLOAD = "our test split", "natural tickets (held-out families)", "known-posterior probe", "uploaded file"
SOURCES = (SPLIT, NATURAL, PROBE, UPLOAD)
"""The evaluation sets the calibration view offers."""


MAX_CONTEXTS = 1000
"""The most contexts (tickets, probe tickets per kind) a generated set holds: the Calibration view's slider's top."""


def count_of(value) -> int:
    """A generated set's size from a form or API value: a whole number 1..``MAX_CONTEXTS``."""
    if (number := form_number(value, least=1, most=MAX_CONTEXTS)) is None:
        raise EvalSetError(f"the set's size must be a whole number from 1 to {MAX_CONTEXTS}; got {str(value)[:40]!r}")
    return number


def load_items(source: str, contexts, upload: str | None = None, seed: int = 0) -> list[EvalItem]:
    """Items of one of ``SOURCES``: ``contexts`` test contexts, natural tickets, probe tickets per kind (draw
    ``seed`` of each; ``count_of`` checks the size), or the file."""
    if source == UPLOAD:
        if not upload:
            raise EvalSetError("upload a .jsonl or .csv file first (format: see 'Upload format')")
        path = Path(upload)  # a server temporary path: messages name only the file
        if path.stat().st_size > MAX_UPLOAD_BYTES:
            raise EvalSetError(f"{path.name} is {path.stat().st_size / 2**20:.0f} MB; uploads are limited to "
                               f"{MAX_UPLOAD_BYTES // 2**20} MB ({MAX_UPLOAD_ROWS} rows)")
        return parse_upload(path.name, path.read_bytes())
    generated = {SPLIT: split_items, NATURAL: natural_items, PROBE: probe_items}
    if source not in generated:
        raise EvalSetError(f"unknown evaluation set {source!r}; pick one of {list(SOURCES)}")
    return generated[source](count_of(contexts), seed)
