"""Streaming one agent turn from a chat model, with a Stop that halts the computation itself.

The turn is sampled by ``ChatPolicy.sample`` (the same prompt, sampling and end-of-message rule
as evaluation and training: a message ends at its end token or its first complete call) in a
worker thread, with a streamer that queues each new token for the caller. A turn whose model is
generating another visitor's turn waits in that model's bounded queue (``core.clarify.model_slots``),
reported as waiting; its clock starts when the model does. The streamer checks the stop flags before accepting a token and raises ``Stopped``
inside ``generate`` when one is set, so Stop (or the caller going away) ends the forward passes
within one token rather than just hiding their output.
"""

import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Hashable, Iterator

from core.clarify.environment import ClarifyEnv
from core.clarify.model_slots import ModelSlot, slot_for
from core.records import Generation

if TYPE_CHECKING:  # importing the policy pulls in torch: only when a model actually plays
    from core.clarify.chat_policy import ChatPolicy


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

    def generation(self) -> Generation:
        return Generation(temperature=self.temperature, top_p=1.0, max_new_tokens=self.max_new_tokens,
                          seed=self.seed)


@dataclass(frozen=True)
class TurnTiming:
    """How fast one streamed turn was, for the Live play tab's per-turn line."""

    turn: int
    """1-based turn of the episode."""
    first_token_s: float
    """Seconds from the model's start on the turn (rendering and prefill included, a wait for another
    visitor's turn on the same model not) to its first new token."""
    seconds: float
    """Seconds for the whole turn."""
    tokens: int
    reused_tokens: int = 0
    """Prompt tokens taken from the KV cache instead of prefilled."""
    streamed: bool = True
    """False when the text came in one piece (an endpoint that does not stream, or sends a tool call
    only once it parses): there is no decoding speed to read then."""
    waited_s: float = 0.0
    """Seconds the turn waited for another visitor's turn on the same model (not in the other figures)."""

    @property
    def tokens_per_s(self) -> float:
        """Decoding speed after the first token (0 when the turn had one token or none)."""
        rest = self.seconds - self.first_token_s
        return (self.tokens - 1) / rest if self.tokens > 1 and rest > 0 else 0.0

    def line(self) -> str:
        if not self.streamed:
            return f"turn {self.turn}: whole answer after {self.seconds:.2f} s, in one piece ({self.tokens} tokens)"
        reused = f" · {self.reused_tokens} prompt tokens from the KV cache" if self.reused_tokens else ""
        waited = f" · waited {self.waited_s:.2f} s for another visitor's turn" if self.waited_s >= 0.01 else ""
        return (f"turn {self.turn}: first token {self.first_token_s:.2f} s · {self.tokens_per_s:.1f} tokens/s "
                f"({self.tokens} tokens in {self.seconds:.2f} s){reused}{waited}")


@dataclass
class TurnClock:
    """Filled in by ``stream_turn``: when the turn was asked for, the model started on it, its first
    token came, and it ended; ``waiting`` while another visitor's turn holds the model."""

    asked: float = 0.0
    start: float = 0.0
    first: float | None = None
    end: float = 0.0
    tokens: int = 0
    streamed: bool = True
    waiting: bool = False

    def timing(self, turn: int, reused_tokens: int = 0) -> TurnTiming:
        start = self.start or self.asked
        first = (self.first if self.first is not None else self.end) - start
        return TurnTiming(turn, first, self.end - start, self.tokens, reused_tokens, self.streamed,
                          max(0.0, start - self.asked) if self.asked else 0.0)


class Stopped(Exception):
    """Raised inside ``generate`` by the streamer when the turn was stopped."""


class TokenQueue:
    """A ``generate`` streamer: drops the prompt, queues new token ids, raises once stopped."""

    def __init__(self, *flags: threading.Event):
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.flags = flags
        self.prompt_seen = False
        self.finished = threading.Event()
        """Set once generation has ended; the consumer sleeps on it between display updates."""
        self.first_at: float | None = None
        """``time.monotonic()`` when the first new token arrived."""

    def put(self, value):
        if not self.prompt_seen:  # generate() pushes the prompt first
            self.prompt_seen = True
            return
        if any(flag.is_set() for flag in self.flags):
            raise Stopped
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.queue.put(value.reshape(-1).tolist())

    def end(self):
        self.queue.put(None)
        self.finished.set()


def turn_text(tokenizer: Any, ids: list[int]) -> str:
    """A turn's text exactly as ``ChatPolicy.advance`` decodes it (control tokens dropped)."""
    return tokenizer.decode(ids, skip_special_tokens=True)


def stream_turn(policy: "ChatPolicy", env: ClarifyEnv, stop: threading.Event, sample_seed: int,
                min_interval: float = 0.05, clock: TurnClock | None = None,
                conversation: Hashable | None = None) -> Iterator[tuple[str, list[int]]]:
    """Yield (text so far, token ids so far) while the policy samples its next turn for ``env``.

    Text is decoded at most every ``min_interval`` seconds (the first token at once, the whole
    turn at the end), so a fast model is not slowed by decoding for a display that cannot keep
    up. Closing the iterator (or setting ``stop``) stops generation at the next token; the worker
    thread is joined before this returns, so no computation outlives the turn. ``clock``, when
    given, receives the turn's start, first-token and end times. ``conversation`` names whose turns
    these are for the model's KV store when ``env`` is a copy each turn (a live session's id).
    """
    clock = clock if clock is not None else TurnClock()
    clock.asked = clock.start = time.monotonic()
    closed = threading.Event()
    streamer, failure, started = TokenQueue(stop, closed), [], threading.Event()
    dialog = policy.start(env, conversation)
    slot = slot_for(policy.model)
    slot.admit()  # ModelBusy when the model's queue is full: nothing starts

    def work():
        try:
            if _take(slot, streamer.flags, clock):
                started.set()
                try:
                    policy.sample([dialog], sample_seed, streamer=streamer)
                finally:
                    slot.generating.release()  # taken by _take
        except Stopped:
            pass
        except BaseException as exc:  # handed to the consumer, which re-raises it
            failure.append(exc)
        finally:
            started.set()
            streamer.end()

    worker = threading.Thread(target=work, name="live-generate", daemon=True)
    worker.start()
    ids: list[int] = []
    last = float("-inf")
    try:
        while not started.wait(WAIT_POLL_S):  # another visitor's turn holds the model: say so
            clock.waiting = True
            yield "", []
        clock.waiting = False
        while (chunk := streamer.queue.get()) is not None:
            done = _drain(streamer.queue, ids, chunk)
            end = policy.message_end(ids)  # what ChatPolicy.sample keeps: up to the end of the message
            if end is not None:
                ids = ids[:end]
            if done:
                break
            if time.monotonic() - last >= min_interval:
                last = time.monotonic()
                yield turn_text(policy.tokenizer, ids), list(ids)
                # Sleep until the next display update instead of waking once per token: on a
                # fast model those wake-ups cost ~15% of the generation's time.
                streamer.finished.wait(max(0.0, min_interval - (time.monotonic() - last)))
        yield turn_text(policy.tokenizer, ids), ids
    finally:
        closed.set()  # the consumer is gone or done: no token after this one
        worker.join()
        clock.first, clock.end, clock.tokens = streamer.first_at, time.monotonic(), len(ids)
    if failure:
        raise RuntimeError(f"generation failed: {type(failure[0]).__name__}: {failure[0]}") from failure[0]


WAIT_POLL_S = 0.5
"""How often a turn waiting for its model reports that it is still waiting."""


def _take(slot: ModelSlot, flags: tuple[threading.Event, ...], clock: TurnClock) -> bool:
    """Take the model's generation lock for this turn (leaving its queue), unless the turn is stopped
    first; the clock starts when the model does. True when taken (the caller releases it)."""
    try:
        if slot.generating.acquire(blocking=False):
            return True  # no wait: the turn's clock keeps its start (rendering included)
        while not slot.generating.acquire(timeout=0.05):
            if any(flag.is_set() for flag in flags):
                return False
        clock.start = time.monotonic()
        return True
    finally:
        slot.leave()


def _drain(tokens: queue.SimpleQueue, ids: list[int], chunk: list[int]) -> bool:
    """Add ``chunk`` and every chunk already queued to ``ids``; True once the end marker came."""
    while chunk is not None:
        ids.extend(chunk)
        try:
            chunk = tokens.get_nowait()
        except queue.Empty:
            return False
    return True
