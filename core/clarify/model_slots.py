"""One generation at a time per loaded model, with a bounded queue of waiting turns.

A loaded model is shared read-only by every session, and so is its KV store, so two turns on the
same model take turns; turns on different models run at once (a visitor watching SmolLM2 never
holds up another visitor's tiny policy). ``slot_for(model)`` is that model's slot: ``generating``
is held (re-entrantly, by the generating thread) for one ``generate`` call; ``admit`` puts a live
turn in the queue, refusing it with ``ModelBusy`` once ``MODEL_QUEUE_ENV`` turns already wait.
"""

import threading
import weakref
from typing import Any, Callable

from core.records import setting

MODEL_QUEUE_ENV = "CLARIFYLAB_MODEL_QUEUE"
"""How many turns may wait for one busy model (default ``DEFAULT_QUEUE``); one more is refused."""
DEFAULT_QUEUE = 4


class ModelBusy(RuntimeError):
    """A turn refused because its model's queue is full; the message says so and what to do."""


def queue_bound() -> int:
    """The operator's ``MODEL_QUEUE_ENV`` (a whole number >= 0), else ``DEFAULT_QUEUE``."""
    return setting(MODEL_QUEUE_ENV, DEFAULT_QUEUE)


class ModelSlot:
    """One model's generation lock and the count of turns waiting for it."""

    def __init__(self):
        self.generating = threading.RLock()
        """Held for one ``generate`` call; re-entrant so the live worker can hold it around ``sample``."""
        self.waiting = 0
        """Turns admitted to the queue that have not started generating yet."""
        self._count = threading.Lock()

    def admit(self) -> None:
        """Admit one turn to the queue; the turn calls ``leave`` once it takes ``generating`` (or gives up).

        Raises:
            ModelBusy: the model is generating and ``queue_bound()`` turns already wait for it.
        """
        bound = queue_bound()
        with self._count:
            if self.waiting >= bound and self.busy():
                raise ModelBusy(f"this model is busy: {self.waiting} other visitors' turns are waiting for it "
                                f"(at most {bound}); try again in a minute, or pick another model")
            self.waiting += 1

    def busy(self) -> bool:
        """Is a turn generating on this model right now?"""
        if self.generating.acquire(blocking=False):
            self.generating.release()
            return False
        return True

    def leave(self) -> None:
        with self._count:
            self.waiting -= 1


class PerModel:
    """One value per loaded model, made on first use and dropped with the model (slots, KV stores)."""

    def __init__(self, make: Callable[[], Any]):
        self.make = make
        self._values: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def of(self, model: Any) -> Any:
        with self._lock:
            value = self._values.get(model)
            if value is None:
                value = self._values[model] = self.make()
            return value


_SLOTS = PerModel(ModelSlot)


def slot_for(model: Any) -> ModelSlot:
    """The one slot of a loaded model (dropped with it)."""
    return _SLOTS.of(model)
