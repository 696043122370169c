"""Reusing a model's key/value cache across the turns of an episode and across episodes.

Every agent turn re-reads the whole conversation (system prompt, tool list, earlier turns), so
without reuse turn 6 pays a full prefill of everything turns 1-5 already computed. ``KVStore``
keeps, for one model, the caches of the last few conversations it processed, each keyed by the
exact token ids it encodes. A new request takes the stored cache with the longest common token
prefix and prefills only the rest: the rest of the same episode (the entry moves on with it, cut in
place where the transcript re-rendered what was sampled), or, across episodes, the shared system
prompt + tools prefix (copied once into a pinned entry, which later episodes read without a copy).
Only identical tokens at identical positions are reused, so greedy and seeded sampled turns are
the same tokens as without the store; a chat template that rewrites history just shortens the
common prefix (logged), it never changes what the model sees.
"""

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Hashable

from core.clarify.model_slots import PerModel
from core.models.layers import holding

log = logging.getLogger(__name__)

MIN_SHARED = 16
"""Fewer common tokens than this are not worth a cache copy: prefill them from scratch."""


@dataclass
class _Entry:
    ids: tuple[int, ...]
    """The tokens the cache holds, position by position."""
    cache: Any
    pinned: bool = False
    """A shared prefix: read by every taker through views of its tensors, never handed over or evicted by
    conversations."""
    conversation: Hashable | None = None
    """Who gave it: when the same conversation takes it back, it moves on in place, wherever its tail was
    re-rendered (a sampled message replaced, a template's generation prompt dropped from the history)."""


def _common(a: tuple[int, ...], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def shared_prefix(ids: list[list[int]]) -> int:
    """Length of the longest prefix every sequence shares, less one: each keeps a token of its own."""
    n = min(len(one) for one in ids) - 1
    for one in ids[1:]:
        n = next((i for i in range(n) if one[i] != ids[0][i]), n)
    return max(n, 0)


def crop(cache: Any, n: int) -> Any:
    """``cache`` cut to its first ``n`` positions in place (views: nothing is copied)."""
    for layer in cache.layers:
        layer.keys, layer.values = layer.keys[:, :, :n], layer.values[:, :, :n]
    return cache


def prefix_copy(cache: Any, n: int) -> Any:
    """A new DynamicCache holding the first ``n`` positions of ``cache`` (each tensor copied once)."""
    return holding([(layer.keys[:, :, :n].clone(), layer.values[:, :, :n].clone()) for layer in cache.layers])


class KVStore:
    """Recent KV caches of one model keyed by their tokens (batch size 1; thread-safe)."""

    def __init__(self, capacity: int = 4, pinned: int = 2):
        if capacity < 1 or pinned < 0:
            raise ValueError(f"capacity must be >= 1 and pinned >= 0, got {capacity}, {pinned}")
        self.capacity, self.max_pinned = capacity, pinned
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next = 0
        self._lock = threading.Lock()

    def take(self, ids: list[int], conversation: Hashable | None = None) -> tuple[Any | None, int]:
        """A cache holding the first ``n`` tokens of ``ids`` (``n < len(ids)``: generation must
        feed at least one token), for the caller to extend; ``(None, 0)`` when nothing fits. The caller's
        own cache, or one whose every token it holds, is handed over; another conversation's prefix is
        copied once, into a pinned entry (its owner may come back for its own), and the caller reads that
        entry's tensors (a model's cache ``update`` concatenates onto them, never writing into them)."""
        with self._lock:
            best, shared = None, 0
            for key, entry in self._entries.items():
                n = min(_common(entry.ids, ids), len(ids) - 1)
                if n > shared:
                    best, shared = key, n
            if best is None or shared < MIN_SHARED:
                return None, 0
            entry = self._entries[best]
            mine = conversation is not None and entry.conversation == conversation
            if not entry.pinned and (shared == len(entry.ids) or mine):  # this conversation, moving on
                del self._entries[best]  # a re-rendered tail is cut off in place: copying every layer, and again
                return crop(entry.cache, shared), shared  # to pin it, cost up to 2 s a turn (bench/live_latency)
            if not entry.pinned and len(ids) > len(entry.ids) > shared:
                log.info("KV reuse: the stored conversation diverges at token %d of %d (a template that "
                         "is not prefix-preserving, or another episode): prefilling from there", shared, len(entry.ids))
            pin = entry if entry.pinned else self._pin(entry.ids[:shared], entry.cache)
            self._entries.move_to_end(best)
            if pin is None:  # nothing is pinned: a copy of its own
                return prefix_copy(entry.cache, shared), shared
            return holding([(layer.keys[:, :, :shared], layer.values[:, :, :shared]) for layer in pin.cache.layers]), shared

    def give(self, ids: list[int], cache: Any, conversation: Hashable | None = None) -> None:
        """Store ``cache`` (holding exactly ``ids``) for ``conversation``'s next turn; evicts the oldest."""
        if cache is None or cache.get_seq_length() != len(ids):
            raise ValueError(f"the cache holds {None if cache is None else cache.get_seq_length()} tokens, "
                             f"not the {len(ids)} given")
        with self._lock:
            self._entries[self._key()] = _Entry(tuple(ids), cache, conversation=conversation)
            self._evict()

    def _pin(self, ids: tuple[int, ...], cache: Any) -> _Entry | None:
        """The pinned entry holding ``ids`` (copied from ``cache`` if none does); None when nothing is pinned."""
        if not self.max_pinned:
            return None
        pinned = next((e for e in self._entries.values() if e.pinned and e.ids == ids), None)
        if pinned is None:
            pinned = _Entry(ids, prefix_copy(cache, len(ids)), pinned=True)
            self._entries[self._key()] = pinned
            self._evict()
        return pinned

    def _key(self) -> int:
        self._next += 1
        return self._next

    def _evict(self) -> None:
        for pinned, limit in ((False, self.capacity), (True, self.max_pinned)):
            keys = [k for k, e in self._entries.items() if e.pinned == pinned]
            for key in keys[:max(0, len(keys) - limit)]:
                del self._entries[key]

    def sizes(self) -> list[tuple[int, bool]]:
        """(tokens, pinned) of every entry, oldest first: for tests and the bench."""
        with self._lock:
            return [(len(e.ids), e.pinned) for e in self._entries.values()]


_STORES = PerModel(KVStore)


def store_for(model: Any) -> KVStore:
    """The one store of a loaded model, shared by every live session playing it (dropped with it)."""
    return _STORES.of(model)


# ---- batched play: each dialog keeps its own keys/values between turns


@dataclass
class RowKV:
    """One dialog's keys/values: ``ids[i]``'s at position i, per layer ``(keys, values)`` [1, heads, len(ids), dim]."""

    ids: tuple[int, ...]
    layers: list[tuple[Any, Any]]


@dataclass
class BatchLayout:
    """A batch that continues each row's cached tokens: row i is ``[pad][its first held[i] tokens, cached]
    [pad][the rest, to prefill]``; padded slots are masked, positions follow the mask (as generate
    computes them), so every real token sits at its own position and sees only its own row."""

    input_ids: Any
    attention_mask: Any
    cache: Any
    """A DynamicCache of the first ``width`` slots of every row."""
    width: int
    held: list[int]


def batch_layout(rows: list[list[int]], kvs: list["RowKV | None"], pad_id: int) -> BatchLayout:
    """Lay out ``rows`` over the tokens each ``kvs[i]`` already holds (the longest common prefix, at
    most all but the last token: generation must feed one)."""
    import torch

    held = [0 if kv is None else min(_common(kv.ids, r), len(r) - 1) for r, kv in zip(rows, kvs)]
    width, rest = max(held), max(len(r) - h for r, h in zip(rows, held))
    ids = [[pad_id] * (width - h) + r[:h] + [pad_id] * (rest - len(r) + h) + r[h:] for r, h in zip(rows, held)]
    mask = [[0] * (width - h) + [1] * h + [0] * (rest - len(r) + h) + [1] * (len(r) - h) for r, h in zip(rows, held)]
    like = next(kv for kv, h in zip(kvs, held) if h).layers
    layers = []
    for layer, (k0, v0) in enumerate(like):
        ks, vs = [], []
        for kv, h in zip(kvs, held):
            k, v = (kv.layers[layer][0][:, :, :h], kv.layers[layer][1][:, :, :h]) if h else (k0[:, :, :0], v0[:, :, :0])
            pad = (0, 0, width - h, 0)  # left-pad the position axis
            ks.append(torch.nn.functional.pad(k, pad))
            vs.append(torch.nn.functional.pad(v, pad))
        layers.append((torch.cat(ks), torch.cat(vs)))
    return BatchLayout(torch.tensor(ids), torch.tensor(mask), holding(layers), width, held)


def row_caches(layout: BatchLayout, rows: list[list[int]], kept: list[list[int]], generated: int) -> list[RowKV]:
    """Each row's keys/values after generate filled ``layout.cache``: its real prompt tokens and the
    kept tokens generate fed (all it generated but the last step's)."""
    import torch

    mask = layout.attention_mask
    out = []
    for i, (r, new) in enumerate(zip(rows, kept)):
        fed = min(len(new), generated - 1)
        where = torch.cat([mask[i].nonzero().flatten(), mask.shape[1] + torch.arange(fed)])
        out.append(RowKV(tuple(r) + tuple(new[:fed]),
                         [(layer.keys[i:i + 1, :, where], layer.values[i:i + 1, :, where]) for layer in layout.cache.layers]))
    return out
