"""Loading policies: each (folder, int8) once, shared by every session, never with remote code.

``ModelCache.get(entry)`` checks the entry through ``core.registry`` (local files, package
metadata, the Hugging Face cache), downloads a hub entry only on an explicit load when the hub is
allowed, then loads tokenizer and causal LM in fp32 (a packaged ``.gguf`` file dequantised, with
our shipped tool chat template; a LoRA adapter folder over its base, merged), optionally
quantising Linear layers to int8.
"""

import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from core.registry import (ADAPTER_CONFIG, PACKAGED_MODELS, SHIPPED_DIR, TOKENIZER_FILES, Availability, ModelEntry,
                           adapter_base, base_location, cached_snapshot, check, shown_path)

Progress = Callable[[float, str], None]
"""Called with (fraction done in [0, 1], what is happening) while a model loads."""
INT8_SUGGESTED_PARAMS = 200_000_000
"""Above this many parameters, int8 dynamic quantisation is suggested for CPU play."""


@dataclass
class LoadedModel:
    """A loaded, read-only causal LM and its tokenizer (shared between sessions)."""

    entry: ModelEntry
    path: Path
    model: Any
    tokenizer: Any
    int8: bool
    params: int


class ModelLoadError(RuntimeError):
    """A model that cannot be loaded; the message says what is wrong and how to fix it."""


def quantize_int8(model: Any) -> Any:
    """Dynamic int8 quantisation of every Linear layer (weights int8, activations fp32).

    ``torch.ao.quantization.quantize_dynamic`` is deprecated in favour of torchao, which is not a
    dependency; it still works on torch 2.13 and is 3-4x faster for a 0.6B body on 2 cores. In
    place: a copy would hold a second fp32 body at the peak (13.6 GB instead of 6.8 for 1.7B).
    """
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)


def gguf_template(path: Path) -> Path | None:
    """The tool chat template we ship for a packaged GGUF file (its own template has no tools)."""
    for _, _, file, folder, _ in PACKAGED_MODELS:
        if path.name == file:
            return SHIPPED_DIR / folder / "chat_template.jinja"
    return None


def load_folder(entry: ModelEntry, path: Path, int8: bool, progress: Progress) -> LoadedModel:
    """Load tokenizer and causal LM from a checked local folder (or a ``.gguf`` file, dequantised),
    fp32, eval mode, no remote code."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if path.is_dir() and (path / ADAPTER_CONFIG).is_file():
        return load_adapter(entry, path, int8, progress)
    folder, gguf = (path.parent, {"gguf_file": path.name}) if path.suffix == ".gguf" else (path, {})
    progress(0.1, f"loading tokenizer from {path}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **gguf)
        progress(0.3, "loading weights" + (" (dequantising the GGUF file)" if gguf else ""))
        model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=False, dtype=torch.float32, **gguf)
    except Exception as exc:  # transformers raises many types for a broken folder
        raise ModelLoadError(f"{entry.key}: could not load {path}: {type(exc).__name__}: {exc}") from exc
    if gguf:  # dequantised on load: the weights are dense fp32, so trainers may treat it as any model
        model.hf_quantizer = None
        if hasattr(model, "is_quantized"):
            model.is_quantized = False
    template = gguf_template(path) if gguf else None
    if template is not None:
        tokenizer.chat_template = template.read_text(encoding="utf-8")
    if not getattr(tokenizer, "chat_template", None):
        raise ModelLoadError(f"{entry.key}: the tokenizer in {path} has no chat template")
    model.eval()
    params = sum(p.numel() for p in model.parameters())
    if int8:
        progress(0.8, "quantising Linear layers to int8")
        model = quantize_int8(model)
    big = params > INT8_SUGGESTED_PARAMS and not int8
    hint = "; large for a CPU: the int8 option runs it about 4x faster" if big else ""
    progress(1.0, f"{entry.key} ready ({params / 1e6:.1f} M parameters{', int8' if int8 else ''}{hint})")
    return LoadedModel(entry, path, model, tokenizer, int8, params)


def load_adapter(entry: ModelEntry, path: Path, int8: bool, progress: Progress, trainable: bool = False) -> LoadedModel:
    """A LoRA adapter folder: its base loaded in fp32 and the adapter applied, merged into the base
    weights for play (a turn costs what the base's does) or kept apart and trainable (GRPO after
    the warmup). The folder's chat template (and tokenizer, when it holds one; else the base's) are
    the ones it was trained with."""
    from peft import PeftModel
    from transformers import AutoTokenizer

    try:
        found = base_location(adapter_base(path))
    except ValueError as exc:
        raise ModelLoadError(f"{entry.key}: {exc}") from None
    if not found.ok:
        raise ModelLoadError(f"{entry.key}: the adapter's base is unavailable: {found.message}")
    base = load_folder(entry, found.path, False, progress)
    progress(0.7, f"applying the LoRA adapter in {shown_path(path)}")
    own_tokenizer = any((path / name).is_file() for name in TOKENIZER_FILES)
    try:
        model = PeftModel.from_pretrained(base.model, path, is_trainable=trainable)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False) if own_tokenizer else base.tokenizer
    except Exception as exc:  # peft and transformers raise many types for a broken adapter
        raise ModelLoadError(f"{entry.key}: could not apply the adapter in {shown_path(path)}: "
                             f"{type(exc).__name__}: {exc}") from exc
    if not trainable:
        model = model.merge_and_unload()
        model.eval()
    template = path / "chat_template.jinja"
    if template.is_file():  # the template it was trained with (a shipped adapter keeps only this)
        tokenizer.chat_template = template.read_text(encoding="utf-8")
    elif not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = base.tokenizer.chat_template
    if int8:
        model = quantize_int8(model)
    progress(1.0, f"{entry.key} ready ({base.params / 1e6:.1f} M parameters with its LoRA adapter merged)")
    return LoadedModel(entry, path, model, tokenizer, int8, base.params)


def fetch_from_hub(entry: ModelEntry, cache_dir: str | Path | None, progress: Progress) -> Availability | None:
    """Download a hub entry into the cache when the hub is allowed (an explicit Load, never a check).

    Returns None offline (``HF_HUB_OFFLINE=1``) or when the download fails, so the caller shows
    the "how to make it available" message instead.
    """
    from huggingface_hub import is_offline_mode, snapshot_download

    if is_offline_mode() or cached_snapshot(entry.location, cache_dir) is not None:
        return None
    progress(0.05, f"downloading {entry.location} from the Hugging Face hub")
    try:
        snapshot_download(entry.location, cache_dir=cache_dir, etag_timeout=10,
                          allow_patterns=["*.json", "*.safetensors", "*.jinja", "*.txt", "*.model"])
    except Exception:  # no network, no such repo, gated: the offline message says what to do
        return None
    found = check(entry, cache_dir)
    return found if found.ok else None


@dataclass
class ModelCache:
    """Loaded models shared by all sessions: each (folder, int8) loads once, under its own lock."""

    cache_dir: str | Path | None = None
    _models: dict[tuple[str, bool], LoadedModel] = field(default_factory=dict)
    _locks: dict[tuple[str, bool], threading.Lock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def get(self, entry: ModelEntry, int8: bool = False, progress: Progress | None = None) -> LoadedModel:
        """Return the loaded model, loading it first if no session has yet."""
        progress = progress or (lambda fraction, text: None)
        if entry.kind != "policy":
            raise ModelLoadError(f"{entry.key} is a decision model; load it from the Decisions tab")
        found = check(entry, self.cache_dir)
        if not found.ok and entry.source == "hub" and not entry.remote_code:
            found = fetch_from_hub(entry, self.cache_dir, progress) or found
        if not found.ok:
            raise ModelLoadError(f"{entry.key} is unavailable: {found.message}")
        key = (str(found.path.resolve()), int8)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._models:
                self._models[key] = load_folder(entry, found.path, int8, progress)
            else:
                progress(1.0, f"{entry.key} already loaded")
            return self._models[key]

    def loaded(self) -> list[str]:
        """Labels of what is loaded, for the status line."""
        return [f"{m.entry.key}{' (int8)' if m.int8 else ''}" for m in self._models.values()]
