"""Shared bases: a base's weights load once per process and every model built on it reads the same tensors.

SmolLM2-135M (513 MB fp32) used to be held once per user: the packaged policy, each LoRA adapter
merged into its own copy, the Decisions tab's pipeline. ``shared_base`` loads a folder or ``.gguf``
file once (keyed by its resolved path) and ``build`` gives each user its OWN module tree whose
parameters and buffers are the base's tensors (a ``deepcopy`` whose memo maps every tensor to
itself: rotary buffers and tied embeddings come along, no weight is copied). An adapter goes on
that tree unmerged (``core.models.loader``), so N adapters cost one base plus N low-rank weights.
Separate trees keep per-model generation slots and KV stores apart; the shared tensors are frozen
and only read. A base lives while a tree built on it does: the registry holds it weakly, each tree
strongly, so dropping its last user (``core.models.memory``'s LRU) frees it. Trainable and int8
loads (quantisation rewrites Linear layers in place) never come here: they load private copies.
"""

import copy
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.models.entries import GGUF_SUFFIX


@dataclass(eq=False)
class Base:
    """One base loaded once: a frozen prototype module (never generated with) and its tokenizer."""

    key: str
    """The resolved path of the folder or ``.gguf`` file it was loaded from."""
    prototype: Any
    """The loaded causal LM; every ``build`` shares its tensors, nobody runs it."""
    tokenizer: Any
    """Copied for each user (users set their own chat template)."""
    params: int
    """Parameters of the base."""

    def __hash__(self) -> int:
        return id(self)


_BASES: "weakref.WeakValueDictionary[str, Base]" = weakref.WeakValueDictionary()
"""Bases alive in this process, by ``key``; an entry goes when no tree built on it is left."""
_HOLDERS: "weakref.WeakKeyDictionary[Any, Base]" = weakref.WeakKeyDictionary()
"""Each built tree -> its base: what keeps a base alive while it has users."""
_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()


def base_key(path: Path) -> str:
    """The key of a base: its folder or ``.gguf`` file, resolved."""
    return str(Path(path).expanduser().resolve())


def shared_base(path: Path, load: Any) -> Base:
    """The base at ``path``, loaded by ``load(folder, gguf) -> (model, tokenizer)`` the first time
    any user asks, under a per-base lock (two sessions never load it twice)."""
    key = base_key(path)
    with _GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        base = _BASES.get(key)
        if base is None:
            folder, gguf = (path.parent, path.name) if path.suffix == GGUF_SUFFIX else (path, None)
            model, tokenizer = load(folder, gguf)
            model.requires_grad_(False)  # read by every user, trained by none
            base = Base(key, model.eval(), tokenizer, sum(p.numel() for p in model.parameters()))
            _BASES[key] = base
        return base


def build(base: Base) -> tuple[Any, Any]:
    """(model, tokenizer): a new module tree over the base's own tensors, and a copy of its tokenizer."""
    tensors = list(base.prototype.parameters()) + list(base.prototype.buffers())
    model = copy.deepcopy(base.prototype, memo={id(t): t for t in tensors})
    _HOLDERS[model] = base
    return model.eval(), copy.deepcopy(base.tokenizer)


def base_of(model: Any) -> Base | None:
    """The shared base a tree was built on (None for a private load)."""
    try:
        return _HOLDERS.get(model)
    except TypeError:  # not weak-referenceable: not a tree
        return None


def loaded_bases() -> list[str]:
    """Keys of the bases alive now (a base whose last user is gone is not listed)."""
    return list(_BASES.keys())
