"""The decision engine: typed questions, the published letter-readout prompt, the Decider, export.

Modules: ``questions`` (Choice/Score/Noul, answers, state rendering), ``prompt`` (template, seam,
letter tokens), ``readout`` (differentiable option logits, shared with training), ``decider`` (three
exact paths and automatic choice), ``cost`` (path cost model), ``export`` (rlcd-decision-only-v1),
``random_model`` (random Qwen3 bodies and a letter-safe tokenizer for tests and benchmarks);
System One: ``system_one`` (request/answer shapes), ``pipeline`` (any chat model via transformers'
DecisionPipeline), ``endpoint`` (any /v1/systemone URL), ``auto_model`` (ours in their pipeline),
``serve`` (``python -m core.decision.serve DIR``).
"""

from core.decision.prompt import SeamError, check_seam, letter_token_ids, render_prompt, split_prompt
from core.decision.questions import Answer, Choice, Noul, QuestionError, Score

_TORCH_NAMES = {"Decider": "decider", "Limits": "decider", "RequestTooLong": "decider",
                "option_logits": "readout", "option_logprobs": "readout"}
"""Names whose modules import torch: loaded on first use, so importing the package (e.g. the app's
Decisions tab at start-up) does not pay for torch and transformers."""


def __getattr__(name: str):
    if name in _TORCH_NAMES:
        import importlib

        return getattr(importlib.import_module(f"core.decision.{_TORCH_NAMES[name]}"), name)
    raise AttributeError(f"module 'core.decision' has no attribute {name!r}")


__all__ = [
    "Answer", "Choice", "Decider", "Limits", "Noul", "QuestionError", "RequestTooLong", "Score",
    "SeamError", "check_seam", "letter_token_ids", "option_logits", "option_logprobs", "render_prompt",
    "split_prompt",
]


def _register_with_transformers() -> None:
    """Make our exports transformers decision models (``core.decision.auto_model``) when this process
    already loaded transformers; otherwise ``import core.decision.auto_model`` does it, so importing
    the package alone never pulls in torch (the app's start-up stays light)."""
    import sys

    if "transformers" in sys.modules:
        import core.decision.auto_model  # noqa: F401  (registers on import)


_register_with_transformers()
