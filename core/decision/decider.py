"""The letter-readout Decider: one state, many questions, a probability for every option.

Three paths give the same numbers (to ~1e-6 in fp32) at very different cost:
  (a) ``reference``: one full published prompt per question, batch 1; the definition of correct.
  (b) ``shared``: the prefix (state) is prefilled once; question suffixes run right-padded in
      batched forwards over the cached prefix, positions continuing from the prefix length.
  (c) ``packed``: state and all suffixes in ONE sequence with a block-diagonal 4D attention mask
      (each suffix sees the state and itself causally; positions restart after the state).
``path="auto"`` picks by ``core.decision.cost`` (a cost model calibrated by bench/decide_latency.py).
Questions are processed in chunks, so memory grows with the chunk size, not the question count.
Requests over the limits are refused with token counts unless ``truncate=True``.

    decider = Decider(body, rows, tokenizer)
    answers = decider.decide("ticket text", [Choice("Which team?", ["billing", "security"])])
"""

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

import torch
from transformers import DynamicCache

from core.decision import system_one
from core.decision.cost import CostModel, Shape
from core.decision.evaluation.familiarity import EmbeddingFamiliarity, Familiarity, by_vocabulary
from core.decision.model import LETTER_DESIGN, MAX_P_SOURCE, RequestTooLong
from core.decision.prompt import (check_seam, encode, encode_prefix, letter_token_ids, longest_token, render_prefix,
                                 render_suffix)
from core.decision.questions import MAX_OPTIONS, Answer, Question, QuestionError, Truncation, make_answer, render_state
from core.decision.readout import readout
from core.decision.rotation import merge_all, question_orders, reorder
from core.models.layers import holding

PATHS = ("reference", "shared", "packed")
EXACT_COUNT_CHARS = 1 << 16
"""Parts up to this many characters are always tokenized and counted exactly (cheap: ~0.2 s);
a longer part that cannot fit at any tokenization is refused before tokenizing (see ``unfittable``)."""


@dataclass(frozen=True)
class Limits:
    """Token limits of a request, counted as published (the published model cut silently at these)."""

    max_state_tokens: int = 1536
    """Tokens of the stripped state text alone (not the "User: Context:" header, blank line or BOS)."""
    max_suffix_tokens: int = 448
    """One question's suffix: question, lettered options and answer cue (published max_question_tokens)."""
    question_chunk: int = 8
    """Shared path: questions per batched forward (bounds memory)."""
    packed_chunk_tokens: int = 256
    """Packed path: suffix tokens per forward (bounds the mask and activations)."""


@dataclass(frozen=True)
class Overrun:
    """One part of a request over its token limit."""

    part: str
    """``"state"``, or the question's qid (its index as a string when it has none)."""
    tokens: int
    """Its tokens: state tokens alone, or the question's whole suffix."""
    limit: int
    """The most this part may have (the state's shrinks so the longest suffix fits the positions)."""


@dataclass
class Request:
    """A tokenized request: prefix ids, one suffix per question, and what was cut."""

    prefix: list[int]
    suffixes: list[list[int]]
    n_options: list[int]
    truncations: list[Truncation | None]
    state_tokens: int = 0
    """Tokens of the (possibly cut) state alone, as the limit counts them."""
    readings: list[tuple[int, list[int]]] | None = None
    """Per suffix, the question it reads and the order its options are shown in (``core.decision.rotation``);
    None: suffix i is question i as given."""


class Decider:
    """Letter-readout decisions over any causal-LM body plus its 26 letter rows (a ``DecisionModel``)."""

    name = ""
    design = LETTER_DESIGN
    confidence_source = MAX_P_SOURCE
    max_options = MAX_OPTIONS

    def __init__(self, body, rows: torch.Tensor, tokenizer, *, bias: torch.Tensor | None = None,
                 prepend_bos: bool = False, limits: Limits = Limits(), cost: CostModel | None = None):
        self.body = body.eval()
        self.device = next(body.parameters()).device
        self.rows = rows.detach().float().to(self.device)
        if tuple(self.rows.shape) != (26, body.config.hidden_size):
            raise ValueError(f"letter rows must be (26, {body.config.hidden_size}), got {tuple(self.rows.shape)}")
        self.bias = None if bias is None else bias.detach().float().to(self.device)
        """Optional per-letter logit bias [26] (a published decision head may carry one)."""
        if self.bias is not None and tuple(self.bias.shape) != (26,):
            raise ValueError(f"letter bias must be (26,), got {tuple(self.bias.shape)}")
        self.tokenizer = tokenizer
        self.training_tokenizer = tokenizer
        """Familiarity is measured against the tokenizer the model reads with."""
        self.letter_ids = letter_token_ids(tokenizer)
        self.prepend_bos = prepend_bos
        if prepend_bos and tokenizer.bos_token_id is None:
            raise ValueError("prepend_bos=True but the tokenizer has no BOS token")
        self.limits = limits
        self.temperature: Callable[[list[int]], float] | None = None
        """A prefix's temperature (an adapter arm's ``core.decision.softening.StateTemperature``): every question's
        letter logits about that state are divided by it. One with a ``layer`` gets the prefix's states at that layer
        from the shared or packed path's own first pass (``of_hidden``). None: the readout as trained."""
        self.cost = cost or CostModel()
        self.choice_orders = "given"
        """How choice questions are read (``core.decision.rotation.CHOICE_ORDERS``); an adapter arm's card sets it."""
        cfg = body.config
        self.max_positions = getattr(cfg, "max_position_embeddings", None) or 1 << 30
        check_seam(tokenizer, render_prefix("A short state."), render_suffix("Which one?", ["x", "y"]))

    def state_familiarity(self, text: str) -> Familiarity | EmbeddingFamiliarity | None:
        """By its training vocabulary; over a real base (whose web vocabulary is none: ``training_tokenizer`` None) by
        its softening's reference states when it has them (``Softening.familiarity``; a prefix just answered is not
        read again)."""
        if self.training_tokenizer is None and hasattr(self.temperature, "familiarity"):
            below = float(self.temperature.softening.warn_below[0])
            return EmbeddingFamiliarity(self.temperature.familiarity(self._prefix(text.strip())), below)
        return by_vocabulary(self.training_tokenizer, text)

    @cached_property
    def max_token_chars(self) -> int:
        return longest_token(self.tokenizer)

    @classmethod
    def from_causal_lm(cls, model, tokenizer, **kwargs) -> "Decider":
        """Decider over a CausalLM: its body, and its output-embedding rows of " A" .. " Z"."""
        ids = torch.tensor(letter_token_ids(tokenizer))
        rows = model.get_output_embeddings().weight[ids].detach().float().clone()
        return cls(model.base_model, rows, tokenizer, **kwargs)

    # ---- requests

    def overruns(self, state: str | Mapping[str, Any], questions: Sequence[Question]) -> list[Overrun]:
        """Which parts of a request exceed the limits, with their counts (empty: it fits).

        The one accounting of the limits: ``tokenize`` refuses by it and the Decisions tab reports it.
        """
        text = render_state(state).strip()
        suffixes = [encode(self.tokenizer, render_suffix(q.text, q.options)) for q in questions]
        return self._overruns(text, encode(self.tokenizer, text), suffixes, questions)

    def limit_errors(self, state: str | Mapping[str, Any], questions: Mapping[str, Any]) -> dict[str, str]:
        """``overruns`` as messages, ``{"state" | qid: reason}``: which part of a System One request is too long."""
        asked = [q.primitive for q in system_one.questions(questions)]
        if far := far_parts(render_state(state).strip(), asked, self.limits, self.max_token_chars):
            return {part: f"{said}. Shorten it (nothing is cut silently)." for part, said in far.items()}
        errors: dict[str, str] = {}
        for o in self.overruns(state, asked):
            if o.part == "state":
                errors["state"] = (f"the state is {o.tokens} tokens; this model takes at most {o.limit}. "
                                   "Shorten it (nothing is cut silently).")
            else:
                errors[o.part] = (f"this question and its options are {o.tokens} tokens; the model takes at most "
                                  f"{o.limit} per question")
        return errors

    def _overruns(self, text, state_ids, suffixes, questions) -> list[Overrun]:
        header = len(self._prefix(text)) - len(state_ids)  # "User: Context:\n", "\n\n", BOS
        # a suffix over its own limit is reported (or cut) by itself: the state makes room for it as cut, so an
        # over-long question never reads as an over-long state
        longest = max((min(len(s), self.limits.max_suffix_tokens) for s in suffixes), default=0)
        s_lim = min(self.limits.max_state_tokens, self.max_positions - header - longest)
        out = [Overrun("state", len(state_ids), s_lim)] if len(state_ids) > s_lim else []
        return out + [Overrun(_part(q, i), len(s), self.limits.max_suffix_tokens)
                      for i, (q, s) in enumerate(zip(questions, suffixes)) if len(s) > self.limits.max_suffix_tokens]

    def _prefix(self, text: str) -> list[int]:
        bos = [self.tokenizer.bos_token_id] if self.prepend_bos else []
        return bos + encode_prefix(self.tokenizer, render_prefix(text))

    def tokenize(self, state: str | Mapping[str, Any], questions: Sequence[Question], *,
                 truncate: bool = False) -> Request:
        """Tokenize prefix and suffixes, check the seam, enforce (or apply) the limits."""
        if not questions:
            raise QuestionError("no questions were given")
        text = render_state(state).strip()
        if not truncate and (too_long := unfittable(text, questions, self.limits, self.max_token_chars)):
            raise too_long
        state_ids = encode(self.tokenizer, text)
        suffixes = [encode(self.tokenizer, render_suffix(q.text, q.options)) for q in questions]
        over = self._overruns(text, state_ids, suffixes, questions)
        if over and not truncate:
            raise _too_long_message(over)
        removed_state, cuts = 0, [0] * len(questions)
        for o in over:
            if o.part == "state":
                if o.limit < 1:
                    raise RequestTooLong(f"the questions alone fill the model's {self.max_positions} positions")
                text = self.tokenizer.decode(state_ids[-o.limit:]).strip()
                removed_state = max(1, len(state_ids) - len(encode(self.tokenizer, text)))
        for i, q in enumerate(questions):
            if len(suffixes[i]) > self.limits.max_suffix_tokens:
                new = self._cut_question(q)
                suffixes[i], cuts[i] = new, len(suffixes[i]) - len(new)
        prefix = self._prefix(text)
        check_seam(self.tokenizer, render_prefix(text), render_suffix(questions[0].text, questions[0].options))
        truncs = [Truncation(state_tokens_removed=removed_state, question_tokens_removed=c)
                  if removed_state or c else None for c in cuts]
        n_state = len(encode(self.tokenizer, text)) if removed_state else len(state_ids)
        req = Request(prefix, suffixes, [len(q.options) for q in questions], truncs, n_state)
        return self._in_orders(req, questions) if self.choice_orders != "given" else req

    def _in_orders(self, req: Request, questions: Sequence[Question]) -> Request:
        """The request with each question read in every order ``choice_orders`` asks for (the given one first, its
        suffix as tokenized); a reshown question over its limit is cut as the given one would be."""
        suffixes, n_options, readings = [], [], []
        for i, q in enumerate(questions):
            for order in question_orders(q.kind, q.options, self.choice_orders):
                shown = type(q)(q.text, reorder(q.options, order), qid=q.qid) if order != sorted(order) else None
                ids = req.suffixes[i] if shown is None else encode(self.tokenizer, render_suffix(shown.text, shown.options))
                if shown is not None and (len(ids) > self.limits.max_suffix_tokens or req.truncations[i]):
                    ids = self._cut_question(shown)
                suffixes.append(ids)
                n_options.append(len(q.options))
                readings.append((i, order))
        return Request(req.prefix, suffixes, n_options, req.truncations, req.state_tokens, readings)

    def _cut_question(self, q: Question) -> list[int]:
        """The published rule: cut the question's text from its start (its end is kept) until the
        suffix fits; the options block and the answer cue are never cut. Pieces can merge at the
        seams after a cut, so the cut repeats (a few rounds) until it fits."""
        limit, text = self.limits.max_suffix_tokens, q.text.strip()
        fixed = len(encode(self.tokenizer, render_suffix("", q.options)))
        for _ in range(8):
            suffix = encode(self.tokenizer, render_suffix(text, q.options))
            if len(suffix) <= limit:
                return suffix
            ids = encode(self.tokenizer, text)
            if limit - fixed < 1 or not ids:
                break
            text = self.tokenizer.decode(ids[-min(limit - fixed, len(ids) - 1):]).strip()
        raise RequestTooLong(f"question {_part(q, q.text[:30])!r}: its options alone exceed {limit} tokens "
                             f"({fixed} without any question text); options are never cut")

    # ---- answers

    @torch.no_grad()
    def decide(self, state: str | Mapping[str, Any], questions: Sequence[Question] | Mapping[str, Question], *,
               path: str = "auto", truncate: bool = False) -> list[Answer] | dict[str, Answer]:
        """Answer every question about ``state``; a dict of questions gives a dict of answers."""
        keyed = isinstance(questions, Mapping)
        qs = list(questions.values()) if keyed else list(questions)
        for q in qs:
            if not isinstance(q, Question):
                raise QuestionError(f"expected Choice, Score or Noul, got {type(q).__name__}")
        req = self.tokenize(state, qs, truncate=truncate)
        probs = self.probabilities(req, path=path)
        answers = [make_answer(q, probs[i, : len(q.options)].tolist(), req.truncations[i]) for i, q in enumerate(qs)]
        return dict(zip(questions.keys(), answers)) if keyed else answers

    def score(self, state: Any, questions: Mapping[str, Any] | None = None, *,
              path: str = "auto", truncate: bool = False) -> dict:
        """A System One request -> ``{"answers", "usage"}`` (see ``core.decision.system_one``).

        Call it with the whole request (``score({"state": ..., "questions": ...})``) or with its two
        parts; answers carry System One's fields plus our documented extras.
        """
        state, specs = system_one.split_request(state, questions)
        asked = system_one.questions(specs)
        req = self.tokenize(state, [q.primitive for q in asked], truncate=truncate)
        chosen = self.choose_path(req) if path == "auto" else path
        with torch.no_grad():
            probs = self.probabilities(req, path=chosen)
        answers = {q.name: system_one.answer(q, probs[i, : len(q.options)].tolist(), req.truncations[i])
                   for i, q in enumerate(asked)}
        removed = max((t.state_tokens_removed for t in req.truncations if t), default=0)
        usage = {"input_tokens": len(req.prefix) + sum(len(s) for s in req.suffixes), "output_tokens": 0,
                 "state_tokens": req.state_tokens, "prefix_tokens": len(req.prefix), "state_truncated": removed > 0,
                 "state_tokens_removed": removed, "questions": len(asked), "path": chosen}
        return {"answers": answers, "usage": usage}

    def choose_path(self, req: Request) -> str:
        """The path the cost model predicts fastest for this request's shape."""
        shape = Shape(len(req.prefix), [len(s) for s in req.suffixes], self.body.config)
        return self.cost.choose(shape, self.limits)

    @torch.no_grad()
    def probabilities(self, req: Request, *, path: str = "auto") -> torch.Tensor:
        """Option probabilities [questions, 26] (exact zeros beyond each option count)."""
        path = self.choose_path(req) if path == "auto" else path
        if path not in PATHS:
            raise ValueError(f"unknown path {path!r}; expected 'auto' or one of {list(PATHS)}")
        if path == "reference":
            hidden, states = self._reference(req), None
        else:  # their first pass over the prefix reads its states at the softening's layer on the way
            hidden, states = {"shared": self._shared, "packed": self._packed}[path](req)
        logits = readout(hidden, self.rows, req.n_options, self.bias)
        if self.temperature is not None:
            t = self.temperature(req.prefix) if states is None else self.temperature.of_hidden(states, req.prefix)
            logits = logits / t
        probs = torch.softmax(logits, dim=-1)
        return probs if req.readings is None else merge_all(probs, req.readings, len(req.truncations))

    # ---- the three paths; each returns final hidden states [questions, hidden] at the readout tokens

    def _reference(self, req: Request) -> torch.Tensor:
        dev, out = self.device, []
        for s in req.suffixes:
            ids = torch.tensor([req.prefix + s], device=dev)
            out.append(self.body(input_ids=ids, use_cache=False).last_hidden_state[0, -1].clone())  # no view: frees the rest
        return torch.stack(out)

    def _prefill(self, prefix: list[int], states_at: int | None = None) -> tuple[list, torch.Tensor | None]:
        """The prefix's keys and values per layer, and (``states_at`` given) its input states to that layer [P, H]."""
        ids, cache = torch.tensor([prefix], device=self.device), DynamicCache()
        out = self.body(input_ids=ids, cache=cache, use_cache=True, output_hidden_states=states_at is not None)
        states = out.hidden_states[states_at][0] if states_at is not None else None
        return [(layer.keys, layer.values) for layer in cache.layers], states

    def _shared(self, req: Request) -> tuple[torch.Tensor, torch.Tensor | None]:
        dev, p = self.device, len(req.prefix)
        (kv, states), out = self._prefill(req.prefix, getattr(self.temperature, "layer", None)), []
        step = self.limits.question_chunk
        for start in range(0, len(req.suffixes), step):
            chunk = req.suffixes[start:start + step]
            b, width = len(chunk), max(len(s) for s in chunk)
            ids = torch.zeros(b, width, dtype=torch.long, device=dev)
            mask = torch.zeros(b, p + width, dtype=torch.long, device=dev)
            mask[:, :p] = 1
            for i, s in enumerate(chunk):
                ids[i, : len(s)] = torch.tensor(s, device=dev)
                mask[i, p: p + len(s)] = 1
            cache = holding([(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in kv])
            pos = (p + torch.arange(width, device=dev)).unsqueeze(0).expand(b, -1)
            h = self.body(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True).last_hidden_state
            last = torch.tensor([len(s) - 1 for s in chunk], device=dev)
            out.append(h[torch.arange(b, device=dev), last])
        return torch.cat(out), states

    def _packed(self, req: Request) -> tuple[torch.Tensor, torch.Tensor | None]:
        dev, p, out = self.device, len(req.prefix), []
        kv, states, states_at = None, None, getattr(self.temperature, "layer", None)
        for chunk in _token_chunks(req.suffixes, self.limits.packed_chunk_tokens):
            head = req.prefix if kv is None else []
            ids, pos, mask, last = packed_inputs(head, chunk, p, self.body.dtype, dev)
            cache = holding(kv) if kv is not None else DynamicCache()
            read = states_at is not None and kv is None  # the first chunk holds the prefix, which sees only itself
            run = self.body(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True,
                            output_hidden_states=read)
            if read:
                states = run.hidden_states[states_at][0, :p]
            if kv is None:
                kv = [(layer.keys[:, :, :p], layer.values[:, :, :p]) for layer in cache.layers]
            out.append(run.last_hidden_state[0, last])
        return torch.cat(out), states


def _part(q: Question, index) -> str:
    return str(q.qid) if q.qid is not None else str(index)


def far_parts(text: str, questions: Sequence[Question], limits: Limits, token_chars: int) -> dict[str, str]:
    """Each part of a request that no tokenization can fit, ``{"state" | qid: what is over}``, found without
    tokenizing.

    A part of n characters needs at least n / ``token_chars`` tokens, so a state of more than
    ``max_state_tokens x token_chars`` characters (or a question over its suffix limit likewise) is
    over its limit: a 50 MB state is refused in microseconds instead of tokenized for minutes.
    Parts up to ``EXACT_COUNT_CHARS`` are left to the exact count, which names every part over.
    """
    parts = [("state", "the state", len(text), limits.max_state_tokens)]
    parts += [(_part(q, i), f"question {_part(q, i)!r}", len(q.text) + sum(len(o) for o in q.options),
               limits.max_suffix_tokens) for i, q in enumerate(questions)]
    return {key: f"{name} is {n:,} characters, more than {limit} tokens can hold ({limit * token_chars:,}: "
                 f"{token_chars} characters in the longest token)"
            for key, name, n, limit in parts if n > max(EXACT_COUNT_CHARS, limit * token_chars)}


def unfittable(text: str, questions: Sequence[Question], limits: Limits, token_chars: int) -> RequestTooLong | None:
    """The refusal of a request with a part that no tokenization can fit (``far_parts``), or None."""
    far = far_parts(text, questions, limits, token_chars)
    return RequestTooLong(f"request too long: {'; '.join(far.values())}.",
                          "Pass truncate=True to cut it as published.") if far else None


def _too_long_message(over: list[Overrun]) -> RequestTooLong:
    parts = [f"the state is {o.tokens} tokens, limit {o.limit}" if o.part == "state"
             else f"question {o.part!r} is {o.tokens} tokens, limit {o.limit}" for o in over]
    return RequestTooLong("request too long: " + "; ".join(parts) + ".",
                          "Pass truncate=True to cut it as published (the state keeps its end, a question's text "
                          "keeps its end, options are never cut; each answer then says so).")


def _token_chunks(suffixes: list[list[int]], budget: int) -> list[list[list[int]]]:
    """Consecutive groups of suffixes with at most ``budget`` tokens each (at least one per group)."""
    chunks, cur, n = [], [], 0
    for s in suffixes:
        if cur and n + len(s) > budget:
            chunks.append(cur)
            cur, n = [], 0
        cur.append(s)
        n += len(s)
    return chunks + [cur]


def packed_inputs(head: list[int], suffixes: list[list[int]], p: int, dtype, device):
    """Ids, positions, additive 4D mask and readout indices for one packed forward.

    ``head`` is the prefix when it is part of this forward (else it is already in the cache, length
    ``p``). Keys are [prefix | all suffixes]; a suffix token attends to every prefix token and to
    the earlier tokens of its own suffix; prefix tokens are causal among themselves. A 4D mask is
    passed through by transformers' masking_utils unchanged; eager attention ADDS it to the scores
    (so a bool mask would be wrong there) and sdpa accepts an additive float mask too, so we build
    it additive: 0 where allowed, the dtype's minimum elsewhere.
    """
    h, total = len(head), sum(len(s) for s in suffixes)
    ids = torch.tensor([head + [t for s in suffixes for t in s]], device=device)
    pos = list(range(h)) + [p + j for s in suffixes for j in range(len(s))]
    allow = torch.zeros(h + total, p + total, dtype=torch.bool, device=device)
    allow[:h, :h] = torch.ones(h, h, dtype=torch.bool, device=device).tril()
    allow[h:, :p] = True
    start, last = 0, []
    for s in suffixes:
        n = len(s)
        allow[h + start: h + start + n, p + start: p + start + n] = torch.ones(n, n, dtype=torch.bool, device=device).tril()
        start += n
        last.append(h + start - 1)
    mask = torch.zeros(allow.shape, dtype=dtype, device=device).masked_fill_(~allow, torch.finfo(dtype).min)
    return ids, torch.tensor([pos], device=device), mask[None, None], torch.tensor(last, device=device)
