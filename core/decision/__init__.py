"""Decision models: typed questions answered with a probability for every option, and their measurement.

The interface: ``model`` (``DecisionModel``, the Protocol every kind implements; ``KINDS``, the
table of kinds; ``open_decider`` for ``core.models``' load-once cache; one Ask over several
models), ``questions`` (Choice/Score/Noul, answers, state rendering).
The letter engine: ``prompt`` (template, seam, letter tokens), ``readout`` (differentiable option
logits, shared with training), ``decider`` (three exact paths and automatic choice), ``cost`` (path
cost model), ``export`` (rlcd-decision-only-v1), ``adapter`` (LoRA arms over a real base), ``batches`` (rows as token batches),
``training`` (training-arm maths), ``random_model`` (random Qwen3 bodies and a letter-safe
tokenizer for tests and benchmarks), ``data/`` (the synthetic decision data).
The option design: ``option/`` (model, request, scorer, decider).
The pooled readout: ``pooled`` (a bilinear head over a frozen real body's mean states; hashed folder).
``softening`` (a temperature growing as a state lies far from the training states: pooled heads and letter arms).
``rotation`` (a choice read in every cyclic order of its options, the readings averaged: an adapter arm's card says).
System One: ``system_one`` (request/answer shapes), ``pipeline`` (any chat model via transformers'
DecisionPipeline), ``endpoint`` (any /v1/systemone URL), ``auto_model`` (ours in their pipeline),
``serve`` (``python -m core.decision.serve DIR``).
Measurement: ``evaluation/`` (evalsets, reports, scores, familiarity).
Importing the package stays light: names whose modules import torch load on first use.
"""

from core.decision.model import DecisionModel, RequestTooLong
from core.decision.prompt import SeamError, check_seam, letter_token_ids, render_prompt, split_prompt
from core.decision.questions import Answer, Choice, Noul, QuestionError, Score

_TORCH_NAMES = {"Decider": "decider", "Limits": "decider", "option_logits": "readout", "option_logprobs": "readout"}
"""Names whose modules import torch: loaded on first use, so importing the package (e.g. the app's
Decisions tab at start-up) does not pay for torch and transformers."""

def __getattr__(name: str):
    if name in _TORCH_NAMES:
        import importlib

        return getattr(importlib.import_module(f"core.decision.{_TORCH_NAMES[name]}"), name)
    raise AttributeError(f"module 'core.decision' has no attribute {name!r}")


__all__ = [
    "Answer", "Choice", "Decider", "DecisionModel", "Limits", "Noul", "QuestionError", "RequestTooLong", "Score",
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
