"""Decision-only export in the published "rlcd-decision-only-v1" layout, and strict loading.

A directory holds what eve-rlcd's exporter writes (its ``rlcd/export.py`` defines the layout):
``model.safetensors`` (the body, no LM head; safetensors metadata ``{"format": "pt"}``),
``decision_head.safetensors`` (tensor ``weight``, 26 x hidden fp32, optional ``bias``),
``config.json``, the tokenizer files, and ``decision.json`` with the published field names
(``letter_ids``, ``prepend_bos``, ``pad_id``, ``sha256`` of both weight files, ...). So the published
loader loads our exports and ``load_decider`` loads the published ones. The published format does
not hash config.json or the tokenizer; we record those hashes in ``CONFIG_HASHES`` (a field the
published loader ignores) and refuse a changed file. Directories in our earlier layout
(``body.safetensors`` + ``letter_rows.safetensors``) still load, verified the same way.

    export_causal_lm("runs/m", model, tokenizer, base_model="tiny", training={...})
    decider = load_decider("runs/m")
"""

import copy
import json
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModel, AutoTokenizer

from core.decision.data.store import sha256_file
from core.decision.decider import Decider, Limits
from core.decision.prompt import LETTER_TOKENS, LETTERS, encode, letter_token_ids
from core.decision.readout import MASKED_LOGIT
from core.models.entries import shown_path
from core.records import plain_problem

FORMAT = "rlcd-decision-only-v1"
MODEL_FILE, HEAD_FILE, CARD_FILE = "model.safetensors", "decision_head.safetensors", "decision.json"
LEGACY_BODY, LEGACY_ROWS, LEGACY_KEY = "body.safetensors", "letter_rows.safetensors", "letter_rows"
"""Our earlier layout (read only): body, letter rows under ``letter_rows``, ids in ``letter_token_ids``."""
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
                   "special_tokens_map.json", "added_tokens.json", "chat_template.jinja")
"""The tokenizer files of the published export (those present are hashed)."""
GUARD_TEMPLATE = "decision_template.jinja"
"""Where transformers' decision pipeline looks for a model's prompt template. Ours refuses with
what to import: without ``core.decision.auto_model`` a plain ``pipeline("decision", model=EXPORT)``
builds a Qwen3 causal LM with an untrained lm_head, whose answers would be noise."""
GUARD_MESSAGE = ("This folder is a ClarifyLab letter-readout export (rlcd-decision-only-v1): it has no language-model "
                 "head, so transformers built one at random. `import core.decision.auto_model` before "
                 "pipeline(\"decision\", ...) or `transformers serve`, or load it with "
                 "core.decision.export.published.load_decider(folder).")
CONFIG_HASHES = "clarifylab_sha256"
"""decision.json field: sha256 of config.json and the tokenizer files (ours; the published loader ignores it)."""
WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth"}
PROMPT = {
    "prefix": "User: Context:\n{state}\n\n",
    "suffix": "Question: {question}\nOptions:\n{options}\nAnswer with the letter only.\nAssistant: The answer is",
    "option_line": "{letter}) {option}",
    "options_joiner": "\n",
    "state": "stripped; over max_state_tokens (counted on the state alone) its last tokens are kept",
    "question": "stripped; over max_question_tokens (the whole suffix) its text loses its start; options never cut",
    "readout": "softmax over the 26 letter rows at the last prompt token, masked beyond the option count",
    "split": "prefix prefilled once; suffixes run over it with positions continuing from the prefix length",
}
"""Published ``prompt`` field names; the rules in our words."""
PRIMITIVES = {
    "choice": {"fields": ["question", "options"], "options": "2..26 unordered options, one letter each",
               "answer": ["kind", "value", "probs", "confidence", "entropy_confidence"]},
    "score": {"fields": ["question", "levels"], "options": "2..26 ordered levels, low to high",
              "answer": ["kind", "value", "probs", "confidence", "entropy_confidence", "score"]},
    "noul": {"fields": ["question"], "options": "exactly [true, false]", "answer": ["kind", "p_true", "confidence"]},
}
CONFIDENCE = {
    "confidence": "the largest option probability",
    "entropy_confidence": "1 - H(p) / ln K over the K declared options, clipped to [0, 1]",
    "score": "sum_i p_i * i / (K - 1) over K ordered levels",
    "p_true": "the probability of the option true",
    "noul confidence": "max(p_true, 1 - p_true)",
    "masking": f"letters beyond the option count get logit {MASKED_LOGIT}, so probability exactly 0",
}


class DecisionExportError(ValueError):
    """A decision-model directory that cannot be trusted or loaded, and why."""


class DecisionCard(BaseModel):
    """decision.json of the published layout: the fields the loaders read, checked; the rest kept.

    Extra fields are allowed because the record is a third party's: the published exporter
    writes a few more (``source``, ``policy``, ``note``, ...) and its re-save merges any
    training metadata in at the top level.
    """

    model_config = ConfigDict(extra="allow")
    format: str
    """Always ``rlcd-decision-only-v1``."""
    letter_ids: list[int] = Field(min_length=26, max_length=26)
    """Token ids of " A" .. " Z" in the saved tokenizer."""
    prepend_bos: bool
    pad_id: int | None
    sha256: dict[str, str]
    """File name -> sha256 hex of ``model.safetensors`` and the head file (published)."""
    head_file: str = HEAD_FILE
    hidden_size: int | None = None
    base_model: str | None = None
    tied_embeddings: bool = False
    """Whether the source model tied its LM head to the input embeddings."""
    training: dict[str, Any] = {}
    """Free-form training summary (recipe, steps, data, seed, results)."""
    clarifylab_sha256: dict[str, str] = {}
    """config.json and tokenizer files -> sha256 (ours; absent from published exports)."""


def adds_bos(tokenizer) -> bool:
    """Whether the tokenizer itself puts BOS first (the published check behind ``prepend_bos``)."""
    bos = tokenizer.bos_token_id
    return bos is not None and list(tokenizer("x")["input_ids"][:1]) == [bos]


def export_decision(directory: str | Path, body, rows: torch.Tensor, tokenizer, *, base_model: str,
                    training: dict[str, Any], prepend_bos: bool = False, tied_embeddings: bool = False,
                    bias: torch.Tensor | None = None) -> Path:
    """Write the published layout (body, head, config, tokenizer, decision.json) into an empty ``directory``."""
    out = Path(directory)
    if out.exists() and any(out.iterdir()):
        raise DecisionExportError(f"{out} is not empty; export into a new directory")
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in body.state_dict().items()}
    if any(_is_head(k) for k in state):
        raise DecisionExportError("the body passed carries an output head; pass the body (model.base_model)")
    save_file(state, str(out / MODEL_FILE), metadata={"format": "pt"})
    head = {"weight": rows.detach().float().contiguous().cpu()}
    if bias is not None:
        head["bias"] = bias.detach().float().contiguous().cpu()
    save_file(head, str(out / HEAD_FILE), metadata={"format": "pt"})
    config = copy.deepcopy(body.config)
    config.architectures = [type(body).__name__]
    config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    portable_tokenizer_config(out / "tokenizer_config.json")
    write_guard_template(out)
    card = {
        "format": FORMAT, "source": base_model, "base_model": base_model, "model_type": config.model_type,
        "hidden_size": int(rows.shape[1]), "letters": list(LETTERS), "letter_ids": letter_token_ids(tokenizer),
        "max_choices": len(LETTERS), "prepend_bos": prepend_bos, "pad_id": tokenizer.pad_token_id,
        "tied_embeddings": tied_embeddings, "head_file": HEAD_FILE, "prompt": PROMPT, "primitives": PRIMITIVES,
        "confidence": CONFIDENCE, "training": training, "policy": {},
        "note": "a decision model: the body and the 26 letter rows of its head; no language-model head",
        "sha256": {name: sha256_file(out / name) for name in (MODEL_FILE, HEAD_FILE)},
        CONFIG_HASHES: {name: sha256_file(out / name) for name in ("config.json", *TOKENIZER_FILES)
                        if (out / name).is_file()},
    }
    (out / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n")
    return out


def portable_tokenizer_config(path: Path) -> None:
    """Make a transformers-5 tokenizer_config.json readable by transformers 4.57 (the published pin).

    transformers 5 names a plain tokenizers-backed tokenizer ``TokenizersBackend``, a class 4.x does
    not have; ``PreTrainedTokenizerFast`` is the same class under both. transformers 5 writes the
    extra special tokens as a list under ``extra_special_tokens``, where 4.57 expects a dict of
    named tokens (a list fails there with "'list' object has no attribute 'keys'"); both read the
    list under its 4.x name ``additional_special_tokens`` (5.x renames it back when loading). The
    loader-only keys 5.x adds (``backend``, ``is_local``, ``local_files_only``) are dropped.
    """
    cfg = json.loads(path.read_text())
    if cfg.get("tokenizer_class") == "TokenizersBackend":
        cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    if isinstance(cfg.get("extra_special_tokens"), list):
        listed = cfg.pop("extra_special_tokens")
        cfg["additional_special_tokens"] = list(dict.fromkeys([*cfg.get("additional_special_tokens", []), *listed]))
    for key in ("backend", "is_local", "local_files_only"):
        cfg.pop(key, None)
    path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")


def write_guard_template(directory: Path) -> Path:
    """``GUARD_TEMPLATE``: a decision template that only raises ``GUARD_MESSAGE`` (see there)."""
    path = directory / GUARD_TEMPLATE
    path.write_text("{{ raise_exception(" + json.dumps(GUARD_MESSAGE) + ") }}\n")
    return path


def export_causal_lm(directory: str | Path, model, tokenizer, **kwargs) -> Path:
    """Export a CausalLM: its body and its output-embedding rows of " A" .. " Z"."""
    ids = torch.tensor(letter_token_ids(tokenizer))
    rows = model.get_output_embeddings().weight[ids].detach().float()
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    return export_decision(directory, model.base_model, rows, tokenizer, tied_embeddings=tied, **kwargs)


def _is_head(key: str) -> bool:
    return key.startswith(("lm_head.", "output.", "score.")) or ".lm_head." in key


def read_card(directory: Path) -> tuple[DecisionCard, str, str, str]:
    """decision.json, validated, and the layout it names: (card, body file, head file, head tensor)."""
    path = directory / CARD_FILE
    if not path.is_file():
        raise DecisionExportError(f"{directory} has no {CARD_FILE}; not an {FORMAT} export")
    try:
        raw = json.loads(path.read_text())
        legacy = isinstance(raw, dict) and "letter_token_ids" in raw and "letter_ids" not in raw
        if legacy:  # our earlier layout: same facts under other names
            raw = dict(raw, letter_ids=raw.pop("letter_token_ids"), head_file=LEGACY_ROWS)
        card = DecisionCard.model_validate(raw)
    except (ValueError, ValidationError) as err:
        raise DecisionExportError(f"{shown_path(path)} is malformed: {plain_problem(err)}") from None
    if card.format != FORMAT:
        raise DecisionExportError(f"{path}: format {card.format!r}, expected {FORMAT!r}")
    if Path(card.head_file).name != card.head_file:
        raise DecisionExportError(f"{path}: head_file {card.head_file!r} must be a file name in the directory")
    return (card, LEGACY_BODY, LEGACY_ROWS, LEGACY_KEY) if legacy else (card, MODEL_FILE, card.head_file, "weight")


def verify_files(directory: Path, card: DecisionCard, body_file: str, head_file: str) -> None:
    """Hashes of both weight files first, then config and tokenizer; no other weight file (an output head)."""
    for name in (body_file, head_file):
        if not (directory / name).is_file():
            raise DecisionExportError(f"{directory} is missing {name}")
        if name not in card.sha256:
            raise DecisionExportError(f"{CARD_FILE} records no sha256 for {name}")
    check_hashes(directory, {**card.sha256, **card.clarifylab_sha256})
    extra = sorted(p.name for p in directory.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.name not in (body_file, head_file))
    if extra:
        raise DecisionExportError(f"{directory} carries extra weight files {extra} (an output head?); "
                                  f"a {FORMAT} directory holds only {body_file} and {head_file}")


def check_hashes(directory: Path, hashes: dict[str, str], card_file: str = CARD_FILE) -> None:
    """Every file ``hashes`` names (plain names in ``directory``) present and unchanged."""
    for name, digest in hashes.items():
        if Path(name).name != name:
            raise DecisionExportError(f"{card_file} hashes {name!r}; only files in the directory itself are allowed")
        path = directory / name
        if not path.is_file():
            raise DecisionExportError(f"{directory} is missing {name}, whose sha256 {card_file} records")
        if sha256_file(path) != digest:
            raise DecisionExportError(f"{name}: sha256 does not match {card_file}; the file was changed or damaged")


def check_letters(tokenizer, letter_ids: list[int], prepend_bos: bool) -> None:
    """The tokenizer's " A" .. " Z" ids and BOS habit are the ones the card records."""
    ids = [encode(tokenizer, t) for t in LETTER_TOKENS]
    if ids != [[i] for i in letter_ids]:
        bad = [f"{LETTER_TOKENS[i]!r}: {ids[i]} != {letter_ids[i]}" for i in range(26) if ids[i] != [letter_ids[i]]]
        raise DecisionExportError(f"the tokenizer's letter ids differ from {CARD_FILE}: {bad[:4]}")
    if adds_bos(tokenizer) != prepend_bos:
        raise DecisionExportError(f"{CARD_FILE} says prepend_bos={prepend_bos}, but the tokenizer "
                                  f"{'adds' if adds_bos(tokenizer) else 'does not add'} a BOS token")


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(path), framework="pt") as fh:
        return {k: fh.get_tensor(k) for k in fh.keys()}


def _check_head(tensors: dict[str, torch.Tensor], key: str, hidden: int, name: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The (26, hidden) fp32 letter rows and the optional (26,) bias; anything else is refused."""
    allowed = {key, "bias"} if key == "weight" else {key}
    rows, bias = tensors.get(key), tensors.get("bias")
    found = [(k, tuple(v.shape)) for k, v in tensors.items()]
    if rows is None or set(tensors) - allowed or tuple(rows.shape) != (26, hidden):
        raise DecisionExportError(f"{name} must hold {key!r} of shape (26, {hidden})"
                                  f"{' and optionally bias (26,)' if key == 'weight' else ''}; found {found}")
    if rows.dtype != torch.float32 or (bias is not None and (tuple(bias.shape) != (26,) or bias.dtype != torch.float32)):
        raise DecisionExportError(f"{name}: the head must be float32 with bias (26,); found {[(k, v.dtype) for k, v in tensors.items()]}")
    return rows, bias


def _build_body(root: Path, state: dict[str, torch.Tensor], body_file: str, trust_remote_code: bool, attn: str):
    config = AutoConfig.from_pretrained(root, trust_remote_code=trust_remote_code)
    config._attn_implementation = attn
    body = AutoModel.from_config(config, trust_remote_code=trust_remote_code)
    if body.get_output_embeddings() is not None:
        raise DecisionExportError(f"config.json builds {type(body).__name__}, which has an output head; expected a body")
    mismatch = state_mismatch(body, state)
    if mismatch:
        raise DecisionExportError(f"{body_file} does not match config.json: {mismatch}")
    body.load_state_dict(state, strict=True)
    return body


def state_mismatch(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> str:
    """How ``state``'s tensor names differ from ``module``'s ("" when they match), for a strict load's message."""
    expected = set(module.state_dict())
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if not (missing or unexpected):
        return ""
    return f"missing {missing[:5]} ({len(missing)}), unexpected {unexpected[:5]} ({len(unexpected)})"


def load_decider(directory: str | Path, *, trust_remote_code: bool = False, attn_implementation: str = "sdpa",
                 limits: Limits = Limits()) -> Decider:
    """Load and verify a decision export (published layout, or our earlier one); raise ``DecisionExportError`` on any doubt."""
    root = Path(directory)
    card, body_file, head_file, head_key = read_card(root)
    verify_files(root, card, body_file, head_file)
    state = _read_tensors(root / body_file)
    heads = sorted(k for k in state if _is_head(k))
    if heads:
        raise DecisionExportError(f"{body_file} carries an output head ({heads[:3]}); refused")
    body = _build_body(root, state, body_file, trust_remote_code, attn_implementation)
    hidden = body.config.hidden_size
    if card.hidden_size not in (None, hidden):
        raise DecisionExportError(f"{CARD_FILE} says hidden_size {card.hidden_size}, config.json {hidden}")
    rows, bias = _check_head(_read_tensors(root / head_file), head_key, hidden, head_file)
    tokenizer = AutoTokenizer.from_pretrained(root, trust_remote_code=trust_remote_code)
    check_letters(tokenizer, card.letter_ids, card.prepend_bos)
    return Decider(body, rows, tokenizer, bias=bias, prepend_bos=card.prepend_bos, limits=limits)


def open_model(directory: str | Path, name: str = "") -> Decider:
    """``core.decision.model.KINDS``' loader: a verified export (``load_decider``), named for messages."""
    decider = load_decider(directory)
    decider.name = name
    return decider


def reexport(source: str | Path, directory: str | Path) -> Path:
    """Verify ``source`` (either layout) and write the same weights, tokenizer and record in the published layout."""
    card = read_card(Path(source))[0]
    decider = load_decider(source)
    return export_decision(directory, decider.body, decider.rows, decider.tokenizer, base_model=card.base_model or "",
                           training=card.training, prepend_bos=card.prepend_bos, tied_embeddings=card.tied_embeddings,
                           bias=decider.bias)
