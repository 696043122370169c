"""Decision models the Decisions tab can offer, whether each is on this machine, and loading them once.

Entries: the shipped ``checkpoints/decision-*`` exports (listed even before they are trained, so
the picker says how to make them), every rlcd-decision-only-v1 export found under a models folder,
and the published decision models by hub id from ``core.registry``. Availability reads local files
and the Hugging Face cache only, so it answers at once offline. Loading goes through the strict,
hash-verifying ``core.decision.export.load_decider``; each folder loads once, under its own lock,
and the loaded Deciders are shared read-only by every session. Entries are the registry's
``ModelEntry`` records with ``kind="decision"``.
"""

import threading
from dataclasses import dataclass, field
from pathlib import Path

from core import registry
from core.registry import Availability, ModelEntry

CARD_FILE = "decision.json"
"""The card every rlcd-decision-only-v1 export holds (``core.decision.export.CARD_FILE``)."""

SHIPPED_DIR = registry.SHIPPED_DIR
SHIPPED = (("decision-rlcd", "RLCD (reward c - p)"), ("decision-warmup", "warmup SFT"),
           ("decision-rlvr", "RLVR (reward c)"), ("decision-oracle", "oracle NLL"))
"""Shipped decision exports under ``checkpoints/``, best first, with their training arm."""


def shipped_entries(shipped_dir: Path | None = None) -> list[ModelEntry]:
    shipped_dir = SHIPPED_DIR if shipped_dir is None else shipped_dir  # read at call time (tests swap it)
    return [ModelEntry(name, "decision", "shipped", str(Path(shipped_dir) / name), note=f"shipped, {arm}")
            for name, arm in SHIPPED]


def local_entries(models_dir: str | Path | None) -> list[ModelEntry]:
    """Every subfolder of ``models_dir`` holding a decision.json, sorted by name."""
    if not models_dir or not Path(models_dir).is_dir():
        return []
    return [ModelEntry(p.name, "decision", "local", str(p), note=f"local export in {models_dir}")
            for p in sorted(Path(models_dir).iterdir()) if (p / CARD_FILE).is_file()]


def published_entries() -> list[ModelEntry]:
    """The published decision models by hub id, as ``core.registry`` lists them."""
    return [e for e in registry.published_entries() if e.kind == "decision"]


def entries(models_dir: str | Path | None = None, shipped_dir: Path | None = None) -> list[ModelEntry]:
    """Local exports first (when a models folder is given), then shipped, then published."""
    return local_entries(models_dir) + shipped_entries(shipped_dir) + published_entries()


def check_export(path: Path) -> Availability:
    """Is ``path`` an export folder? (The full hash check happens when it loads.)"""
    if not path.is_dir():
        return Availability(False, None, f"no folder at {path}")
    if not (path / CARD_FILE).is_file():
        return Availability(False, None, f"{path} has no {CARD_FILE}, so it is not an rlcd-decision-only-v1 export")
    return Availability(True, path, f"ready to load from {path}")


def check(entry: ModelEntry) -> Availability:
    """Can ``entry`` load on this machine now? Never touches the network."""
    if entry.remote_code:
        return Availability(False, None, f"{entry.location} needs custom modeling code (trust_remote_code); "
                            "the app does not run remote code")
    if entry.source != "hub":
        found = check_export(Path(entry.location))
        if not found.ok and entry.source == "shipped":
            return Availability(False, None, f"{entry.key} is not trained yet ({found.message}); train the arms "
                                "with train/decision_pipeline.sh and copy them here with python -m train.decision_ship")
        return found
    snapshot = registry.cached_snapshot(entry.location)
    if snapshot is None:
        return Availability(False, None, registry.how_to_get(entry.location))
    return check_export(snapshot)


@dataclass
class DeciderCache:
    """Loaded Deciders shared by all sessions; each folder loads once, under its own lock."""

    _deciders: dict[str, object] = field(default_factory=dict)
    _locks: dict[str, threading.Lock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def get(self, entry: ModelEntry):
        """The entry's Decider; raises ValueError saying why it is unavailable."""
        found = check(entry)
        if not found.ok:
            raise ValueError(f"{entry.key} is unavailable: {found.message}")
        key = str(found.path.resolve())
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._deciders:
                from core.decision.export import load_decider  # torch loads with the first model, not the app

                self._deciders[key] = load_decider(found.path)
            return self._deciders[key]


def pick(cache: DeciderCache, models_dir: str | Path | None, keys: dict[str, str | None]) -> tuple[dict, dict[str, str]]:
    """Load the picked models: ``{field: key}`` -> (``{key: Decider}``, ``{field: error}``).

    An empty key is skipped (the second model is optional); an unknown or unavailable one becomes
    an error for its field.
    """
    known = {e.key: e for e in entries(models_dir)}
    deciders, errors = {}, {}
    for name, key in keys.items():
        if not key or key in deciders:
            continue
        if key not in known:
            errors[name] = f"unknown model {key!r}; pick one from the list"
            continue
        try:
            deciders[key] = cache.get(known[key])
        except ValueError as err:  # DecisionExportError is a ValueError too
            errors[name] = str(err)
    return deciders, errors
