"""Export and strict loading in the published "rlcd-decision-only-v1" layout.

A directory holds: ``body.safetensors`` (the transformer body, no LM head), ``letter_rows.safetensors``
(the 26 x hidden fp32 rows of " A" .. " Z"), ``decision.json`` (a ``DecisionCard``), plus the body's
``config.json`` and the tokenizer files in the normal Hugging Face layout. Loading verifies both
sha256 hashes before parsing anything, requires exactly the expected tensors, checks that the
tokenizer still maps " A" .. " Z" to the recorded ids, and refuses a directory carrying an output
head. ``trust_remote_code`` stays off unless the caller passes it.

    export_causal_lm("checkpoints/decision-rlcd", model, tokenizer, base_model="tiny", training={...})
    decider = load_decider("checkpoints/decision-rlcd")
"""

import hashlib
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, ValidationError
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModel, AutoTokenizer

from core.decision.decider import Decider, Limits
from core.decision.prompt import LETTER_TOKENS, LETTERS, PROMPT_TEMPLATE, letter_token_ids
from core.decision.readout import MASKED_LOGIT

FORMAT = "rlcd-decision-only-v1"
BODY_FILE, ROWS_FILE, CARD_FILE = "body.safetensors", "letter_rows.safetensors", "decision.json"
ROWS_KEY = "letter_rows"
PRIMITIVES = {
    "choice": "2..26 unordered options; value = most probable option",
    "score": "2..26 ordered levels, low to high; score = sum_i p_i * i / (K - 1)",
    "noul": "a yes/no question; options exactly ['true', 'false']; p_true = p('true')",
}
CONFIDENCE = {
    "confidence": "max_k p_k",
    "entropy_confidence": "1 - H(p) / ln K, clipped to [0, 1]",
    "masking": f"letters beyond the option count get logit {MASKED_LOGIT}, so probability exactly 0",
}


class DecisionExportError(ValueError):
    """A decision-model directory that cannot be trusted or loaded, and why."""


class DecisionCard(BaseModel):
    """The decision.json record of an rlcd-decision-only-v1 export."""

    model_config = ConfigDict(extra="forbid")
    format: str
    """Always ``rlcd-decision-only-v1``."""
    letters: list[str]
    letter_token_ids: list[int]
    """Token ids of " A" .. " Z" in the saved tokenizer."""
    prompt_template: str
    primitives: dict[str, str]
    confidence: dict[str, str]
    training: dict[str, Any]
    """Free-form training summary (recipe, steps, data, seed, results)."""
    base_model: str
    prepend_bos: bool
    pad_id: int | None
    tied_embeddings: bool
    """Whether the source model tied its LM head to the input embeddings."""
    hidden_size: int
    sha256: dict[str, str]
    """File name -> sha256 hex of the two weight files."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_decision(directory: str | Path, body, rows: torch.Tensor, tokenizer, *, base_model: str,
                    training: dict[str, Any], prepend_bos: bool = False, tied_embeddings: bool = False) -> Path:
    """Write body, letter rows, config, tokenizer and decision.json into an empty ``directory``."""
    out = Path(directory)
    if out.exists() and any(out.iterdir()):
        raise DecisionExportError(f"{out} is not empty; export into a new directory")
    out.mkdir(parents=True, exist_ok=True)
    ids = letter_token_ids(tokenizer)
    state = {k: v.detach().contiguous().cpu() for k, v in body.state_dict().items()}
    if any(_is_head(k) for k in state):
        raise DecisionExportError("the body passed carries an output head; pass the body (model.base_model)")
    save_file(state, str(out / BODY_FILE), metadata={"format": FORMAT})
    save_file({ROWS_KEY: rows.detach().float().contiguous().cpu()}, str(out / ROWS_FILE), metadata={"format": FORMAT})
    body.config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    card = DecisionCard(
        format=FORMAT, letters=list(LETTERS), letter_token_ids=ids, prompt_template=PROMPT_TEMPLATE,
        primitives=PRIMITIVES, confidence=CONFIDENCE, training=training, base_model=base_model,
        prepend_bos=prepend_bos, pad_id=tokenizer.pad_token_id, tied_embeddings=tied_embeddings,
        hidden_size=int(rows.shape[1]),
        sha256={BODY_FILE: sha256_file(out / BODY_FILE), ROWS_FILE: sha256_file(out / ROWS_FILE)},
    )
    (out / CARD_FILE).write_text(card.model_dump_json(indent=2) + "\n")
    return out


def export_causal_lm(directory: str | Path, model, tokenizer, **kwargs) -> Path:
    """Export a CausalLM: its body and its output-embedding rows of " A" .. " Z"."""
    ids = torch.tensor(letter_token_ids(tokenizer))
    rows = model.get_output_embeddings().weight[ids].detach().float()
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    return export_decision(directory, model.base_model, rows, tokenizer, tied_embeddings=tied, **kwargs)


def _is_head(key: str) -> bool:
    return key.startswith(("lm_head.", "output.", "score.")) or ".lm_head." in key


def read_card(directory: Path) -> DecisionCard:
    """decision.json, validated; refuses another format."""
    path = directory / CARD_FILE
    if not path.is_file():
        raise DecisionExportError(f"{directory} has no {CARD_FILE}; not an {FORMAT} export")
    try:
        card = DecisionCard.model_validate_json(path.read_text())
    except ValidationError as err:
        raise DecisionExportError(f"{path} is malformed: {err}") from None
    if card.format != FORMAT:
        raise DecisionExportError(f"{path}: format {card.format!r}, expected {FORMAT!r}")
    return card


def verify_files(directory: Path, card: DecisionCard) -> None:
    """Hashes of both weight files first; then no extra weight file (an output head) beside them."""
    for name in (BODY_FILE, ROWS_FILE):
        path = directory / name
        if not path.is_file():
            raise DecisionExportError(f"{directory} is missing {name}")
        if name not in card.sha256:
            raise DecisionExportError(f"{CARD_FILE} records no sha256 for {name}")
        if sha256_file(path) != card.sha256[name]:
            raise DecisionExportError(f"{name}: sha256 does not match {CARD_FILE}; the file was changed or damaged")
    extra = sorted(p.name for p in directory.iterdir()
                   if p.suffix in {".safetensors", ".bin", ".pt", ".pth"} and p.name not in (BODY_FILE, ROWS_FILE))
    if extra:
        raise DecisionExportError(f"{directory} carries extra weight files {extra} (an output head?); "
                                  f"a {FORMAT} directory holds only {BODY_FILE} and {ROWS_FILE}")


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(path), framework="pt") as fh:
        return {k: fh.get_tensor(k) for k in fh.keys()}


def load_decider(directory: str | Path, *, trust_remote_code: bool = False, attn_implementation: str = "sdpa",
                 limits: Limits = Limits()) -> Decider:
    """Load and verify an rlcd-decision-only-v1 directory; raise ``DecisionExportError`` on any doubt."""
    root = Path(directory)
    card = read_card(root)
    verify_files(root, card)
    state, rows = _read_tensors(root / BODY_FILE), _read_tensors(root / ROWS_FILE)
    heads = sorted(k for k in state if _is_head(k))
    if heads:
        raise DecisionExportError(f"{BODY_FILE} carries an output head ({heads[:3]}); refused")
    if set(rows) != {ROWS_KEY} or tuple(rows[ROWS_KEY].shape) != (26, card.hidden_size):
        raise DecisionExportError(f"{ROWS_FILE} must hold exactly {ROWS_KEY!r} of shape (26, {card.hidden_size}); "
                                  f"found {[(k, tuple(v.shape)) for k, v in rows.items()]}")
    if rows[ROWS_KEY].dtype != torch.float32:
        raise DecisionExportError(f"{ROWS_FILE}: letter rows are {rows[ROWS_KEY].dtype}, expected float32")
    config = AutoConfig.from_pretrained(root, trust_remote_code=trust_remote_code)
    config._attn_implementation = attn_implementation
    body = AutoModel.from_config(config, trust_remote_code=trust_remote_code)
    expected = set(body.state_dict())
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or unexpected:
        raise DecisionExportError(f"{BODY_FILE} does not match config.json: missing {missing[:5]} "
                                  f"({len(missing)}), unexpected {unexpected[:5]} ({len(unexpected)})")
    body.load_state_dict(state, strict=True)
    tokenizer = AutoTokenizer.from_pretrained(root, trust_remote_code=trust_remote_code)
    ids = letter_token_ids(tokenizer)
    if ids != card.letter_token_ids:
        bad = [f"{LETTER_TOKENS[i]!r}: {ids[i]} != {card.letter_token_ids[i]}" for i in range(26) if ids[i] != card.letter_token_ids[i]]
        raise DecisionExportError(f"the tokenizer's letter ids differ from {CARD_FILE}: {bad[:4]}")
    return Decider(body, rows[ROWS_KEY], tokenizer, prepend_bos=card.prepend_bos, limits=limits)
