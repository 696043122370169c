"""The option-scoring design: one forward pass over a state and all its questions, keys of any kind.

Modules: ``model`` (the Qwen3 body with option and confidence heads; hashed save and strict load),
``request`` (System One requests validated by the scorer's own rules, limits, block-diagonal
packing), ``scorer`` (``OptionScorer``: one pass, System One answers), ``decider``
(``OptionDecider``: the scorer as a decision model for the Decisions tab and the reports).
Importing this package is light; each module but ``decider`` imports torch.
"""

__all__ = ["decider", "model", "request", "scorer"]
