"""Warmup SFT for the decision model: a from-scratch reading stage, then the published warmup.

Departure from the published recipe, said plainly: the published warmup (6,400 rows, 100 steps)
fine-tuned a pretrained Qwen3-0.6B base, which could already read and copy. Our body starts from
random weights, so a ``format`` stage first trains the NLL of the labelled letter on separate rows
(the ``format`` partition, 900 steps of 32 rows, peak lr 2e-3) until the model reads states and
options. Trained on the final letter alone, a random body never learned to answer choice questions
(find the option the state supports, then read the letter printed before it: two attention steps
that must form together; it sat at chance for thousands of steps). Two additions teach it:

- binding drills (``core.decision.data.drills``) fill half of each format batch: records that name
  one option's text verbatim, easy ones (one line, 2-3 known values, no NOTA) for the first 60% of
  the steps, then the full kind (noise lines, made-up values, NOTA injection, up to 6 options);
- per-option auxiliary losses (``core.decision.training.option_aux_loss``, weight 1): at each option's
  last token the body must give that option's own letter through the readout rows, and a
  training-only linear probe must tell whether the option is the answer. Each step of the circuit
  gets its own dense signal; the probe is never exported.

With both, choice accuracy on val leaves chance after ~500 steps. 900 steps stop it well short of
the Bayes ceiling (val ~0.88), as the published warmup was; at 1,500 steps it sat within 0.01 of
the ceiling and left the RL arms nothing to gain. The ``warmup`` stage then runs
the published slice size (6,400 rows, 100 steps of 64, plain letter NLL). Each stage is its own
run directory under ``out`` (resumable); the final export is ``out/model``.

    python -m train.decision_warmup --init runs/decision/base --out runs/decision/warmup --seed 0
"""

from dataclasses import dataclass, field
from pathlib import Path

from train.decision_run import MODEL, Run, load_model, parse_config
from train.decision_supervised import WARMUP_LR, SupervisedConfig, sft_loop


@dataclass(frozen=True)
class WarmupConfig:
    """The two warmup stages."""

    init: str = field(default="runs/decision/base", metadata={"help": "random-init export (decision_tokenizer)"})
    out: str = field(default="runs/decision/warmup", metadata={"help": "new run directory"})
    data: str = field(default="runs/data/decision", metadata={"help": "dataset directory"})
    format_steps: int = field(default=900, metadata={"help": "steps of the from-scratch format stage"})
    warmup_steps: int = field(default=100, metadata={"help": "steps of the published warmup stage"})
    batch: int = field(default=32, metadata={"help": "rows per step of the format stage (drills included)"})
    warmup_batch: int = field(default=64, metadata={"help": "rows per step of the warmup stage"})
    lr: float = field(default=2e-3, metadata={"help": "peak lr of the format stage"})
    binding: float = field(default=0.5, metadata={"help": "share of each format batch drawn from binding drills"})
    binding_easy: float = field(default=0.6, metadata={"help": "share of format steps (the first) with easy drills"})
    option_aux: float = field(default=1.0, metadata={"help": "weight of the format stage's per-option losses"})
    warmup_lr: float = field(default=WARMUP_LR, metadata={"help": "peak lr of the warmup stage"})
    limit: int = field(default=0, metadata={"help": "rows per partition (0 = all; for smoke tests)"})
    eval_every: int = field(default=150, metadata={"help": "steps between val evaluations"})
    eval_limit: int = field(default=600, metadata={"help": "val rows per evaluation (0 = all)"})
    checkpoint_every: int = field(default=150, metadata={"help": "steps between checkpoints"})
    seed: int = field(default=0, metadata={"help": "row order seed"})
    resume: bool = field(default=False, metadata={"help": "continue an interrupted run in --out"})
    progress: bool = field(default=True, metadata={"help": "show tqdm bars"})


def stage(config: WarmupConfig, name: str, init: str, steps: int, lr: float, batch: int,
          binding: float = 0.0, option_aux: float = 0.0, binding_easy: float = 0.0) -> tuple[str, dict]:
    """Run one stage into ``out/name`` (skipped when already exported); return its export dir."""
    sub = SupervisedConfig(arm="continuation", init=init, out=str(Path(config.out) / name), data=config.data,
                           partition=name, limit=config.limit, steps=steps, batch=batch, lr=lr,
                           eval_every=config.eval_every, eval_limit=config.eval_limit,
                           checkpoint_every=config.checkpoint_every, seed=config.seed,
                           resume=config.resume, progress=config.progress, binding=binding,
                           binding_easy=binding_easy, option_aux=option_aux)
    model_dir = Path(sub.out) / MODEL
    if model_dir.exists():
        return str(model_dir), {"skipped": "already exported"}
    run = Run(sub.out, sub, sub.resume or (Path(sub.out) / "meta.jsonl").exists())
    body, rows, tokenizer = load_model(init)
    final = sft_loop(sub, run, body, rows, tokenizer, lr, name)
    run.export(body, rows, tokenizer, {"stage": name, "recipe": "NLL of the labelled letter", "init": init,
                                        "steps": steps, "batch": batch, "peak_lr": lr, "binding": binding,
                                        "binding_easy": binding_easy, "option_aux": option_aux,
                                        "seed": config.seed, "final_val": final})
    return str(model_dir), final


def main(config: WarmupConfig) -> dict:
    """Format stage from the random init, then the warmup stage; the warmup export is ``out/model``."""
    fmt_dir, fmt = stage(config, "format", config.init, config.format_steps, config.lr, config.batch,
                         config.binding, config.option_aux, config.binding_easy)
    warm_dir, warm = stage(config, "warmup", fmt_dir, config.warmup_steps, config.warmup_lr, config.warmup_batch)
    final = Path(config.out) / MODEL
    if not final.exists():
        final.symlink_to(Path("warmup") / MODEL)  # relative, so the run directory can move
    return {"format": fmt, "warmup": warm, "model": str(final)}


if __name__ == "__main__":
    print(main(parse_config(WarmupConfig)))
