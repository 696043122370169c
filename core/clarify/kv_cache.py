"""Reusing a model's key/value cache across the turns of an episode and across episodes.

Every agent turn re-reads the whole conversation (system prompt, tool list, earlier turns), so
without reuse turn 6 pays a full prefill of everything turns 1-5 already computed. ``KVStore``
keeps, for one model, the caches of the last few conversations it processed, each keyed by the
exact token ids it encodes. A new request takes the stored cache with the longest common token
prefix and prefills only the rest: the rest of the same episode (the entry moves on with it), or,
across episodes, the shared system prompt + tools prefix (copied and kept as a pinned entry).
Only identical tokens at identical positions are reused, so greedy and seeded sampled turns are
the same tokens as without the store; a chat template that rewrites history just shortens the
common prefix (logged), it never changes what the model sees.
"""

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from core.clarify.model_slots import PerModel

log = logging.getLogger(__name__)

MIN_SHARED = 16
"""Fewer common tokens than this are not worth a cache copy: prefill them from scratch."""


@dataclass
class _Entry:
    ids: tuple[int, ...]
    """The tokens the cache holds, position by position."""
    cache: Any
    pinned: bool = False
    """A shared prefix: always copied out, never handed out or evicted by conversations."""


def _common(a: tuple[int, ...], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def prefix_copy(cache: Any, n: int) -> Any:
    """A new DynamicCache holding the first ``n`` positions of ``cache`` (tensors copied)."""
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=[(layer.keys[:, :, :n].clone(), layer.values[:, :, :n].clone())
                                        for layer in cache.layers])


class KVStore:
    """Recent KV caches of one model keyed by their tokens (batch size 1; thread-safe)."""

    def __init__(self, capacity: int = 4, pinned: int = 2):
        if capacity < 1 or pinned < 0:
            raise ValueError(f"capacity must be >= 1 and pinned >= 0, got {capacity}, {pinned}")
        self.capacity, self.max_pinned = capacity, pinned
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next = 0
        self._lock = threading.Lock()

    def take(self, ids: list[int]) -> tuple[Any | None, int]:
        """A cache holding the first ``n`` tokens of ``ids`` (``n < len(ids)``: generation must
        feed at least one token), for the caller to extend; ``(None, 0)`` when nothing fits."""
        with self._lock:
            best, shared = None, 0
            for key, entry in self._entries.items():
                n = min(_common(entry.ids, ids), len(ids) - 1)
                if n > shared:
                    best, shared = key, n
            if best is None or shared < MIN_SHARED:
                return None, 0
            entry = self._entries[best]
            if shared == len(entry.ids) and not entry.pinned:  # this conversation, moving on
                del self._entries[best]
                return entry.cache, shared
            copy = prefix_copy(entry.cache, shared)
            if not entry.pinned and len(ids) > len(entry.ids) > shared:
                log.info("KV reuse: the stored conversation diverges at token %d of %d (a template that "
                         "is not prefix-preserving, or another episode): prefilling from there", shared, len(entry.ids))
            if not entry.pinned:
                self._pin(entry.ids[:shared], copy)
            self._entries.move_to_end(best)
            return copy, shared

    def give(self, ids: list[int], cache: Any) -> None:
        """Store ``cache`` (holding exactly ``ids``) for the next turn; evicts the oldest."""
        if cache is None or cache.get_seq_length() != len(ids):
            raise ValueError(f"the cache holds {None if cache is None else cache.get_seq_length()} tokens, "
                             f"not the {len(ids)} given")
        with self._lock:
            self._entries[self._key()] = _Entry(tuple(ids), cache)
            self._evict()

    def _pin(self, ids: tuple[int, ...], cache: Any) -> None:
        if self.max_pinned and not any(e.pinned and e.ids == ids for e in self._entries.values()):
            self._entries[self._key()] = _Entry(ids, prefix_copy(cache, len(ids)), pinned=True)
            self._evict()

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
