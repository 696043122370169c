"""The one loader of a causal LM: a model folder, a ``.gguf`` file or a LoRA adapter, fp32, never remote code.

``causal_lm`` is the one place in ``core`` that reads causal-LM weights (remote code always off;
our decision models' transformers class falls back to it too); ``load_causal_lm`` gives it fp32
and a tokenizer, ``load_folder`` adds the chat template (our shipped tool template for a packaged GGUF file) and
optional int8, ``load_adapter`` puts an adapter over its base, ``load_location`` checks any location by
the one rule (``core.models.availability``) and loads it, and ``decision_pipeline`` builds
transformers' ``pipeline("decision")`` over a folder or GGUF file. With ``shared`` (the app's caches,
``shared_causal_lm``) a model is built over the process's one copy of its base (``core.models.bases``)
and an adapter stays unmerged on it; without (scripts: eval, SFT, GRPO; int8) it gets private
weights, an adapter merged for play or apart and trainable. Loading once per process is
``core.models.cache``'s job.
"""

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from core.models import bases, dense_copies, entries
from core.models.availability import adapter_base, base_location, cached_snapshot, check, is_adapter
from core.models.entries import (GGUF_SUFFIX, TOKENIZER_FILES, Availability, ModelEntry, local_entry, packaged_entry,
                                 shown_path)

Progress = Callable[[float, str], None]
"""Called with (fraction done in [0, 1], what is happening) while a model loads."""
INT8_SUGGESTED_PARAMS = 200_000_000
"""Above this many parameters, int8 dynamic quantisation is suggested for CPU play."""


def quiet(fraction: float, text: str) -> None:
    """A ``Progress`` that shows nothing (scripts and tests)."""


@dataclass
class LoadedModel:
    """A loaded, read-only causal LM and its tokenizer (shared between sessions)."""

    entry: ModelEntry
    path: Path
    model: Any
    tokenizer: Any
    int8: bool
    params: int
    max_new_tokens: int | None = None
    """Tokens per assistant message the model's folder declares (``declared_budget``); None: the caller's default."""


class ModelLoadError(RuntimeError):
    """A model that cannot be loaded; the message says what is wrong and how to fix it."""


def quantize_int8(model: Any) -> Any:
    """Dynamic int8 quantisation of every Linear layer (weights int8, activations fp32).

    ``torch.ao.quantization.quantize_dynamic`` is deprecated in favour of torchao, which is not a
    dependency; it still works on torch 2.13 and generates 1.6-2x the fp32 tokens/s at the published
    0.6B and 1.7B shapes (``bench/live_latency.py``, one thread). In place: a copy would hold a second
    fp32 body at the peak (13.6 GB instead of 6.8 for 1.7B).
    """
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)


GENERATION_CONFIG = "generation_config.json"
"""A model or adapter folder's generation record (transformers' layout); its ``max_new_tokens`` is the
token budget per assistant message the model was made for."""


def declared_budget(path: Path) -> int | None:
    """The ``max_new_tokens`` that ``path``'s ``generation_config.json`` declares (None: the folder, a
    ``.gguf`` file, declares none).

    Raises:
        ModelLoadError: the file is not JSON, or its ``max_new_tokens`` is not a positive integer.
    """
    record = path / GENERATION_CONFIG if path.is_dir() else None
    if record is None or not record.is_file():
        return None
    try:
        budget = json.loads(record.read_text(encoding="utf-8")).get("max_new_tokens")
    except (ValueError, AttributeError) as exc:
        raise ModelLoadError(f"{shown_path(record)} is not a JSON object: {exc}") from None
    if budget is not None and (type(budget) is not int or budget < 1):
        raise ModelLoadError(f"{shown_path(record)}: max_new_tokens must be a positive integer, got {budget!r}")
    return budget


def gguf_template(path: Path) -> Path | None:
    """The tool chat template we ship for a packaged GGUF file (its own template has no tools)."""
    for _, _, file, folder, _ in entries.PACKAGED_MODELS:
        if path.name == file:
            return entries.SHIPPED_DIR / folder / "chat_template.jinja"
    return None


def gguf_file(folder: Path) -> str | None:
    """The one ``.gguf`` file in ``folder`` (a GGUF-only repo such as the offline SmolLM2 wheel)."""
    found = sorted(p.name for p in folder.glob(f"*{GGUF_SUFFIX}"))
    if len(found) > 1:
        raise ValueError(f"{folder} holds several GGUF files {found}; name one as FOLDER/{found[0]}")
    return found[0] if found else None


def causal_lm(location: str | Path, *args: Any, **options: Any) -> Any:
    """transformers' causal LM at ``location`` with the caller's options, never with remote code."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(location, *args, **{**options, "trust_remote_code": False})


def load_causal_lm(folder: Path, gguf: str | None = None, progress: Progress = quiet) -> tuple[Any, Any]:
    """(model, tokenizer) from ``folder`` (or its GGUF file ``gguf``, dequantised, or that file's dense copy when
    one is kept: ``core.models.dense_copies``), fp32, eval mode, no remote code. Raises whatever transformers
    raises for a broken folder."""
    import torch
    from transformers import AutoTokenizer

    if gguf and (copy := dense_copies.existing_copy(folder / gguf)) is not None:
        progress(0.1, f"loading {gguf}'s dense copy (dequantised once, kept at {shown_path(copy)})")
        try:
            model, tokenizer = load_causal_lm(copy, None, quiet)
        except Exception as error:  # a damaged copy: dropped, and the file dequantised again below
            dense_copies.drop(copy, error)
        else:
            model.name_or_path = tokenizer.name_or_path = str(folder)  # named as a load of the file names it
            return model, tokenizer
    options = {"gguf_file": gguf} if gguf else {}
    progress(0.1, f"loading tokenizer from {shown_path(folder / gguf if gguf else folder)}")
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **options)
    progress(0.3, "loading weights" + (" (dequantising the GGUF file)" if gguf else ""))
    model = causal_lm(folder, dtype=torch.float32, **options)
    if gguf:  # dequantised on load: the weights are dense fp32, so trainers may treat it as any model
        model.hf_quantizer = None
        if hasattr(model, "is_quantized"):
            model.is_quantized = False
        dense_copies.keep_copy(folder / gguf, model, tokenizer)
    return model.eval(), tokenizer


def open_weights(path: Path, progress: Progress = quiet, shared: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer) of a folder or ``.gguf`` file: private weights, or (``shared``) a module tree of
    its own over the process's one copy of the base (``core.models.bases``), loaded on first use."""
    if not shared:
        folder, gguf = (path.parent, path.name) if path.suffix == GGUF_SUFFIX else (path, None)
        return load_causal_lm(folder, gguf, progress)
    known = bases.base_key(path) in bases.loaded_bases()
    base = bases.shared_base(path, lambda folder, gguf: load_causal_lm(folder, gguf, progress))
    if known:
        progress(0.6, f"{base.params / 1e6:.1f} M-parameter base already loaded: sharing its weights")
    return bases.build(base)


def load_folder(entry: ModelEntry, path: Path, int8: bool, progress: Progress, shared: bool = False) -> LoadedModel:
    """Load tokenizer and causal LM from a checked local folder (or a ``.gguf`` file, dequantised, or
    an adapter folder over its base), with a chat template, optionally int8. ``shared``: over the
    process's one copy of the base; int8 never shares (quantising rewrites the Linear layers in place)."""
    if path.is_dir() and is_adapter(path):
        return load_adapter(entry, path, int8, progress, shared=shared)
    gguf = path.name if path.suffix == GGUF_SUFFIX else None
    budget = declared_budget(path)  # a bad record is refused before the weights load
    try:
        model, tokenizer = open_weights(path, progress, shared and not int8)
    except Exception as exc:  # transformers raises many types for a broken folder
        raise ModelLoadError(f"{entry.key}: could not load {shown_path(path)}: {type(exc).__name__}: {exc}") from exc
    template = gguf_template(path) if gguf else None
    if template is not None:
        tokenizer.chat_template = template.read_text(encoding="utf-8")
    if not getattr(tokenizer, "chat_template", None):
        raise ModelLoadError(f"{entry.key}: the tokenizer in {shown_path(path)} has no chat template")
    params = sum(p.numel() for p in model.parameters())
    if int8:
        progress(0.8, "quantising Linear layers to int8")
        model = quantize_int8(model)
    big = params > INT8_SUGGESTED_PARAMS and not int8
    hint = "; large for a CPU: the int8 option generates about twice as fast" if big else ""
    progress(1.0, f"{entry.key} ready ({params / 1e6:.1f} M parameters{', int8' if int8 else ''}{hint})")
    return LoadedModel(entry, path, model, tokenizer, int8, params, budget)


def load_adapter(entry: ModelEntry, path: Path, int8: bool, progress: Progress, trainable: bool = False,
                 shared: bool = False) -> LoadedModel:
    """A LoRA adapter folder: its base loaded in fp32 and the adapter applied. ``shared`` (not int8,
    not trainable): unmerged on a tree over the process's one copy of the base, so its low-rank
    weights are its only bytes (a turn costs a little more than the base's). Otherwise on private
    weights: merged for play (a turn costs what the base's does) or kept apart and trainable (GRPO
    after the warmup). The folder's chat template (and tokenizer, when it holds one; else the
    base's) are the ones it was trained with, and so is its token budget (else its base's)."""
    from peft import PeftModel
    from transformers import AutoTokenizer

    try:
        found = base_location(adapter_base(path))
    except ValueError as exc:
        raise ModelLoadError(f"{entry.key}: {exc}") from None
    if not found.ok:
        raise ModelLoadError(f"{entry.key}: the adapter's base is unavailable: {found.message}")
    shared = shared and not (int8 or trainable)
    budget = declared_budget(path)
    base = load_folder(entry, found.path, False, progress, shared)
    progress(0.7, f"applying the LoRA adapter in {shown_path(path)}")
    own_tokenizer = any((path / name).is_file() for name in TOKENIZER_FILES)
    try:
        model = PeftModel.from_pretrained(base.model, path, is_trainable=trainable)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False) if own_tokenizer else base.tokenizer
    except Exception as exc:  # peft and transformers raise many types for a broken adapter
        raise ModelLoadError(f"{entry.key}: could not apply the adapter in {shown_path(path)}: "
                             f"{type(exc).__name__}: {exc}") from exc
    if shared:  # the base's tree with LoRA layers in its Linears; the shared weights stay as they are
        model = model.get_base_model().eval()
    elif not trainable:
        model = model.merge_and_unload()
        model.eval()
    template = path / "chat_template.jinja"
    if template.is_file():  # the template it was trained with (a shipped adapter keeps only this)
        tokenizer.chat_template = template.read_text(encoding="utf-8")
    elif not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = base.tokenizer.chat_template
    if int8:
        model = quantize_int8(model)
    how = "over the shared base" if shared else "merged"
    progress(1.0, f"{entry.key} ready ({base.params / 1e6:.1f} M parameters with its LoRA adapter {how})")
    return LoadedModel(entry, path, model, tokenizer, int8, base.params, budget or base.max_new_tokens)


def load_location(location: str | Path, trainable: bool = False, progress: Progress = quiet,
                  shared: bool = False) -> LoadedModel:
    """Check a location by the one rule and load it: a packaged ``distribution/file``, a ``.gguf``
    file, an adapter folder (``trainable``: kept apart, for GRPO) or a model folder; ``shared`` (never
    with ``trainable``, whose weights are always private) over the process's one copy of its base.

    Raises:
        ModelLoadError: the check's reason (what is missing), or why loading failed.
    """
    entry = packaged_entry(location) or local_entry(location)
    found = check(entry)
    if not found.ok:
        raise ModelLoadError(found.message)
    if found.path.is_dir() and is_adapter(found.path):
        return load_adapter(entry, found.path, False, progress, trainable, shared)
    return load_folder(entry, found.path, False, progress, shared and not trainable)


def shared_causal_lm(location: str | Path, progress: Progress = quiet) -> LoadedModel:
    """A causal LM for ``location`` over this process's one copy of its base, for read-only use.

    ``location`` is what ``load_location`` takes (a packaged ``distribution/file``, a ``.gguf`` file,
    a model folder or a LoRA adapter folder). The model is a module tree of its own (its own
    generation slot and KV store) whose base tensors are shared with every other model built on the
    same base; an adapter's LoRA layers sit unmerged in its Linears, so ``.model.model`` is the
    adapted body (a letter head reads its hidden states). Never for training: use
    ``load_location(location, trainable=True)``.

    Raises:
        ModelLoadError: the check's reason, or why loading failed.
    """
    return load_location(location, progress=progress, shared=True)


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


def decision_pipeline(location: str | Path) -> Any:
    """transformers' ``pipeline("decision", model=location)`` on CPU in fp32; never runs remote code.

    ``location`` is a local folder, a cached hub id, or a ``.gguf`` file (or a folder holding one),
    which ``open_weights`` builds first over the process's shared base: the pipeline takes no ``gguf_file``.
    """
    import torch
    from transformers import pipeline

    path = Path(location).expanduser()
    gguf = path.name if path.suffix == GGUF_SUFFIX else (gguf_file(path) if path.is_dir() else None)
    if gguf:  # over the process's one copy of the base (the Live policy of the same file shares it)
        folder = path.parent if path.suffix == GGUF_SUFFIX else path
        model, tokenizer = open_weights(folder / gguf, shared=True)
        model.name_or_path = str(folder)  # where the pipeline looks for a decision.json
        pipe = pipeline("decision", model=model, tokenizer=tokenizer, device="cpu")
    else:
        pipe = pipeline("decision", model=str(location), trust_remote_code=False, dtype=torch.float32, device="cpu")
    pipe.model.eval()
    return pipe
