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

GGUF_SUFFIX = ".gguf"


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

        request = {"state": state, "questions": dict(specs)}
        try:
            with torch.no_grad():
                inputs = self.pipe.preprocess(request)
                answers = self.pipe.postprocess(self.pipe.forward(inputs))
        except ValueError as err:  # e.g. labels that are not single tokens for this model
            raise QuestionError(f"{self.name}: {err}") from None
        return answers, sum(int(i["input_ids"].shape[-1]) for i, _ in inputs["prompts"])


def gguf_file(folder: Path) -> str | None:
    """The one ``.gguf`` file in ``folder`` (a GGUF-only repo such as the offline SmolLM2 wheel)."""
    found = sorted(p.name for p in folder.glob(f"*{GGUF_SUFFIX}"))
    if len(found) > 1:
        raise ValueError(f"{folder} holds several GGUF files {found}; name one as FOLDER/{found[0]}")
    return found[0] if found else None


def load_pipeline_decider(location: str | Path, name: str = "") -> PipelineDecider:
    """Load ``pipeline("decision", model=location)`` on CPU in fp32; never runs remote code.

    ``location`` is a local folder, a cached hub id, or a ``.gguf`` file (dequantised to fp32).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline

    path = Path(location).expanduser()
    kwargs = {"trust_remote_code": False, "dtype": torch.float32, "device": "cpu"}
    gguf = path.name if path.suffix == GGUF_SUFFIX else (gguf_file(path) if path.is_dir() else None)
    if gguf:  # the pipeline takes no gguf_file: load the model and tokenizer from the file first
        folder = path.parent if path.suffix == GGUF_SUFFIX else path
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf, dtype=torch.float32).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
        model.name_or_path = str(folder)  # where the pipeline looks for a decision.json
        pipe = pipeline("decision", model=model, tokenizer=tokenizer, device="cpu")
    else:
        pipe = pipeline("decision", model=str(location), **kwargs)
    pipe.model.eval()
    return PipelineDecider(pipe, name or str(location))


def open_model(location: str | Path, name: str) -> PipelineDecider:
    """``core.decision.model.KINDS``' loader: a chat model (folder, cached hub id, GGUF) through the pipeline."""
    try:
        return load_pipeline_decider(location, name=name)
    except (OSError, ValueError, KeyError) as err:  # transformers raises many types for a broken folder
        raise ValueError(f"{name}: could not load {location} as a chat model: {type(err).__name__}: {err}") from None
