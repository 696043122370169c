"""Any Hugging Face chat model as a decision model, through transformers' ``DecisionPipeline``.

``pipeline("decision", model=...)`` scores a decision model's options with its head, and any other
chat model's by the next-token logits of the option labels under transformers' default prompt (or
the repo's ``decision_template.jinja`` + ``decision.json``). ``PipelineDecider`` gives such a model
the Decider interface (``decide`` for calibration reports and Compare, ``score`` for Ask and /score),
so the workbench measures it exactly as it measures ours.

    decider = load_pipeline_decider("path/to/chat-model")          # or a cached hub id
    decider.score({"state": "...", "questions": {"team": {"type": "choice", "criteria": {...}}}})
"""

from pathlib import Path
from typing import Any, Mapping

from core.decision import system_one
from core.decision.model import PIPELINE_DESIGN
from core.decision.questions import QuestionError
from core.models.loader import decision_pipeline


class PipelineDecider(system_one.SystemOneModel):
    """The Decider interface over a ``DecisionPipeline`` (no token limits of ours: the model's own)."""

    path_name = "pipeline"
    design = PIPELINE_DESIGN

    def __init__(self, pipe, name: str = ""):
        self.pipe = pipe
        self.name = name or str(getattr(pipe.model, "name_or_path", "pipeline"))

    def _run(self, state: Any, specs: Mapping[str, Any]) -> tuple[dict, int]:
        """transformers' own steps (as ``transformers serve`` runs them): answers and input tokens."""
        import torch

        from jinja2 import TemplateError

        request = {"state": state, "questions": dict(specs)}
        try:
            with torch.no_grad():
                inputs = self.pipe.preprocess(request)
                answers = self.pipe.postprocess(self.pipe.forward(inputs))
        except (ValueError, TemplateError) as err:  # labels that are not single tokens; a chat template that refuses
            raise QuestionError(f"{self.name}: {err}") from None
        return answers, sum(int(i["input_ids"].shape[-1]) for i, _ in inputs["prompts"])


def load_pipeline_decider(location: str | Path, name: str = "") -> PipelineDecider:
    """``pipeline("decision", model=location)`` (``core.models.loader.decision_pipeline``: CPU, fp32,
    never remote code) as a Decider; ``location`` is a local folder, a cached hub id, or a ``.gguf`` file."""
    return PipelineDecider(decision_pipeline(location), name or str(location))


def open_model(location: str | Path, name: str) -> PipelineDecider:
    """``core.decision.model.KINDS``' loader: a chat model (folder, cached hub id, GGUF) through the pipeline."""
    try:
        return load_pipeline_decider(location, name=name)
    except (OSError, ValueError, KeyError) as err:  # transformers raises many types for a broken folder
        raise ValueError(f"{name}: could not load {location} as a chat model: {type(err).__name__}: {err}") from None
