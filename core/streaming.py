"""Streaming one agent turn from a chat model, with a Stop that halts the computation itself.

``model.generate`` runs in a worker thread and hands each new token to a queue; the caller
iterates over the growing text. A ``threading.Event`` is checked by a stopping criterion after
every token, so setting it (the Stop button, or the consumer going away) ends the forward passes
within one token, not just the display. Generation also ends at ``<|im_end|>``-style EOS or at
the end of the first ``</tool_call>`` block (one call per step: more text would be ignored).
"""

import queue
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from core.agent import TOOL_SCHEMAS

TOOL_CALL_END = "</tool_call>"


@dataclass(frozen=True)
class GenerationSettings:
    """How a live turn is sampled (defaults: the published model cards' chat settings)."""

    temperature: float = 0.7
    """0 means greedy decoding."""
    max_new_tokens: int = 120
    """Cap per turn; a model that never stops is cut here (endless text)."""
    seed: int = 0
    """Sampling seed; turn ``i`` of an episode samples with ``seed * 1000 + i``."""
    int8: bool = False
    """Load the model with int8 dynamic quantisation of its Linear layers."""

    def __post_init__(self):
        if not 0.0 <= self.temperature <= 5.0:
            raise ValueError(f"temperature must be in [0, 5], got {self.temperature}")
        if not 1 <= self.max_new_tokens <= 2048:
            raise ValueError(f"max new tokens must be in [1, 2048], got {self.max_new_tokens}")
        if not 0 <= self.seed < 2**31:
            raise ValueError(f"seed must be in [0, 2^31), got {self.seed}")


def prompt_ids(tokenizer: Any, messages: list[dict]) -> list[int]:
    """Token ids of the conversation, tools declared, thinking off, ready for the agent's turn."""
    ids = tokenizer.apply_chat_template(messages, tools=TOOL_SCHEMAS, add_generation_prompt=True,
                                        enable_thinking=False, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def stop_token_ids(tokenizer: Any) -> list[int]:
    """EOS ids, plus ``</tool_call>`` when the vocabulary holds it as one token."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    for token in ("<|im_end|>", "<|endoftext|>", TOOL_CALL_END):
        tid = tokenizer.convert_tokens_to_ids(token)
        if isinstance(tid, int) and tid != tokenizer.unk_token_id and tid >= 0:
            ids.add(tid)
    return sorted(ids)


def generate_kwargs(tokenizer: Any, ids: list[int], settings: GenerationSettings) -> dict:
    """The ``generate`` arguments shared by the streaming path and the bare benchmark call."""
    import torch

    sample = settings.temperature > 0
    return dict(
        input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
        max_new_tokens=settings.max_new_tokens, do_sample=sample,
        temperature=settings.temperature if sample else None, top_p=None, top_k=None,
        eos_token_id=stop_token_ids(tokenizer),
        pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
    )


class _TokenQueue:
    """A ``generate`` streamer: drops the prompt, queues new token ids, marks the end."""

    def __init__(self):
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.prompt_seen = False

    def put(self, value):
        if not self.prompt_seen:  # generate() pushes the prompt first
            self.prompt_seen = True
            return
        self.queue.put(value.reshape(-1).tolist())

    def end(self):
        self.queue.put(None)


def _stop_criterion(*events: threading.Event):
    import torch
    from transformers import StoppingCriteria

    class StopFlag(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            halt = any(e.is_set() for e in events)
            return torch.full((input_ids.shape[0],), halt, dtype=torch.bool)

    return StopFlag()


def clean_text(tokenizer: Any, ids: list[int]) -> str:
    """Decoded turn text without end-of-turn markers (tool-call tags are kept)."""
    text = tokenizer.decode(ids, skip_special_tokens=False)
    for marker in ("<|im_end|>", "<|endoftext|>", tokenizer.eos_token or "<|im_end|>"):
        text = text.replace(marker, "")
    return text


def stream_turn(model: Any, tokenizer: Any, ids: list[int], settings: GenerationSettings,
                stop: threading.Event, sample_seed: int) -> Iterator[tuple[str, int]]:
    """Yield (text so far, tokens so far) as one turn is generated.

    Closing the iterator (or setting ``stop``) stops generation at the next token; the worker
    thread is joined before this returns, so no computation outlives the turn.
    """
    import torch
    from transformers import StoppingCriteriaList

    streamer, failure, closed = _TokenQueue(), [], threading.Event()
    kwargs = generate_kwargs(tokenizer, ids, settings)

    def work():
        try:
            torch.manual_seed(sample_seed)
            with torch.inference_mode():
                model.generate(**kwargs, streamer=streamer,
                               stopping_criteria=StoppingCriteriaList([_stop_criterion(stop, closed)]))
        except BaseException as exc:  # handed to the consumer, which re-raises it
            failure.append(exc)
            streamer.end()

    worker = threading.Thread(target=work, name="live-generate", daemon=True)
    worker.start()
    new: list[int] = []
    try:
        while (chunk := streamer.queue.get()) is not None:
            new.extend(chunk)
            yield clean_text(tokenizer, new), len(new)
    finally:
        closed.set()  # the consumer is gone or done: no token after this one
        worker.join()
    if failure:
        raise RuntimeError(f"generation failed: {type(failure[0]).__name__}: {failure[0]}") from failure[0]
