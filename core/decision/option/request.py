"""Option-scorer requests: validation, token layout and the one-pass block-diagonal packing.

A request is a state (text, object or list) and System One questions ``{name: {"type",
"instructions", "criteria"}}``. Every refusal names the question at fault and why (too many
options, bad criteria, duplicate keys, an empty state, more than 8,192 tokens with the counts);
nothing is ever truncated. The layout: the state block, then per question a header block and one
block per option, each option ending in the marker token it is scored at. In the packed sequence a
header sees the state and itself; an option sees the state, its header and itself; positions
continue from the end of the state (header) and of the header (every option alike), so a question,
and an option within it, is computed exactly as if it were alone after the state.
"""

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

TYPES = ("choice", "score", "noul")
NOUL_KEYS = ("true", "false")
FIELDS = {"type", "instructions", "criteria"}


class OptionRequestError(ValueError):
    """A request the option scorer refuses; the message names each question at fault."""


@dataclass(frozen=True)
class OptionQuestion:
    """One validated question: its options' keys and descriptions in declared order."""

    name: str
    """The caller's name for it: used in answers and errors, never shown to the model."""
    type: str
    instructions: str
    keys: tuple[str, ...]
    descriptions: tuple[Any, ...]
    """Criteria text per option (None when the key alone names it)."""


def _text(x: Any) -> str:
    return "" if x is None else x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)


def _content_ok(x: Any) -> bool:
    return x is None or isinstance(x, (str, dict, list))


def _criteria(name: str, kind: str, crit: Any, max_options: int) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    where = f"question {name!r}"
    if kind == "noul":
        if crit is None:
            return NOUL_KEYS, (None, None)
        if not isinstance(crit, Mapping) or set(crit) - set(NOUL_KEYS):
            raise OptionRequestError(f"{where}: noul criteria are optional {{'true': ..., 'false': ...}}, got {crit!r}")
        if not all(_content_ok(v) for v in crit.values()):
            raise OptionRequestError(f"{where}: noul criteria must be text, an object, a list or null")
        return NOUL_KEYS, tuple(crit.get(k) for k in NOUL_KEYS)
    if kind == "choice":
        if not isinstance(crit, Mapping):
            raise OptionRequestError(f"{where}: choice criteria must be an object {{option_key: description}}, "
                                     f"got {type(crit).__name__}")
        keys, descs = list(crit), list(crit.values())
    else:
        if isinstance(crit, (str, Mapping)) or not isinstance(crit, Sequence):
            raise OptionRequestError(f"{where}: score criteria must be a list of level descriptions, low to high")
        descs = list(crit)
        keys = [str(i) for i in range(len(descs))]
        for i, d in enumerate(descs):
            if d is None or (isinstance(d, str) and not d.strip()):
                raise OptionRequestError(f"{where}: score level {i} has no description")
    if not 2 <= len(keys) <= max_options:
        raise OptionRequestError(f"{where}: {len(keys)} option(s); a {kind} question takes 2 to {max_options}")
    seen: dict[str, int] = {}
    for i, (key, desc) in enumerate(zip(keys, descs)):
        if not isinstance(key, str) or not key.strip():
            raise OptionRequestError(f"{where}: option {i + 1} has an empty key")
        if not _content_ok(desc):
            raise OptionRequestError(f"{where}: option {key!r} has criteria of type {type(desc).__name__}; "
                                     "expected text, an object, a list or null")
        ident = key.strip() if kind == "choice" else _text(desc).strip()
        if ident in seen:
            what = "key" if kind == "choice" else "level description"
            raise OptionRequestError(f"{where}: option {i + 1} repeats the {what} {ident!r} of option {seen[ident] + 1}")
        seen[ident] = i
    return tuple(k.strip() for k in keys), tuple(descs)


def parse_question(name: Any, spec: Any, max_options: int = 255) -> OptionQuestion:
    """Validate one System One question."""
    if not isinstance(name, str) or not name.strip():
        raise OptionRequestError(f"question names must be non-empty text, got {name!r}")
    where = f"question {name!r}"
    if not isinstance(spec, Mapping):
        raise OptionRequestError(f"{where}: expected an object, got {type(spec).__name__}")
    if set(spec) - FIELDS:
        raise OptionRequestError(f"{where}: unknown field(s) {sorted(set(spec) - FIELDS)} (expected {sorted(FIELDS)})")
    kind = spec.get("type")
    if kind not in TYPES:
        raise OptionRequestError(f"{where}: `type` must be one of {', '.join(TYPES)}, got {kind!r}")
    if not _content_ok(spec.get("instructions")):
        raise OptionRequestError(f"{where}: instructions must be text, an object, a list or null")
    if kind != "noul" and not spec.get("criteria"):
        raise OptionRequestError(f"{where}: a {kind} question needs `criteria` with its options")
    keys, descs = _criteria(name, kind, spec.get("criteria"), max_options)
    return OptionQuestion(name, kind, _text(spec.get("instructions")), keys, descs)


def parse_questions(questions: Any, max_options: int = 255) -> list[OptionQuestion]:
    """Validate every question; one error lists all the questions at fault."""
    if not isinstance(questions, Mapping) or not questions:
        raise OptionRequestError(f"`questions` maps names to questions, with at least one; got {questions!r}")
    parsed, errors = [], []
    for name, spec in questions.items():
        try:
            parsed.append(parse_question(name, spec, max_options))
        except OptionRequestError as err:
            errors.append(str(err))
    if errors:
        raise OptionRequestError("\n".join(errors))
    return parsed


def render_state(state: Any) -> str:
    """Text as is; an object or list as JSON. Empty refuses: there is nothing to decide from."""
    if not isinstance(state, (str, dict, list)):
        raise OptionRequestError(f"state must be text, an object or a list, got {type(state).__name__}")
    text = _text(state)
    if not state or not text.strip():
        raise OptionRequestError("state is empty: there is nothing to decide from")
    return text


def load_request(text: str) -> tuple[Any, dict]:
    """(state, questions) from request JSON, refusing duplicate keys (which ``json`` would drop silently)."""
    def pairs(items):
        out: dict = {}
        for key, value in items:
            if key in out:
                where = f"question {key!r}" if isinstance(value, Mapping) and "type" in value else f"key {key!r}"
                raise OptionRequestError(f"duplicate {where} in the request JSON")
            out[key] = value
        return out

    try:
        request = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as err:
        raise OptionRequestError(f"request is not valid JSON: {err}") from None
    if not isinstance(request, dict) or set(request) - {"state", "questions", "model"} or "state" not in request:
        raise OptionRequestError('a request is {"state": ..., "questions": {name: question, ...}}')
    return request["state"], request.get("questions")


# ---- tokens


def option_text(q: OptionQuestion, i: int) -> str:
    """What the model reads for option ``i`` (before its marker)."""
    desc = _text(q.descriptions[i]).strip()
    if q.type == "score":
        return f"Level {i} of {len(q.keys) - 1}: {desc}"
    lead = "Option" if q.type == "choice" else "Answer"
    return f"{lead} {q.keys[i]}: {desc}" if desc else f"{lead} {q.keys[i]}"


@dataclass(frozen=True)
class EncodedQuestion:
    question: OptionQuestion
    header: list[int]
    options: list[list[int]]
    """Each option's ids, its marker last."""

    @property
    def n_tokens(self) -> int:
        return len(self.header) + sum(len(o) for o in self.options)


@dataclass(frozen=True)
class Encoded:
    state: list[int]
    questions: list[EncodedQuestion]

    @property
    def n_tokens(self) -> int:
        return len(self.state) + sum(q.n_tokens for q in self.questions)


def _ids(tokenizer, text: str) -> list[int]:
    # split_special_tokens: a request that writes "<|endoftext|>" gets text, never the marker
    return tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]


def encode_question(tokenizer, q: OptionQuestion, marker: int) -> EncodedQuestion:
    header = _ids(tokenizer, f"Question ({q.type}): {q.instructions.strip()}\n")
    return EncodedQuestion(q, header, [_ids(tokenizer, option_text(q, i)) + [marker] for i in range(len(q.keys))])


def encode(tokenizer, state: Any, questions: Sequence[OptionQuestion], marker: int, max_tokens: int) -> Encoded:
    """Tokenize; refuse (with the counts) a request over ``max_tokens``."""
    enc = Encoded(_ids(tokenizer, f"State:\n{render_state(state)}\n"), [encode_question(tokenizer, q, marker) for q in questions])
    if enc.n_tokens > max_tokens:
        parts = ", ".join(f"{e.question.name!r} {e.n_tokens:,}" for e in enc.questions)
        raise OptionRequestError(
            f"request is {enc.n_tokens:,} tokens (state {len(enc.state):,}; questions: {parts}), over the "
            f"{max_tokens:,}-token limit; nothing was truncated: send fewer questions per request "
            "(they are independent, so the answers are the same) or a shorter state")
    return enc


# ---- the packed sequence


@dataclass(frozen=True)
class Packed:
    """One packed sequence: ids, position ids, allowed attention, and where to read."""

    ids: list[int]
    positions: list[int]
    allow: torch.Tensor
    """[T, T] bool: query row may attend to key column."""
    markers: list[list[int]]
    """Per question, the index of each option's marker."""
    headers: list[int]
    """Per question, the index of its header's last token."""


def pack(enc: Encoded) -> Packed:
    """State, then every question's header and options, with the block-diagonal attention of the module doc."""
    s = len(enc.state)
    ids, positions = list(enc.state), list(range(s))
    spans: list[tuple[int, int, int, int]] = []  # (start, end, visible_from, visible_to) besides the state
    markers, headers = [], []
    for q in enc.questions:
        h0, hl = len(ids), len(q.header)
        ids += q.header
        positions += range(s, s + hl)
        spans.append((h0, h0 + hl, h0, h0))
        headers.append(h0 + hl - 1)
        marks = []
        for opt in q.options:
            o0 = len(ids)
            ids += opt
            positions += range(s + hl, s + hl + len(opt))
            spans.append((o0, o0 + len(opt), h0, h0 + hl))
            marks.append(o0 + len(opt) - 1)
        markers.append(marks)
    t = len(ids)
    allow = torch.zeros(t, t, dtype=torch.bool)
    allow[:s, :s] = torch.ones(s, s, dtype=torch.bool).tril()
    for start, end, vis0, vis1 in spans:
        allow[start:end, :s] = True
        allow[start:end, vis0:vis1] = True
        allow[start:end, start:end] = torch.ones(end - start, end - start, dtype=torch.bool).tril()
    return Packed(ids, positions, allow, markers, headers)


def batch_tensors(packs: Sequence[Packed], dtype=torch.float32):
    """Right-padded ids [B, T], positions [B, T] and the additive float mask [B, 1, T, T].

    The mask is 0 where attention is allowed and the dtype's minimum elsewhere (eager attention adds
    it to the scores, so a bool mask would be wrong there). A pad token sees only itself, so no
    softmax row is empty; nothing reads it.
    """
    width = max(len(p.ids) for p in packs)
    ids = torch.zeros(len(packs), width, dtype=torch.long)
    pos = torch.zeros(len(packs), width, dtype=torch.long)
    allow = torch.eye(width, dtype=torch.bool).repeat(len(packs), 1, 1)
    for b, p in enumerate(packs):
        n = len(p.ids)
        ids[b, :n] = torch.tensor(p.ids)
        pos[b, :n] = torch.tensor(p.positions)
        allow[b, :n, :n] = p.allow
    mask = torch.zeros(allow.shape, dtype=dtype).masked_fill_(~allow, torch.finfo(dtype).min)
    return ids, pos, mask[:, None]
