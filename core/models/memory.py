"""The memory bound on loaded models: their bytes, least recently used first, across every cache.

Both tabs keep their own ``ModelCache``, but one process holds all their models, so the bound is the
process's: every cache records what it loads in ``LOADED`` (one ``LoadedSet``), which drops the least
recently used models, whichever cache holds them, until the total is under ``memory_bound()`` bytes
(``MEMORY_ENV`` in MB, default ``DEFAULT_MB``). The total counts each tensor once, however many models
hold it: models built on one shared base (``core.models.bases``) count its bytes once and their own
(an adapter's low-rank weights) each. The base is no entry of its own: it leaves with its last user.
A model another session is still generating with stays alive in that session until its turn ends;
the cache simply loads it again on the next use.
"""

import threading
from collections import OrderedDict
from typing import Any, Callable, Mapping

from core.records import setting

MEMORY_ENV = "CLARIFYLAB_MODEL_MEMORY_MB"
"""The most megabytes of model weights a process keeps loaded (default ``DEFAULT_MB``)."""
DEFAULT_MB = 2048


def memory_bound() -> int:
    """The bound in bytes: the operator's ``MEMORY_ENV`` (MB, a whole number > 0), else ``DEFAULT_MB``."""
    return setting(MEMORY_ENV, DEFAULT_MB, least=1) * 2**20


def model_tensors(model: Any, depth: int = 3) -> dict[int, int]:
    """The tensors a loaded model holds, ``{data_ptr: bytes}``: a torch module's parameters and
    buffers (each tensor once, tied weights too), or those of the modules its attributes hold (a
    policy's ``LoadedModel``, a Decider, a pipeline), ``depth`` attributes deep. int8-packed Linear
    weights are not parameters, so an int8 model counts its fp32 rest only."""
    import torch

    seen: dict[int, int] = {}

    def visit(obj: Any, left: int) -> None:
        if isinstance(obj, torch.nn.Module):
            for tensor in list(obj.parameters()) + list(obj.buffers()):
                seen.setdefault(tensor.data_ptr(), tensor.numel() * tensor.element_size())
        elif left > 0 and hasattr(obj, "__dict__"):
            for value in vars(obj).values():
                visit(value, left - 1)

    visit(model, depth)
    return seen


def model_bytes(model: Any, depth: int = 3) -> int:
    """Bytes of the tensors a loaded model holds (``model_tensors``), shared ones included."""
    return sum(model_tensors(model, depth).values())


Drop = Callable[[tuple], None]
"""How a cache forgets one of its keys."""


class LoadedSet:
    """Every cache's loaded models in least-recently-used order, with their tensors.

    Tensors are known by address: an entry's ``drop`` holds its cache, so a recorded model (and
    every tensor it holds) stays alive until it leaves the set, and no address is reused meanwhile.
    """

    def __init__(self):
        self._order: OrderedDict[tuple, tuple[Mapping[int, int], Drop, str]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, owner: int, key: tuple, tensors: Mapping[int, int], drop: Drop, label: str) -> list[str]:
        """Record a model just loaded (most recent) with its ``model_tensors`` and drop the least recent
        ones while the total is over the bound, never the one just added; returns the labels dropped."""
        bound, dropped = memory_bound(), []
        with self._lock:
            self._order[(owner, key)] = (dict(tensors), drop, label)
            self._order.move_to_end((owner, key))
            while self.total() > bound and len(self._order) > 1:
                (_, old), (_, forget, name) = self._order.popitem(last=False)
                forget(old)
                dropped.append(name)
        return dropped

    def touch(self, owner: int, key: tuple) -> None:
        """A cache hit: the model becomes the most recently used."""
        with self._lock:
            if (owner, key) in self._order:
                self._order.move_to_end((owner, key))

    def total(self) -> int:
        """Bytes held by the models recorded, each tensor once (a shared base counts once)."""
        held: dict[int, int] = {}
        for tensors, _, _ in list(self._order.values()):
            held.update(tensors)
        return sum(held.values())

    def total_apart(self) -> int:
        """Bytes the models recorded would hold with no tensor shared between them (each base once per model)."""
        return sum(sum(tensors.values()) for tensors, _, _ in list(self._order.values()))

    def labels(self) -> list[str]:
        """What is loaded, least recently used first."""
        with self._lock:
            return [label for _, _, label in self._order.values()]


LOADED = LoadedSet()
"""The process's one set: every ``ModelCache`` records here unless given its own."""
