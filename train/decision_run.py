"""Run machinery shared by the decision training CLIs: run directories, meta, logs, checkpoints.

A run directory holds ``meta.jsonl`` (one line per start: every argument, time, git commit),
``log.jsonl`` (append-only metrics), ``checkpoint.pt`` (everything needed to resume, rewritten
atomically every ``checkpoint_every`` steps) and ``model/`` (the final rlcd-decision-only-v1 export).
Starting into a directory that already holds a run is refused unless ``--resume`` is given, so a
log is never overwritten. Models move between stages only as verified exports (``load_model``).
"""

import json
import os
import random
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

import torch
from transformers import HfArgumentParser

from core import calibration as cal
from core.decision.export.published import export_decision, load_decider
from core.decision.batches import Prompt, option_probs, prompt_of
from core.decision.data.store import read_partition

CHECKPOINT, LOG, META, MODEL = "checkpoint.pt", "log.jsonl", "meta.jsonl", "model"


def parse_config(cls, argv: Sequence[str] | None = None):
    """Parse command-line flags into the script's config dataclass (help from field metadata)."""
    (config,) = HfArgumentParser(cls).parse_args_into_dataclasses(args=argv)
    return config


def set_threads(n: int = 1) -> None:
    """One torch thread: on two shared cores more threads only spin (../shared/reference/PLATFORM_NOTES.md, beside the checkout)."""
    torch.set_num_threads(n)


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


class Run:
    """One training run's directory (see the module docstring)."""

    def __init__(self, out: str | Path, config: Any, resume: bool):
        self.dir = Path(out)
        if (self.dir / META).exists() and not resume:
            raise FileExistsError(f"{self.dir} already holds a run; pass --resume true to continue it, "
                                  "or choose a new --out (logs are never overwritten)")
        if (self.dir / MODEL).exists():
            raise FileExistsError(f"{self.dir} already finished (it has {MODEL}/); choose a new --out")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.started = time.time()
        meta = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "git": git_commit(),
                "resume": resume, "config": {k: _jsonable(v) for k, v in asdict(config).items()}}
        with open(self.dir / META, "a") as fh:
            fh.write(json.dumps(meta) + "\n")

    def log(self, record: dict) -> None:
        """Append one metrics record to log.jsonl."""
        with open(self.dir / LOG, "a") as fh:
            fh.write(json.dumps(record) + "\n")

    def save_checkpoint(self, state: dict) -> None:
        """Write checkpoint.pt atomically (a crash mid-write keeps the previous one)."""
        tmp = self.dir / (CHECKPOINT + ".tmp")
        torch.save(state, tmp)
        os.replace(tmp, self.dir / CHECKPOINT)

    def load_checkpoint(self) -> dict | None:
        path = self.dir / CHECKPOINT
        return torch.load(path, weights_only=False) if path.exists() else None

    def export(self, body, rows: torch.Tensor, tokenizer, training: dict) -> Path:
        """Write the final model as an rlcd-decision-only-v1 export in ``model/``, verified by loading."""
        out = export_decision(self.dir / MODEL, body, rows, tokenizer, base_model="clarifylab-decision-tiny (random init)",
                              training=training)
        load_decider(out)
        return out


def write_report(path: str | Path, report: dict) -> None:
    """An evaluation's JSON report at ``path`` (folders made); nothing when ``path`` is empty."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=2) + "\n")


def _jsonable(v):
    return str(v) if isinstance(v, Path) else v


def load_model(directory: str | Path):
    """(body in train mode, letter rows as a trainable Parameter, tokenizer) from a verified export."""
    decider = load_decider(directory)
    if decider.bias is not None:
        raise ValueError(f"{directory}: its decision head carries a bias, which these training arms do not train; "
                         "start from an export without one")
    body = decider.body.train()
    rows = torch.nn.Parameter(decider.rows.detach().clone())
    return body, rows, decider.tokenizer


def rng_state(py: random.Random, gen: torch.Generator) -> dict:
    return {"python": py.getstate(), "torch": gen.get_state(), "torch_global": torch.get_rng_state()}


def set_rng_state(state: dict, py: random.Random, gen: torch.Generator) -> None:
    py.setstate(state["python"])
    gen.set_state(state["torch"])
    torch.set_rng_state(state["torch_global"])


def load_prompts(data_dir: str | Path, partition: str, limit: int = 0):
    """(rows, label-free prompts) of a partition, hash-checked; ``limit`` > 0 keeps the first rows."""
    rows = read_partition(Path(data_dir), partition)
    if limit > 0:
        rows = rows[:limit]
    if not rows:
        raise ValueError(f"partition {partition!r} in {data_dir} is empty")
    return rows, [prompt_of(r) for r in rows]


def evaluate(body, rows: torch.Tensor, tokenizer, labelled: Sequence, prompts: Sequence[Prompt]) -> dict:
    """Accuracy, ECE and mean confidence of the model on labelled rows (val during training)."""
    return evaluate_probs(labelled, option_probs(body, rows, tokenizer, prompts))


def evaluate_probs(labelled: Sequence, probs) -> dict:
    """Accuracy, ECE, Brier, mean confidence and per-source/kind accuracy of [N, 26] probabilities."""
    p = [probs[i, : len(r.options)] for i, r in enumerate(labelled)]
    y = [r.label for r in labelled]
    slices: dict[str, list[int]] = {}
    for i, r in enumerate(labelled):
        slices.setdefault(f"{r.source}/{r.kind}", []).append(i)
    return {"accuracy": cal.accuracy(p, y), "ece": cal.ece(p, y), "brier": cal.brier(p, y),
            "mean_confidence": cal.mean_confidence(p),
            "accuracy_by": {k: round(cal.accuracy([p[i] for i in v], [y[i] for i in v]), 3)
                            for k, v in sorted(slices.items())}}


def optimizer_for(params, lr: float, weight_decay: float = 0.1) -> torch.optim.AdamW:
    """AdamW(0.9, 0.95) with weight decay, the published optimiser."""
    return torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=weight_decay)

