"""Availability: can an entry load on this machine now, and if not, how to make it available.

The one acceptance rule for a folder, for every caller (Live play, ``python -m core.runs.eval``,
GRPO, the Decisions tab): ``check_folder`` says what makes a policy folder (``config.json`` with a
``model_type`` and no ``auto_map``, weights, and any one tokenizer file), a ``.gguf`` file or a LoRA
adapter ready; ``check_export`` what makes a decision model ready (our export's card, an option
scorer's card, or, through the decision pipeline, a GGUF file or a chat-model folder). Checks read
local files, package metadata and the Hugging Face cache only: never the network, never an import
of torch. Loading is ``core.models.loader``'s.
"""

import importlib.metadata
import importlib.util
import json
from pathlib import Path

from core.models import entries
from core.models.entries import (ADAPTER_CONFIG, ADAPTER_DESIGN, ADAPTER_WEIGHTS, DECISION_CARD, DECISION_HEAD,
                                 ENDPOINT_DESIGN, GGUF_SUFFIX, LETTER_DESIGN, OPTION_CARD, OPTION_DESIGN, PIPELINE_DESIGN,
                                 PACKAGE_INSTALL, POOLED_CARD, POOLED_DESIGN, ROOT, SHIPPED_LETTER_ARMS,
                                 SHIPPED_OPTION_SCORERS, SHIPPED_POOLED, TOKENIZER_FILES, TRAIN_COMMANDS, WEIGHT_FILES,
                                 Availability, Kind, ModelEntry, parse_spec, public_deployment, shown_path)

REMOTE_CODE = "needs custom modeling code (trust_remote_code); the app does not run remote code"


def check_folder(path: str | Path, kind: Kind = "policy") -> Availability:
    """Is ``path`` a loadable Hugging Face model folder, a ``.gguf`` file or a LoRA adapter? Local files only."""
    path = Path(path).expanduser()
    if not path.exists():
        return Availability(False, None, f"no folder at {shown_path(path)} (it does not exist)")
    if path.is_file() and path.suffix == GGUF_SUFFIX:
        return check_gguf(path)
    if not path.is_dir():
        return Availability(False, None, f"{shown_path(path)} is a file, not a model folder")
    if (path / ADAPTER_CONFIG).is_file():
        return check_adapter(path)
    config_file = path / "config.json"
    if not config_file.is_file():
        return Availability(False, None, f"{shown_path(path)} has no config.json, so it is not a Hugging Face "
                            "model folder (missing config.json; expected config.json, weights and tokenizer files)")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return Availability(False, None, f"could not load {shown_path(config_file)}: it is not valid JSON ({exc})")
    if not isinstance(config, dict) or "model_type" not in config:
        return Availability(False, None, f"{shown_path(config_file)} names no model_type")
    if "auto_map" in config:
        return Availability(False, None, f"{shown_path(path)} needs custom modeling code (auto_map in "
                            "config.json); the app keeps trust_remote_code off")
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        return Availability(False, None, f"{shown_path(path)} holds no weights ({' or '.join(WEIGHT_FILES[::2])})")
    if kind == "policy" and not any((path / name).is_file() for name in TOKENIZER_FILES):
        return Availability(False, None,
                            f"{shown_path(path)} holds no tokenizer files ({' or '.join(TOKENIZER_FILES)})")
    return Availability(True, path, f"ready to load from {shown_path(path)}")


def check_gguf(path: Path) -> Availability:
    """A ``.gguf`` file: ready when the ``gguf`` reader is installed (it is dequantised to fp32 on load)."""
    if importlib.util.find_spec("gguf") is None:
        return Availability(False, None, f"reading {path.name} needs the gguf package: {PACKAGE_INSTALL}")
    return Availability(True, path, f"ready to load from {shown_path(path)} (GGUF, dequantised to fp32)")


def adapter_base(path: Path) -> str:
    """The base an adapter folder names (``base_model_name_or_path``); ValueError when unreadable."""
    try:
        config = json.loads((path / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{shown_path(path / ADAPTER_CONFIG)} is not valid JSON ({exc})") from None
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    if not isinstance(base, str) or not base:
        raise ValueError(f"{shown_path(path / ADAPTER_CONFIG)} names no base_model_name_or_path")
    return base


def is_adapter(location: str | Path) -> bool:
    """Is ``location`` a LoRA adapter folder (peft's ``adapter_config.json``)?"""
    return (Path(location) / ADAPTER_CONFIG).is_file()


def loads_through_core(location: str | Path) -> bool:
    """Only core can load ``location``: a packaged location, a ``.gguf`` file or an adapter folder.

    Anything else (a model folder, a hub id) also loads by name in any transformers-based trainer.
    """
    return (entries.packaged_entry(location) is not None or Path(location).suffix == GGUF_SUFFIX
            or is_adapter(location))


def base_location(base: str) -> Availability:
    """Where an adapter's base is: a packaged ``distribution/file``, or a folder (relative to the checkout)."""
    if any(base == f"{dist}/{file}" for _, dist, file, _, _ in entries.PACKAGED_MODELS):
        return check_package(base)
    folder = Path(base) if Path(base).is_absolute() else ROOT / base
    if is_adapter(folder):  # one level only: no chains, no adapter naming itself
        return Availability(False, None, f"{shown_path(folder)} is itself an adapter; a base must be a model")
    return check_folder(folder)


def check_adapter(path: Path) -> Availability:
    """Is ``path`` a LoRA adapter whose weights and base are here?"""
    try:
        base = adapter_base(path)
    except ValueError as exc:
        return Availability(False, None, str(exc))
    if not (path / ADAPTER_WEIGHTS).is_file():
        return Availability(False, None, f"{shown_path(path)} holds no {ADAPTER_WEIGHTS}")
    found = base_location(base)
    if not found.ok:
        return Availability(False, None, f"the base of the adapter in {shown_path(path)} ({base}) is unavailable: "
                            f"{found.message}")
    return Availability(True, path, f"ready to load from {shown_path(path)} (LoRA adapter over {base})")


def over_a_real_base(location: str | Path) -> bool:
    """Whether a folder is a LoRA adapter or a pooled head: it loads a separate base (SmolLM2) with it."""
    return is_adapter(location) or (Path(location) / POOLED_CARD).is_file()


POOLED_MAKE = "python -m train.decision_pooled --out runs/smollm2-pooled, then copy runs/smollm2-pooled/<arm>"
CUED_READER_MAKE = ("python -m train.decision_pooled_cued --layer 20 --out runs/pooled-cued-20, then copy "
                    "runs/pooled-cued-20/head")
LETTER_ARMS_MAKE = ("bash train/decision_graft.sh 0 runs/smollm2-graft, then python -m train.decision_smollm2_ship "
                    "--runs runs/smollm2-graft")


def check_pooled(path: Path) -> Availability:
    """Is ``path`` a pooled-readout folder whose base is here? (Hashes are checked on load.)"""
    try:
        base = json.loads((path / POOLED_CARD).read_text())["base_model"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Availability(False, None, f"{shown_path(path)}/{POOLED_CARD} is malformed: {exc}")
    found = base_location(str(base))
    if not found.ok:
        return Availability(False, None, f"the base of the pooled readout in {shown_path(path)} ({base}) is unavailable: "
                            f"{found.message}")
    return Availability(True, path, f"ready to load from {shown_path(path)} (a head over {base})")


def cached_snapshot(hub_id: str, cache_dir: str | Path | None = None) -> Path | None:
    """The local snapshot folder of ``hub_id`` in the Hugging Face cache, or None. No network."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(hub_id, cache_dir=cache_dir, local_files_only=True))
    except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
        return None


def how_to_get(hub_id: str, cache_dir: str | Path | None = None) -> str:
    """The instructions an unavailable hub entry shows."""
    from huggingface_hub import constants

    cache = "the Space's" if public_deployment() else (cache_dir or constants.HF_HUB_CACHE)  # no server layout
    return (f"{hub_id} is not in the Hugging Face cache ({cache}). To make it available: on a "
            f"machine with network run `hf download {hub_id}` (it fills that cache), or download "
            "it into a folder and type the folder path here or start the app with --models-dir "
            "pointing at its parent.")


def check_package(location: str) -> Availability:
    """Is the packaged GGUF file installed (and the ``gguf`` reader)? Reads package metadata only:
    nothing is imported, so the picker stays instant."""
    dist, _, name = location.partition("/")
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return Availability(False, None, f"the {dist} package is not installed: {PACKAGE_INSTALL}")
    found = [Path(f.locate()) for f in files if f.name == name]
    if not found or not found[0].is_file():
        return Availability(False, None, f"{dist} is installed but holds no {name}: {PACKAGE_INSTALL}")
    if importlib.util.find_spec("gguf") is None:
        return Availability(False, None, f"reading {name} needs the gguf package: {PACKAGE_INSTALL}")
    return Availability(True, found[0], f"ready to load from {shown_path(found[0])}")


def check(entry: ModelEntry, cache_dir: str | Path | None = None) -> Availability:
    """Can ``entry`` load as a model folder on this machine right now (the policy rule)? Never
    touches the network, never hangs."""
    if entry.source == "endpoint":
        try:
            return Availability(True, None, f"chat endpoint, model {parse_spec(entry.location)[1]}: "
                                "reached when a turn is played (nothing loads here)")
        except ValueError as exc:
            return Availability(False, None, str(exc))
    if entry.source == "package":
        return check_package(entry.location)
    if entry.remote_code:
        return Availability(False, None, f"{entry.location} {REMOTE_CODE}")
    if entry.source != "hub":
        found = check_folder(entry.location, entry.kind)
        if not found.ok and entry.source == "shipped" and not Path(entry.location).exists():
            return Availability(False, None, f"{found.message}: train it first "
                                f"({TRAIN_COMMANDS.get(Path(entry.location).name, 'see docs/clarify_policy.md')})")
        return found
    snapshot = cached_snapshot(entry.location, cache_dir)
    if snapshot is None:
        return Availability(False, None, how_to_get(entry.location, cache_dir))
    found = check_folder(snapshot, entry.kind)
    if not found.ok:
        return Availability(False, None, f"the cached copy of {entry.location} is incomplete: "
                            f"{found.message}. {how_to_get(entry.location, cache_dir)}")
    return found


# ---- decision models ----------------------------------------------------------------------


def check_export(path: Path, pipeline_ok: bool = False) -> Availability:
    """Is ``path`` an export folder (or, with ``pipeline_ok``, any HF model folder or .gguf file)?

    The full hash check happens when it loads.
    """
    through = "through transformers' DecisionPipeline"
    if pipeline_ok and path.is_file() and path.suffix == GGUF_SUFFIX:
        found = check_gguf(path)  # the policy rule's: a GGUF file needs the gguf reader
        return Availability(True, path, f"GGUF chat model at {shown_path(path)}, {through}") if found.ok else found
    if not path.is_dir():
        return Availability(False, None, f"no folder at {shown_path(path)}")
    if (path / DECISION_CARD).is_file() and is_adapter(path):  # an adapter arm: its base must be here too
        found = check_adapter(path)
        return Availability(True, path, f"ready to load from {shown_path(path)} (a LoRA adapter over its base)") if found.ok else found
    if (path / DECISION_CARD).is_file():
        return Availability(True, path, f"ready to load from {shown_path(path)}")
    if (path / POOLED_CARD).is_file():
        return check_pooled(path)
    if (path / OPTION_CARD).is_file():
        return Availability(True, path, f"ready to load from {shown_path(path)} (hashes checked on load)")
    if (path / DECISION_HEAD).is_file():  # not a chat model: the pipeline would give it a random language-model head
        return Availability(False, None, f"{shown_path(path)} holds an export's {DECISION_HEAD} but no {DECISION_CARD}: "
                                         "a damaged export; copy or export it again")
    if pipeline_ok and any(path.glob(f"*{GGUF_SUFFIX}")):
        return Availability(True, path, f"GGUF chat model in {shown_path(path)}, {through}")
    chat = check_folder(path) if pipeline_ok else None
    if chat is not None and chat.ok:
        return Availability(True, path, f"chat model at {shown_path(path)}, {through}")
    return Availability(False, None, f"{shown_path(path)} has no {DECISION_CARD}, so it is not an rlcd-decision-only-v1 export"
                        + (f"; nor a chat model: {chat.message}" if chat is not None else ""))


def design(entry: ModelEntry, found: Availability | None = None) -> str:
    """Which design answers for ``entry``: our option scorer, our letter readout, a chat model, an endpoint."""
    if entry.source == "url":
        return ENDPOINT_DESIGN
    folder = found.path if found is not None and found.path is not None else Path(entry.location)
    if entry.key in dict(SHIPPED_OPTION_SCORERS) or (folder / OPTION_CARD).is_file():
        return OPTION_DESIGN
    if (folder / DECISION_CARD).is_file() and is_adapter(folder):
        return ADAPTER_DESIGN
    if (folder / POOLED_CARD).is_file() or entry.key in dict(SHIPPED_POOLED):
        return POOLED_DESIGN
    if entry.source == "shipped" or (folder / DECISION_CARD).is_file():
        return LETTER_DESIGN
    return PIPELINE_DESIGN


CARDS = (DECISION_CARD, OPTION_CARD, POOLED_CARD)
"""What a trained decision folder holds whatever its kind: a shipped folder without one is not trained yet."""


def check_decision(entry: ModelEntry) -> Availability:
    """Can the decision model ``entry`` load on this machine now? Never touches the network."""
    if entry.remote_code:
        return Availability(False, None, f"{entry.location} {REMOTE_CODE}")
    if entry.source == "url":
        return Availability(True, None, f"System One endpoint {entry.location} (asked on every request)")
    if entry.source != "hub":
        folder = Path(entry.location)
        found = check_export(folder, pipeline_ok=entry.source == "local")
        if found.ok or entry.source != "shipped" or any((folder / card).is_file() for card in CARDS):
            return found  # a trained folder that cannot load says why (its base missing, a file damaged)
        make = (dict(SHIPPED_OPTION_SCORERS).get(entry.key) or {entries.AGENT_READER: CUED_READER_MAKE}.get(entry.key)
                or (POOLED_MAKE if entry.key in dict(SHIPPED_POOLED) else None)
                or (LETTER_ARMS_MAKE if entry.key in dict(SHIPPED_LETTER_ARMS) else None))
        how = (f"make it with {make}" if make else
               "train the arms with train/decision_pipeline.sh and copy them here with python -m train.decision_ship")
        return Availability(False, None, f"{entry.key} is not trained yet ({found.message}); {how}")
    snapshot = cached_snapshot(entry.location)
    if snapshot is None:
        return Availability(False, None, how_to_get(entry.location))
    return check_export(snapshot, pipeline_ok=entry.key == entry.location)  # a typed hub id: any model
