"""The pooled readout: a frozen real body's mean state of the state text, scored against each option's.

Why this design exists: on SmolLM2-135M-Instruct the letter readout's adapter did not learn, on 2 CPUs,
to carry what the body knows about a ticket to the letter in front of the matching option, while a
linear readout of the body's mean state over the ticket names the department of unseen ticket families
(results/smollm2_decision/fit_probes.md). So the body stays frozen and only a bilinear head trains (the warmup
loss is convex in ``M`` and ``w``, fitted by full-batch L-BFGS):

    logit(option) = z_s . M z_o + w . z_o

``z_s`` is the standardised mean of layer ``layer``'s input states over the state's tokens (read once per
state: every question shares it); ``z_o`` the same over the option's own tokens in ``"Question: <q>\\nAnswer:
<option>"`` (no state), less the mean over the question's options (what they share adds the same logit to
each; centred, their differences are what the scale is fitted to). The softmax covers the question's
options. A card with ``options_read = "in_context"`` reads each option after the state and its question instead
(``PooledReader.options(pairs, state)``), for every request: only then do an option's states see what the state says
of it (which value a request gives which field: results/cued_real_body/probes.md).

A folder holds the head (``pooled_head.safetensors``), the base's ``config.json`` and tokenizer (so ``transformers
serve`` can host it: ``core.decision.auto_model``) and ``pooled.json`` (format ``clarifylab-pooled-readout-v1``: the
base by location and sha256, the layer, how options are read, every file's sha256, the training record); the base's
weights come from its package and are never copied.

    decider = open_model("checkpoints/decision-smollm2-pooled-rlcd")
    decider.score("My card was charged twice.", {"team": {"type": "choice", "instructions": "Which team?",
                                                          "criteria": {"billing": "", "security": ""}}})
"""

import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import torch
from pydantic import BaseModel, ConfigDict
from safetensors.torch import save_file

from core.decision import system_one
from core.decision.decider import Limits, unfittable
from core.decision.evaluation.familiarity import FAMILIAR_BELOW, EmbeddingFamiliarity
from core.decision.model import RequestTooLong
from core.decision.prompt import SeamError, check_seam, encode, encode_prefix, header_tokens, longest_token, render_prefix
from core.decision.questions import Question, QuestionError, render_state
from core.decision.softening import familiarity_of, nearness_of, temperature_of
from core.models.entries import POOLED_DESIGN
from core.models.layers import RecentStates, first_layers, holding, mean_states, right_padded

FORMAT = "clarifylab-pooled-readout-v1"
CARD_FILE, HEAD_FILE = "pooled.json", "pooled_head.safetensors"
ANSWER_CUE = "\nAnswer:"
OPTION_TEMPLATE = "Question: {question}" + ANSWER_CUE + " {option}"
"""What an option's features are read from: its own tokens after the question, without the state."""
LIMITS = Limits(max_state_tokens=4096, max_suffix_tokens=448)
"""A state's tokens, and one option's read with its question (``OPTION_TEMPLATE``); over them a request is refused."""
OPTION_CACHE = 4096
"""Option states kept between requests (least recently used dropped): a visitor's new options cannot grow memory."""
READ_STATES = 512
"""Mean states of the latest states answered, kept (oldest dropped) so their familiarity reads no state twice."""


class PooledModelError(ValueError):
    """A pooled-readout folder that cannot be trusted or loaded, and why."""


class PooledCard(BaseModel):
    """pooled.json: what the loader checks, and the training record."""

    model_config = ConfigDict(extra="forbid")
    format: str
    base_model: str
    """The base's location as the model loaders take it (a packaged ``distribution/file.gguf``)."""
    base_sha256: str
    layer: int
    """The states read are the input of this layer (the output of the first ``layer`` layers)."""
    options_read: Literal["alone", "in_context"] = "alone"
    """``alone``: an option's tokens after its question only (kept across requests); ``in_context``: after the state
    and its question, so the option's states see what the state says of it (read for every request)."""
    sha256: dict[str, str]
    training: dict[str, Any] = {}


class PooledHead(torch.nn.Module):
    """The bilinear head over standardised state and option features; ``familiar`` holds the training
    states' squared distances (standardised, per dimension) at percentiles 0..100 (``familiarity``: an
    embedding-based out-of-distribution signal, saved with every head; ``PooledDecider.state_familiarity``).
    ``neighbours`` (unit, standardised training states; none for a head as trained) and ``softening`` (a, b) divide
    every logit by T = exp(a + b (s - SOFTEN_AT)), s the state's ``nearness``: a head softens its answers on text
    far from what it was trained on (``train.decision_pooled_temperature`` fits a and b)."""

    def __init__(self, hidden: int, neighbours: int = 0):
        super().__init__()
        self.register_buffer("state_mean", torch.zeros(hidden))
        for name in ("state_scale", "option_scale"):
            self.register_buffer(name, torch.ones(hidden))
        self.register_buffer("familiar", torch.zeros(101))
        self.register_buffer("neighbours", torch.zeros(neighbours, hidden))
        self.register_buffer("softening", torch.zeros(2))
        self.m = torch.nn.Parameter(torch.zeros(hidden, hidden))
        self.w = torch.nn.Parameter(torch.zeros(hidden))

    def standardise(self, states: torch.Tensor, options: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """z_s [B, H], and z_o [B, K, H]: each option less its question's mean option, scaled."""
        m = mask[..., None].float()
        centred = (options - (options * m).sum(1, keepdim=True) / m.sum(1, keepdim=True).clamp(min=1.0)) * m
        return self.state_z(states), centred / self.option_scale

    def state_z(self, states: torch.Tensor) -> torch.Tensor:
        """z_s: states standardised by the warmup pool's per-dimension mean and scale."""
        return (states - self.state_mean) / self.state_scale

    def forward(self, states: torch.Tensor, options: torch.Tensor, mask: torch.Tensor,
                temperature: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [B, K] for states [B, H] and options [B, K, H]; options where ``mask`` is False get -inf.
        ``temperature`` [B]: the states' T when the caller has it already (else measured here)."""
        logits = self.scores(*self.standardise(states, options, mask))
        if len(self.neighbours):
            logits = logits / (self.temperature(states) if temperature is None else temperature)[:, None]
        return logits.masked_fill(~mask, float("-inf"))

    def scores(self, zs: torch.Tensor, zo: torch.Tensor) -> torch.Tensor:
        """The bilinear's scores [B, K] of standardised states [B, H] and options [B, K, H]: no temperature, no mask."""
        return torch.einsum("bh,bkh->bk", zs @ self.m, zo) + zo @ self.w

    def unit_states(self, states: torch.Tensor) -> torch.Tensor:
        """Standardised states scaled to unit length: what ``neighbours`` holds and ``nearness`` compares."""
        return torch.nn.functional.normalize(self.state_z(states), dim=-1)

    def nearness(self, states: torch.Tensor) -> torch.Tensor:
        """Mean cosine similarity of each state to its ``NEAREST`` nearest ``neighbours`` (1 for a head without them:
        nothing to be far from)."""
        return nearness_of(self.unit_states(states), self.neighbours)

    def temperature(self, states: torch.Tensor, nearness: torch.Tensor | None = None) -> torch.Tensor:
        """T per state (1 for a head without neighbours); ``nearness`` when the caller has measured it."""
        if not len(self.neighbours):
            return torch.ones(len(states))
        return temperature_of(self.nearness(states) if nearness is None else nearness, self.softening)

    def familiarity(self, states: torch.Tensor) -> torch.Tensor:
        """Share of training states farther from their mean than each of ``states`` (1: typical, 0: beyond all)."""
        return familiarity_of(self.state_z(states), self.familiar)


class PooledReader:
    """The frozen body's first ``layer`` layers, read as mean states of texts (no grad, batched)."""

    def __init__(self, decoder, tokenizer, layer: int):
        self.lower, self.tokenizer, self.layer = first_layers(decoder, layer), tokenizer, layer
        self.header = header_tokens(tokenizer)
        """Tokens of the prompt's header (``User: Context:``), left out of a state's mean."""

    def mean_states(self, ids: Sequence[list[int]], skip: Sequence[int], batch: int = 16) -> torch.Tensor:
        """[N, H]: each sequence's mean state over its positions from ``skip[i]`` on."""
        return mean_states(self.lower, ids, skip, batch)

    def state_ids(self, state: str) -> list[int]:
        return encode_prefix(self.tokenizer, render_prefix(state))

    def states(self, texts: Sequence[str]) -> torch.Tensor:
        """Mean states of states (the prompt's prefix without its header)."""
        return self.mean_states([self.state_ids(t) for t in texts], [self.header] * len(texts))

    def options(self, pairs: Sequence[tuple[str, str]], state: str | None = None) -> torch.Tensor:
        """Mean states of each option's own tokens, read after its question (``OPTION_TEMPLATE``), and after the
        state's prefix when ``state`` is given (options read in context: the prefix read once, shared)."""
        before = "" if state is None else render_prefix(state)
        texts = [option_text(q, o) for q, o in pairs]
        if before and texts:
            try:
                split = [check_seam(self.tokenizer, before, t) for t in texts]
            except SeamError:  # a tokenizer merging across the seam: each option read after the whole prefix again
                pass
            else:
                return self.after_prefix(split[0][0], [t for _, t in split], [self._head(t) for t in texts])
        return self.mean_states([encode(self.tokenizer, before + t) for t in texts], [self._head(before + t) for t in texts])

    def _head(self, text: str) -> int:
        """Tokens of ``text`` up to and with its answer cue: what comes before the option's own tokens."""
        return len(encode(self.tokenizer, text[: text.rindex(ANSWER_CUE) + len(ANSWER_CUE)]))

    def after_prefix(self, prefix: list[int], suffixes: Sequence[list[int]], skip: Sequence[int],
                     batch: int = 16) -> torch.Tensor:
        """[N, H]: each suffix's mean state from ``skip[i]`` on, read after ``prefix``, whose keys and values are
        computed once and shared by every batch (as the Decider's shared prefill does): as if each suffix were read
        with the prefix in front of it."""
        from transformers import DynamicCache

        out, p = [], len(prefix)
        with torch.no_grad():
            cache = DynamicCache()
            self.lower(input_ids=torch.tensor([prefix]), cache=cache, use_cache=True)
            kv = [(layer.keys, layer.values) for layer in cache.layers]
            for s in range(0, len(suffixes), batch):
                x, mask = right_padded([torch.tensor(one) for one in suffixes[s:s + batch]], torch.long)
                b = len(x)
                shared = holding([(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in kv])
                pos = (p + torch.arange(x.shape[1])).unsqueeze(0).expand(b, -1)
                full = torch.cat([torch.ones(b, p, dtype=torch.long), mask], 1)
                hidden = self.lower(input_ids=x, attention_mask=full, position_ids=pos, cache=shared,
                                    use_cache=True).last_hidden_state.float()
                keep = mask.clone().float()
                for i, k in enumerate(skip[s:s + batch]):
                    keep[i, :k] = 0.0
                out.append((hidden * keep[..., None]).sum(1) / keep.sum(1, keepdim=True).clamp(min=1.0))
        return torch.cat(out)


def option_text(question: str, option: str) -> str:
    return OPTION_TEMPLATE.format(question=question.strip(), option=option.strip())


def option_tensor(questions: Sequence[Question], option_states: Mapping[tuple[str, str], torch.Tensor],
                  hidden: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Options [Q, K, H] and mask [Q, K] of ``questions`` from per-(question, option) states."""
    k = max(len(q.options) for q in questions)
    opts, mask = torch.zeros(len(questions), k, hidden), torch.zeros(len(questions), k, dtype=torch.bool)
    for i, q in enumerate(questions):
        for j, o in enumerate(q.options):
            opts[i, j], mask[i, j] = option_states[(q.text, o)], True
    return opts, mask


# ---- the folder


def save_pooled(directory: str | Path, head: PooledHead, *, base: str, layer: int, training: dict,
                body_config, tokenizer, options_read: str = "alone") -> Path:
    """Write the head, the base's config and tokenizer (what ``transformers serve`` reads to pick the body
    type and tokenize) and the card hashing them all (the base by location and sha256)."""
    from core.decision.data.store import sha256_file
    from core.decision.export.adapter import base_weights, write_base_files

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: t.detach().float().contiguous().clone() for k, t in head.state_dict().items()}, str(out / HEAD_FILE),
              metadata={"format": "pt"})
    files = [HEAD_FILE] + write_base_files(out, body_config, tokenizer)
    card = PooledCard(format=FORMAT, base_model=base, base_sha256=sha256_file(base_weights(base)), layer=layer,
                      options_read=options_read, sha256={n: sha256_file(out / n) for n in files}, training=training)
    (out / CARD_FILE).write_text(json.dumps(card.model_dump(), indent=2) + "\n")
    return out


def read_card(directory: Path) -> PooledCard:
    """pooled.json validated, every file it hashes unchanged, the installed base the one it was trained on."""
    from core.decision.export.adapter import read_base_card

    return read_base_card(directory, CARD_FILE, PooledCard, FORMAT, (HEAD_FILE,), PooledModelError, "head")


def load_head(directory: Path, hidden: int) -> PooledHead:
    """The head's tensors, every one present with its shape (a broken file names what is wrong)."""
    from core.decision.export.published import _read_tensors

    tensors = _read_tensors(directory / HEAD_FILE)
    if not {"neighbours", "softening"} & set(tensors):  # saved before heads could soften: as trained
        tensors |= {"neighbours": torch.zeros(0, hidden), "softening": torch.zeros(2)}
    head = PooledHead(hidden, len(tensors.get("neighbours", ())))
    expected = {k: tuple(v.shape) for k, v in head.state_dict().items()}
    if set(tensors) != set(expected):
        raise PooledModelError(f"{HEAD_FILE} holds {sorted(tensors)}, expected {sorted(expected)}")
    for k, shape in expected.items():
        if tuple(tensors[k].shape) != shape or not torch.isfinite(tensors[k]).all():
            raise PooledModelError(f"{HEAD_FILE}: {k} has shape {tuple(tensors[k].shape)} (expected {shape}) "
                                   "or holds non-finite values")
    head.load_state_dict(tensors)
    return head.eval()


class PooledDecider(system_one.SystemOneModel):
    """The pooled readout as a decision model: one pass over the state, one short pass per new option."""

    path_name = "pooled"
    design = POOLED_DESIGN

    def __init__(self, reader: PooledReader, head: PooledHead, name: str = "", card: PooledCard | None = None):
        self.reader, self.head, self.name, self.card = reader, head, name, card
        self.tokenizer = reader.tokenizer
        self.token_chars = longest_token(self.tokenizer)
        self._options: OrderedDict[tuple[str, str], torch.Tensor] = OrderedDict()
        self._lock = threading.Lock()
        self._read = RecentStates(READ_STATES)

    def limit_errors(self, state: Any, questions: Mapping[str, Any]) -> dict[str, str]:
        """``{"state" | qid: reason}`` for each part of a System One request over the limits (empty: it fits)."""
        try:
            return self._checked(state, [q.primitive for q in system_one.questions(questions)])[1]
        except (QuestionError, RequestTooLong) as err:
            return {"state": str(err)}

    def state_ids(self, state: Any, questions: Sequence[Question]) -> list[int]:
        """The state's prefix ids; a request with a part over the limits is refused naming each (nothing is cut)."""
        ids, errors = self._checked(state, questions)
        if errors:
            raise RequestTooLong("request too long: " + "; ".join(errors.values()) + ".")
        return ids

    def _checked(self, state: Any, questions: Sequence[Question]) -> tuple[list[int], dict[str, str]]:
        """The state's ids and the parts over ``LIMITS``: a part no tokenization can fit is refused untokenized."""
        text = render_state(state)
        if far := unfittable(text.strip(), questions, LIMITS, self.token_chars):
            raise RequestTooLong(far.reason)  # without its hint: a pooled readout never truncates
        ids, errors = self.reader.state_ids(text), {}
        if len(ids) > LIMITS.max_state_tokens:
            errors["state"] = f"the state is {len(ids)} tokens; the pooled readout reads at most {LIMITS.max_state_tokens}"
        for i, q in enumerate(questions):
            longest = max(len(encode(self.tokenizer, option_text(q.text, o))) for o in q.options)
            if longest > LIMITS.max_suffix_tokens:
                errors[str(q.qid if q.qid is not None else i)] = (
                    f"question {q.qid or i!r} has an option read as {longest} tokens with its question; "
                    f"the pooled readout reads at most {LIMITS.max_suffix_tokens}")
        return ids, errors

    def option_states(self, questions: Sequence[Question], state: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Options [Q, K, H] and mask [Q, K] of ``questions`` about the rendered ``state``: read alone once and then
        kept, or (a card reading options in context) read after the state for every request."""
        wanted = {(q.text, o) for q in questions for o in q.options}
        if self.card is not None and self.card.options_read == "in_context":
            pairs = sorted(wanted)
            return option_tensor(questions, dict(zip(pairs, self.reader.options(pairs, state))), self.head.w.shape[0])
        with self._lock:  # concurrent requests share the kept states; one may drop what another reads
            if new := sorted(wanted - set(self._options)):
                self._options.update(zip(new, self.reader.options(new)))
            for key in wanted:  # most recently used last; the oldest go past OPTION_CACHE
                self._options.move_to_end(key)
            while len(self._options) > max(OPTION_CACHE, len(wanted)):
                self._options.popitem(last=False)
            return option_tensor(questions, self._options, self.head.w.shape[0])

    def logits(self, state_ids: list[int], options: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """[Q, K] option logits of one state (read once, shared by its questions); -inf where ``mask`` is False."""
        states = self.reader.mean_states([state_ids], [self.reader.header])
        self._read.keep(state_ids, states)  # kept for familiarity only: an answer always reads its state
        with torch.no_grad():
            return self.head(states.expand(len(options), -1), options, mask)

    def state_familiarity(self, text: str) -> EmbeddingFamiliarity:
        """How like its training states a rendered state is, in the body's own states (no word list); a state
        answered lately (an Ask, a calibration set's contexts) is not read again."""
        ids = self.reader.state_ids(text)
        if (states := self._read.get(ids)) is None:
            states = self.reader.mean_states([ids], [self.reader.header])
        return EmbeddingFamiliarity(float(self.head.familiarity(states)[0]), FAMILIAR_BELOW)

    def probabilities(self, state_ids: list[int], questions: Sequence[Question], state: str) -> list[list[float]]:
        """Each question's option probabilities, in declared order (``state``: the rendered state of ``state_ids``)."""
        probs = torch.softmax(self.logits(state_ids, *self.option_states(questions, state)), -1)
        return [probs[i, : len(q.options)].tolist() for i, q in enumerate(questions)]

    def _run(self, state: Any, specs: Mapping[str, Any]) -> tuple[dict, int]:
        asked = system_one.questions(specs)
        primitives = [q.primitive for q in asked]
        ids = self.state_ids(state, primitives)
        probs = self.probabilities(ids, primitives, render_state(state))
        return {q.name: system_one.answer(q, p) for q, p in zip(asked, probs)}, len(ids)


def load_pooled(directory: str | Path, name: str = "") -> PooledDecider:
    """Verify the folder, load its base through the one loader (shared copy), build the decider."""
    from core.models.loader import ModelLoadError, shared_causal_lm

    root = Path(directory)
    card = read_card(root)
    try:
        loaded = shared_causal_lm(card.base_model)
    except ModelLoadError as err:
        raise PooledModelError(str(err)) from None
    decoder = loaded.model.get_decoder()
    head = load_head(root, decoder.config.hidden_size)
    if not 1 <= card.layer <= len(decoder.layers):
        raise PooledModelError(f"{CARD_FILE}: layer {card.layer} outside the base's 1..{len(decoder.layers)}")
    return PooledDecider(PooledReader(decoder, loaded.tokenizer, card.layer), head, name or root.name, card)


def open_model(directory: str | Path, name: str = "") -> PooledDecider:
    """``core.decision.model.KINDS``' loader for pooled-readout folders."""
    try:
        return load_pooled(directory, name)
    except PooledModelError as err:
        raise ValueError(f"{name or directory}: {err}") from None
