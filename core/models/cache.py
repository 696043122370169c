"""The one load-once cache: every model (policy or decision model) loads once per process, shared
read-only by every session, each under its own lock so two sessions never load the same folder twice.

``get`` returns a policy (``LoadedModel``), downloading a hub entry only on this explicit load and
only when the hub is allowed; ``decider`` a decision model, built by the ``open_decider`` the cache
is given (``core.decision`` knows which class answers for which folder; this wing knows only files);
``pick`` loads the models a picker names. A policy is built over the process's one copy of its base
(``core.models.bases``; int8 loads excepted), so an adapter adds only its own weights. Memory is
bounded: ``_keep``, the one place a model enters ``_models``, records its tensors in the process's
``core.models.memory.LOADED``, which drops the least recently used models (of any cache) past
``CLARIFYLAB_MODEL_MEMORY_MB``, a shared base counted once; a hit makes a model recent.
"""

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from core.models.availability import check, check_decision
from core.models.entries import ModelEntry
from core.models.lists import find_decision
from core.models.loader import LoadedModel, ModelLoadError, Progress, fetch_from_hub, load_folder, quiet
from core.models.memory import LOADED, LoadedSet, model_tensors

OpenDecider = Callable[[ModelEntry, Path | None], Any]
"""Builds the decision model for a checked entry and its folder (None for an endpoint)."""


@dataclass
class ModelCache:
    """Loaded models shared by all sessions: each (kind, folder, int8) loads once, under its own lock."""

    cache_dir: str | Path | None = None
    open_decider: OpenDecider | None = None
    """How a decision model is built (``core.decision.model.open_decider``); None: policies only."""
    loaded_set: LoadedSet = field(default_factory=lambda: LOADED)
    """Where loaded models are counted against the memory bound (the process's one set by default)."""
    _models: dict[tuple, Any] = field(default_factory=dict)
    _locks: dict[tuple, threading.Lock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def get(self, entry: ModelEntry, int8: bool = False, progress: Progress | None = None) -> LoadedModel:
        """Return the loaded policy, loading it first if no session has yet."""
        progress = progress or quiet
        if entry.kind != "policy":
            raise ModelLoadError(f"{entry.key} is a decision model; load it from the Decisions tab")
        found = check(entry, self.cache_dir)
        if not found.ok and entry.source == "hub" and not entry.remote_code:
            found = fetch_from_hub(entry, self.cache_dir, progress) or found
        if not found.ok:
            raise ModelLoadError(f"{entry.key} is unavailable: {found.message}")
        return self._once(("policy", str(found.path.resolve()), int8),
                          lambda: load_folder(entry, found.path, int8, progress, shared=True),
                          lambda: progress(1.0, f"{entry.key} already loaded"))

    def decider(self, entry: ModelEntry) -> Any:
        """The entry's decision model (a Decider, pipeline model or endpoint); raises ValueError saying why not."""
        if self.open_decider is None:
            raise ValueError(f"{entry.key}: this cache loads policies only (give it open_decider)")
        found = check_decision(entry)
        if not found.ok:
            raise ValueError(f"{entry.key} is unavailable: {found.message}")
        key = entry.location if found.path is None else str(found.path.resolve())
        return self._once(("decision", key), lambda: self.open_decider(entry, found.path))

    def loaded(self) -> list[str]:
        """Labels of the policies loaded, for the status line."""
        return [f"{m.entry.key}{' (int8)' if m.int8 else ''}" for m in self._models.values()
                if isinstance(m, LoadedModel)]

    def _once(self, key: tuple, make: Callable[[], Any], hit: Callable[[], None] = lambda: None) -> Any:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key in self._models:
                self.loaded_set.touch(id(self), key)
                hit()
            else:
                self._keep(key, make())
            return self._models[key]

    def _keep(self, key: tuple, model: Any) -> None:
        """The one place a loaded model enters the cache; least recently used ones past the bound leave."""
        self._models[key] = model
        label = model.entry.key if isinstance(model, LoadedModel) else str(key[1])
        self.loaded_set.add(id(self), key, model_tensors(model), lambda old: self._models.pop(old, None), label)


def pick(cache: ModelCache, models_dir: str | Path | None, keys: dict[str, str | None]) -> tuple[dict, dict[str, str]]:
    """Load the picked decision models: ``{field: key}`` -> (``{key: model}``, ``{field: error}``).

    An empty key is skipped (the second model is optional); a key not in the list is read as a typed
    folder, hub id or URL (``typed_entry``); an unknown or unavailable one becomes an error for its field.
    """
    deciders, errors = {}, {}
    for name, key in keys.items():
        if not key or key in deciders:
            continue
        try:
            entry = find_decision(models_dir, key)
        except ValueError as err:  # a typed path or URL a public deployment refuses
            errors[name] = str(err)
            continue
        if entry is None:
            errors[name] = (f"unknown model {key!r}; pick one from the list, or type a folder, a cached hub id "
                            "or a System One URL (http(s)://.../v1/systemone)")
            continue
        try:
            deciders[key] = cache.decider(entry)
        except ValueError as err:  # DecisionExportError is a ValueError too
            errors[name] = str(err)
    return deciders, errors
