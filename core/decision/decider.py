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
from typing import Any, Mapping, Sequence

import torch
from transformers import DynamicCache

from core.decision.cost import CostModel, Shape
from core.decision.prompt import check_seam, encode, letter_token_ids, render_prefix, render_suffix
from core.decision.questions import (
    Answer, Question, QuestionError, Truncation, make_answer, render_state, typed_answer, typed_question,
)
from core.decision.readout import readout

PATHS = ("reference", "shared", "packed")


class RequestTooLong(ValueError):
    """A request over the model's token limits (and the caller did not opt into truncation).

    ``reason`` says what is over which limit; ``hint`` how a library caller can opt into cutting.
    Front ends that offer no such option show ``reason`` alone.
    """

    def __init__(self, reason: str, hint: str = ""):
        super().__init__(f"{reason} {hint}".strip())
        self.reason, self.hint = reason, hint


@dataclass(frozen=True)
class Limits:
    """Token limits of a request; the published model cut silently at 1536 / 448."""

    max_prefix_tokens: int = 1536
    """Prefix = "User: Context:" header + state + blank line (+ BOS if any)."""
    max_suffix_tokens: int = 448
    """One question's suffix: question, lettered options and answer cue."""
    question_chunk: int = 8
    """Shared path: questions per batched forward (bounds memory)."""
    packed_chunk_tokens: int = 256
    """Packed path: suffix tokens per forward (bounds the mask and activations)."""


@dataclass
class Request:
    """A tokenized request: prefix ids, one suffix per question, and what was cut."""

    prefix: list[int]
    suffixes: list[list[int]]
    n_options: list[int]
    truncations: list[Truncation | None]


class Decider:
    """Letter-readout decisions over any causal-LM body plus its 26 letter rows."""

    def __init__(self, body, rows: torch.Tensor, tokenizer, *, prepend_bos: bool = False,
                 limits: Limits = Limits(), cost: CostModel | None = None):
        self.body = body.eval()
        self.device = next(body.parameters()).device
        self.rows = rows.detach().float().to(self.device)
        if tuple(self.rows.shape) != (26, body.config.hidden_size):
            raise ValueError(f"letter rows must be (26, {body.config.hidden_size}), got {tuple(self.rows.shape)}")
        self.tokenizer = tokenizer
        self.letter_ids = letter_token_ids(tokenizer)
        self.prepend_bos = prepend_bos
        if prepend_bos and tokenizer.bos_token_id is None:
            raise ValueError("prepend_bos=True but the tokenizer has no BOS token")
        self.limits = limits
        self.cost = cost or CostModel()
        cfg = body.config
        self.max_positions = getattr(cfg, "max_position_embeddings", None) or 1 << 30
        check_seam(tokenizer, render_prefix("A short state."), render_suffix("Which one?", ["x", "y"]))

    @classmethod
    def from_causal_lm(cls, model, tokenizer, **kwargs) -> "Decider":
        """Decider over a CausalLM: its body, and its output-embedding rows of " A" .. " Z"."""
        ids = torch.tensor(letter_token_ids(tokenizer))
        rows = model.get_output_embeddings().weight[ids].detach().float().clone()
        return cls(model.base_model, rows, tokenizer, **kwargs)

    # ---- requests

    def tokenize(self, state: str | Mapping[str, Any], questions: Sequence[Question], *,
                 truncate: bool = False) -> Request:
        """Tokenize prefix and suffixes, check the seam, enforce (or apply) the limits."""
        if not questions:
            raise QuestionError("no questions were given")
        text = render_state(state).strip()
        bos = [self.tokenizer.bos_token_id] if self.prepend_bos else []
        prefix = bos + encode(self.tokenizer, render_prefix(text))
        suffixes = [encode(self.tokenizer, render_suffix(q.text, q.options)) for q in questions]
        lim = self.limits
        p_lim = min(lim.max_prefix_tokens, self.max_positions - max(len(s) for s in suffixes))
        too_long = [i for i, s in enumerate(suffixes) if len(s) > lim.max_suffix_tokens]
        if (len(prefix) > p_lim or too_long) and not truncate:
            raise self._too_long_message(prefix, p_lim, suffixes, too_long, questions)
        removed_state = 0
        if len(prefix) > p_lim:
            prefix, removed_state = self._cut_state(text, bos, p_lim)
        cuts = [0] * len(questions)
        for i in too_long:
            suffixes[i], cuts[i] = self._cut_question(questions[i])
        check_seam(self.tokenizer, self.tokenizer.decode(prefix[len(bos):]), render_suffix(questions[0].text, questions[0].options))
        truncs = [Truncation(state_tokens_removed=removed_state, question_tokens_removed=c)
                  if removed_state or c else None for c in cuts]
        return Request(prefix, suffixes, [len(q.options) for q in questions], truncs)

    def _too_long_message(self, prefix, p_lim, suffixes, too_long, questions) -> "RequestTooLong":
        parts = []
        if len(prefix) > p_lim:
            parts.append(f"the state prefix is {len(prefix)} tokens, limit {p_lim}")
        for i in too_long:
            name = questions[i].qid if questions[i].qid is not None else i
            parts.append(f"question {name!r} is {len(suffixes[i])} tokens, limit {self.limits.max_suffix_tokens}")
        return RequestTooLong("request too long: " + "; ".join(parts) + ".",
                              "Pass truncate=True to cut it (the state keeps its end, a question keeps its "
                              "start, options are never cut; each answer then says so).")

    def _cut_state(self, text: str, bos: list[int], limit: int) -> tuple[list[int], int]:
        full = len(bos) + len(encode(self.tokenizer, render_prefix(text)))
        ids = encode(self.tokenizer, text)
        keep = len(ids) - (full - limit)
        while keep > 0:
            prefix = bos + encode(self.tokenizer, render_prefix(self.tokenizer.decode(ids[-keep:])))
            if len(prefix) <= limit:
                return prefix, full - len(prefix)
            keep -= len(prefix) - limit
        raise RequestTooLong(f"the prompt header alone exceeds the prefix limit of {limit} tokens")

    def _cut_question(self, q: Question) -> tuple[list[int], int]:
        full = len(encode(self.tokenizer, render_suffix(q.text, q.options)))
        ids = encode(self.tokenizer, q.text.strip())
        keep = len(ids) - (full - self.limits.max_suffix_tokens)
        while keep > 0:
            suffix = encode(self.tokenizer, render_suffix(self.tokenizer.decode(ids[:keep]), q.options))
            if len(suffix) <= self.limits.max_suffix_tokens:
                return suffix, full - len(suffix)
            keep -= len(suffix) - self.limits.max_suffix_tokens
        name = q.qid if q.qid is not None else q.text[:30]
        raise RequestTooLong(f"question {name!r}: its options alone exceed {self.limits.max_suffix_tokens} tokens; "
                             "options are never cut")

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

    def score(self, state: str | Mapping[str, Any], questions: Mapping[str, Mapping], *,
              path: str = "auto", truncate: bool = False) -> dict:
        """The typed-criteria call: ``{qid: {"type", "instructions", "criteria"}}`` -> answers and usage."""
        if not isinstance(questions, Mapping) or not questions:
            raise QuestionError("questions must be a non-empty object {question_id: {...}}")
        typed = [typed_question(str(k), v) for k, v in questions.items()]
        req = self.tokenize(state, [t.question for t in typed], truncate=truncate)
        chosen = self.choose_path(req) if path == "auto" else path
        with torch.no_grad():
            probs = self.probabilities(req, path=chosen)
        answers = {t.qid: typed_answer(t, make_answer(t.question, probs[i, : len(t.question.options)].tolist(),
                                                      req.truncations[i])) for i, t in enumerate(typed)}
        removed = max((t.state_tokens_removed for t in req.truncations if t), default=0)
        usage = {"input_tokens": len(req.prefix) + sum(len(s) for s in req.suffixes),
                 "state_tokens": len(req.prefix), "state_truncated": removed > 0,
                 "state_tokens_removed": removed, "questions": len(typed), "path": chosen}
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
        hidden = {"reference": self._reference, "shared": self._shared, "packed": self._packed}[path](req)
        return torch.softmax(readout(hidden, self.rows, req.n_options), dim=-1)

    # ---- the three paths; each returns final hidden states [questions, hidden] at the readout tokens

    def _reference(self, req: Request) -> torch.Tensor:
        dev, out = self.device, []
        for s in req.suffixes:
            ids = torch.tensor([req.prefix + s], device=dev)
            out.append(self.body(input_ids=ids, use_cache=False).last_hidden_state[0, -1].clone())  # no view: frees the rest
        return torch.stack(out)

    def _prefill(self, prefix: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        ids, cache = torch.tensor([prefix], device=self.device), DynamicCache()
        self.body(input_ids=ids, cache=cache, use_cache=True)
        return [(layer.keys, layer.values) for layer in cache.layers]

    def _shared(self, req: Request) -> torch.Tensor:
        dev, p = self.device, len(req.prefix)
        kv, out = self._prefill(req.prefix), []
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
            cache = DynamicCache(ddp_cache_data=[(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in kv])
            pos = (p + torch.arange(width, device=dev)).unsqueeze(0).expand(b, -1)
            h = self.body(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True).last_hidden_state
            last = torch.tensor([len(s) - 1 for s in chunk], device=dev)
            out.append(h[torch.arange(b, device=dev), last])
        return torch.cat(out)

    def _packed(self, req: Request) -> torch.Tensor:
        dev, p, out = self.device, len(req.prefix), []
        kv = None
        for chunk in _token_chunks(req.suffixes, self.limits.packed_chunk_tokens):
            head = req.prefix if kv is None else []
            ids, pos, mask, last = packed_inputs(head, chunk, p, self.body.dtype, dev)
            cache = DynamicCache(ddp_cache_data=kv) if kv is not None else DynamicCache()
            h = self.body(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True).last_hidden_state
            if kv is None:
                kv = [(layer.keys[:, :, :p], layer.values[:, :, :p]) for layer in cache.layers]
            out.append(h[0, last])
        return torch.cat(out)


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
