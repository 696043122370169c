"""The option-scoring decision model: a Qwen3 body, an option head and a confidence head.

Our own build of the published option-scoring design (no remote code): every option is scored
from the body's hidden state at the marker that ends the option's own text, the softmax covers the
declared options only, and a separate confidence head estimates P(the top option is right), which
is low when the truth is not among the options. Saved as "clarifylab-option-scorer-v1": the body,
the two heads, the body's HF config, the tokenizer and ``option_model.json`` (settings and sha256
of both weight files, verified before anything is parsed).

    model = OptionModel(random_body(len(tok), seed=0, hidden=128, layers=4))
    save_option_model("checkpoints/option-scorer", model, tok, training={...})
    model, tok, card = load_option_model("checkpoints/option-scorer")
"""

import hashlib
import math
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer

from core.decision.data.store import sha256_file
from core.decision.export.published import portable_tokenizer_config, state_mismatch
from core.models.entries import shown_path
from core.records import plain_problem

FORMAT = "clarifylab-option-scorer-v1"
BODY_FILE, HEADS_FILE, CARD_FILE = "body.safetensors", "heads.safetensors", "option_model.json"
N_STATS = 5
"""Scalar features of a question's option logits given to the confidence head (see ``logit_stats``)."""


class OptionModelError(ValueError):
    """An option-model directory that cannot be trusted or loaded, and why."""


class Settings(BaseModel):
    """Inference settings saved with the model and applied by its scorer."""

    model_config = ConfigDict(extra="forbid")
    temperature: dict[str, float] = Field(default_factory=lambda: {"choice": 1.0, "score": 1.0, "noul": 1.0})
    """Per question type, divides the option logits before the softmax (> 0)."""
    confidence_mode: Literal["head", "max_p"] = "head"
    """What an answer's ``confidence`` reports: the confidence head, or the max option probability."""
    max_tokens: int = 8192
    """Requests longer than this (state plus every question) are refused, never truncated."""
    max_options: int = 255
    """Most options one question may declare."""


class OptionCard(BaseModel):
    """option_model.json."""

    model_config = ConfigDict(extra="forbid")
    format: str
    settings: Settings
    marker_id: int
    """Token id appended after each option's text; the option is scored at that position."""
    hidden_size: int
    head_hidden: int
    training: dict[str, Any]
    sha256: dict[str, str]


class ConfidenceHead(nn.Module):
    """P(top option correct) from the question's header state, the p-weighted option state and logit stats."""

    def __init__(self, hidden: int, width: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * hidden + N_STATS, width), nn.GELU(), nn.Linear(width, 1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features).squeeze(-1)


class OptionModel(nn.Module):
    """Body + option head (one score per option marker) + confidence head (one logit per question)."""

    def __init__(self, body, head_hidden: int = 64):
        super().__init__()
        hidden = body.config.hidden_size
        self.body = body
        self.option_head = nn.Linear(hidden, 1)
        self.confidence_head = ConfidenceHead(hidden, head_hidden)
        self.head_hidden = head_hidden

    def hidden(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Last hidden states [B, T, H] under an explicit additive 4D mask and position ids."""
        return self.body(input_ids=ids, position_ids=positions, attention_mask=mask, use_cache=False).last_hidden_state

    def option_logits(self, states: torch.Tensor) -> torch.Tensor:
        """One unnormalised score per option from its marker's hidden state [N, H] -> [N]."""
        return self.option_head(states).squeeze(-1)


def logit_stats(logits: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Per-question scalars [Q, 5]: max logit, logsumexp, max p, normalised entropy, ln K."""
    masked = logits.masked_fill(~valid, float("-inf"))
    logp = torch.log_softmax(masked, -1).masked_fill(~valid, 0.0)
    p = logp.exp() * valid
    k = valid.sum(-1).clamp(min=2).float()
    entropy = -(p * logp).sum(-1) / torch.log(k)
    return torch.stack([masked.max(-1).values, torch.logsumexp(masked, -1), p.max(-1).values, entropy, torch.log(k)], -1)


def confidence_features(header: torch.Tensor, options: torch.Tensor, logits: torch.Tensor,
                        valid: torch.Tensor) -> torch.Tensor:
    """Head input [Q, 2H + 5]: header state, sum_i p_i * option state_i, logit stats.

    ``options`` is [Q, K, H] and ``logits`` [Q, K] (padded; ``valid`` marks real options).
    """
    p = torch.softmax(logits.masked_fill(~valid, float("-inf")), -1) * valid
    pooled = (p.unsqueeze(-1) * options).sum(1)
    return torch.cat([header, pooled, logit_stats(logits, valid)], -1)


def soft_target_loss(logits: torch.Tensor, valid: torch.Tensor, target: torch.Tensor,
                     weight: torch.Tensor | None = None) -> torch.Tensor:
    """Weighted mean over questions of the cross-entropy -sum_k t_k log softmax(z)_k.

    Rows of ``logits``/``target`` are questions padded to K options (``valid`` marks real ones);
    ``target`` sums to 1 over the real options (an observed frequency or an exact posterior);
    ``weight`` (default 1) scales each question, e.g. by P(truth among the options). Zero total
    weight gives 0: there is nothing to fit, and NaN would poison the step.
    """
    logp = torch.log_softmax(logits.masked_fill(~valid, float("-inf")), -1).masked_fill(~valid, 0.0)
    per_question = -(target * logp).sum(-1)
    w = torch.ones_like(per_question) if weight is None else weight
    total = w.sum()
    return (w * per_question).sum() / total if float(total) > 0 else per_question.sum() * 0.0


def state_hash(module: nn.Module) -> str:
    """sha256 over a module's parameters and buffers (names, shapes, bytes): "did it move?"."""
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


# ---- save / load


def save_option_model(directory: str | Path, model: OptionModel, tokenizer, *, training: dict[str, Any],
                      settings: Settings = Settings()) -> Path:
    """Write the model into an empty ``directory``: weights, config, tokenizer, card with hashes."""
    out = Path(directory)
    if out.exists() and any(out.iterdir()):
        raise OptionModelError(f"{out} is not empty; save into a new directory")
    out.mkdir(parents=True, exist_ok=True)
    body = {k: v.detach().contiguous().cpu() for k, v in model.body.state_dict().items()}
    heads = {f"option_head.{k}": v for k, v in model.option_head.state_dict().items()}
    heads |= {f"confidence_head.{k}": v for k, v in model.confidence_head.state_dict().items()}
    save_file(body, str(out / BODY_FILE), metadata={"format": FORMAT})
    save_file({k: v.detach().contiguous().cpu() for k, v in heads.items()}, str(out / HEADS_FILE),
              metadata={"format": FORMAT})
    model.body.config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    portable_tokenizer_config(out / "tokenizer_config.json")  # transformers 4.57 reads it too
    card = OptionCard(format=FORMAT, settings=settings, marker_id=int(tokenizer.eos_token_id),
                      hidden_size=model.body.config.hidden_size, head_hidden=model.head_hidden, training=training,
                      sha256={name: sha256_file(out / name) for name in (BODY_FILE, HEADS_FILE)})
    (out / CARD_FILE).write_text(card.model_dump_json(indent=2) + "\n")
    return out


def read_option_card(directory: Path) -> OptionCard:
    """option_model.json, validated; refuses another format."""
    path = directory / CARD_FILE
    if not path.is_file():
        raise OptionModelError(f"{directory} has no {CARD_FILE}; not a {FORMAT} directory")
    try:
        card = OptionCard.model_validate_json(path.read_text())
    except ValidationError as err:
        raise OptionModelError(f"{shown_path(path)} is malformed: {plain_problem(err)}") from None
    if card.format != FORMAT:
        raise OptionModelError(f"{path}: format {card.format!r}, expected {FORMAT!r}")
    if any(t <= 0 or not math.isfinite(t) for t in card.settings.temperature.values()):
        raise OptionModelError(f"{path}: temperatures must be positive, got {card.settings.temperature}")
    return card


def _verify_files(directory: Path, card: OptionCard) -> None:
    for name in (BODY_FILE, HEADS_FILE):
        path = directory / name
        if not path.is_file():
            raise OptionModelError(f"{directory} is missing {name}")
        if card.sha256.get(name) != sha256_file(path):
            raise OptionModelError(f"{name}: sha256 does not match {CARD_FILE}; the file was changed or damaged")
    extra = sorted(p.name for p in directory.iterdir()
                   if p.suffix in {".safetensors", ".bin", ".pt", ".pth"} and p.name not in (BODY_FILE, HEADS_FILE))
    if extra:
        raise OptionModelError(f"{directory} carries extra weight files {extra}; a {FORMAT} directory holds "
                               f"only {BODY_FILE} and {HEADS_FILE}")


def _load_strict(module: nn.Module, state: dict[str, torch.Tensor], what: str) -> None:
    mismatch = state_mismatch(module, state)
    if mismatch:
        raise OptionModelError(f"{what} does not match the model: {mismatch}")
    module.load_state_dict(state, strict=True)


def load_option_model(directory: str | Path, *, attn_implementation: str = "sdpa"):
    """(OptionModel in eval mode, tokenizer, card) from a verified directory; never runs remote code."""
    root = Path(directory)
    card = read_option_card(root)
    _verify_files(root, card)
    body_state, head_state = load_file(root / BODY_FILE), load_file(root / HEADS_FILE)
    config = AutoConfig.from_pretrained(root, trust_remote_code=False)
    if config.model_type != "qwen3" or getattr(config, "auto_map", None):
        raise OptionModelError(f"{root}/config.json: model_type {config.model_type!r}; only a plain qwen3 body loads")
    config._attn_implementation = attn_implementation
    model = OptionModel(AutoModel.from_config(config, trust_remote_code=False), card.head_hidden)
    _load_strict(model.body, body_state, BODY_FILE)
    _load_strict(model, {**{f"body.{k}": v for k, v in model.body.state_dict().items()}, **head_state}, HEADS_FILE)
    tokenizer = AutoTokenizer.from_pretrained(root, trust_remote_code=False)
    if tokenizer.eos_token_id != card.marker_id:
        raise OptionModelError(f"the tokenizer's marker id {tokenizer.eos_token_id} differs from {CARD_FILE} ({card.marker_id})")
    return model.eval(), tokenizer, card
