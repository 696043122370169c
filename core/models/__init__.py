"""Models, one wing for both kinds (policies and decision models) and every tab and script.

Modules: ``entries`` (``ModelEntry``, ``Availability``, the shipped, packaged and published models
as data, ``parse_spec``), ``availability`` (the one acceptance rule for a folder, every ``check_*``),
``lists`` (the one list both tabs show, typed keys), ``loader`` (the one loader of a causal LM folder,
GGUF file or LoRA adapter; ``shared_causal_lm``), ``dense_copies`` (a GGUF file dequantised once, kept as a
dense folder), ``bases`` (one copy of a base per process, shared
by every model built on it), ``layers`` (a body running only its first layers; a cache over keys and values
held, not copied), ``cache`` (the one load-once cache, ``pick``), ``memory`` (the process's LRU bound on
loaded models' bytes, a shared base counted once) and ``packages`` (the packaged weights of requirements-models.txt, installed at a Space's
start without their dependencies). Importing the package imports no torch: only loading does.
"""

__all__ = ["availability", "bases", "cache", "dense_copies", "entries", "layers", "lists", "loader", "memory", "packages"]
