"""Models, one wing for both kinds (policies and decision models) and every tab and script.

Modules: ``entries`` (``ModelEntry``, ``Availability``, the shipped, packaged and published models
as data, ``parse_spec``), ``availability`` (the one acceptance rule for a folder, every ``check_*``),
``lists`` (the one list both tabs show, typed keys), ``loader`` (the one loader of a causal LM folder,
GGUF file or LoRA adapter) and ``cache`` (the one load-once cache, ``pick``). Importing the package
imports no torch: only loading does.
"""

__all__ = ["availability", "cache", "entries", "lists", "loader"]
