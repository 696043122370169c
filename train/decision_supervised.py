"""Supervised arms from the warmup: the oracle (labels revealed) and supervised continuation.

Both minimise the NLL of the labelled letter on the ``rl`` partition, the rows the bandit arms
learn from. ``--arm oracle`` uses the RL arms' exact optimiser, peak lr, schedule, prompts per step
and step count, so it is "the RL run, had it seen the labels"; ``--arm continuation`` keeps the
warmup's own (higher) learning rate, i.e. simply more SFT. ``sft_loop`` is also the warmup's loop;
its format-stage-only knobs (``--binding``, ``--binding_easy``, ``--option_aux``, ``--lm_weight``,
``--drills``) stay 0 for these arms (see ``train.decision_warmup`` for why the format stage uses them).

    python -m train.decision_supervised --arm oracle --init runs/decision/warmup/model \
        --out runs/decision/oracle --seed 0
"""

import random
import time
from dataclasses import dataclass, field
from typing import Literal

import torch
from tqdm import tqdm

from core.decision.prompt import LETTERS
from core.decision.readout import readout
from core.decision.batches import (
    batch_logits, body_hidden, collate, lookup_drill, option_ends, prompt_of, tokenize_prompts,
)
from core.decision.data.drills import drill_rows
from core.decision.training import cosine_lr_factor, lm_loss, nll_loss, option_aux_loss, should_stop
from train.decision_run import (
    Run, evaluate, load_model, load_prompts, optimizer_for, parse_config, rng_state, set_rng_state, set_threads,
)


RL_LR = 3e-4
"""Peak lr of the RL arms (and the oracle); ours is a tiny from-scratch model, not a 0.6B base."""
RL_STEPS, RL_BATCH = 300, 64
"""Steps and prompts per step of the RL arms, the oracle and supervised continuation."""


@dataclass(frozen=True)
class SupervisedConfig:
    """One supervised run (an arm, or a warmup stage)."""

    arm: Literal["oracle", "continuation"] = field(default="oracle", metadata={"help": "which supervised arm"})
    init: str = field(default="runs/decision/warmup/model", metadata={"help": "export to start from"})
    out: str = field(default="runs/decision/oracle", metadata={"help": "new run directory"})
    data: str = field(default="runs/data/decision", metadata={"help": "dataset directory"})
    partition: str = field(default="rl", metadata={"help": "rows to learn from"})
    limit: int = field(default=0, metadata={"help": "use only the first N rows (0 = all)"})
    steps: int = field(default=RL_STEPS, metadata={"help": "optimiser steps"})
    batch: int = field(default=RL_BATCH, metadata={"help": "prompts per step"})
    lr: float = field(default=0.0, metadata={"help": "peak lr; 0 = the arm's default"})
    eval_every: int = field(default=50, metadata={"help": "steps between val evaluations"})
    eval_limit: int = field(default=600, metadata={"help": "val rows per evaluation (0 = all)"})
    checkpoint_every: int = field(default=100, metadata={"help": "steps between checkpoints"})
    seed: int = field(default=0, metadata={"help": "row order and init seed"})
    resume: bool = field(default=False, metadata={"help": "continue the run in --out"})
    progress: bool = field(default=True, metadata={"help": "show a tqdm bar"})
    lm_weight: float = field(default=0.0, metadata={"help": "format stage only: weight of a tied-embedding LM loss"})
    drills: int = field(default=0, metadata={"help": "format stage only: lookup-drill passes after each answer"})
    option_aux: float = field(default=0.0, metadata={
        "help": "format stage only: weight of the per-option letter and is-answer losses (core.decision.training)"})
    binding: float = field(default=0.0, metadata={
        "help": "format stage only: share of each batch drawn from binding drills (core.decision.data.drills)"})
    binding_easy: float = field(default=0.0, metadata={
        "help": "format stage only: share of the steps (the first ones) whose drills are the easy rung"})
    soft_sources: str = field(default="", metadata={
        "help": "comma list of row sources (e.g. cued) whose rows fit their known posterior, not the drawn label"})

    def __post_init__(self):
        if self.lm_weight < 0 or self.drills < 0 or self.option_aux < 0:
            raise ValueError("lm_weight, drills and option_aux must be >= 0")
        if not 0.0 <= self.binding <= 1.0 or not 0.0 <= self.binding_easy <= 1.0:
            raise ValueError(f"binding and binding_easy are shares in [0, 1]; got {self.binding}, {self.binding_easy}")
        if self.steps < 1 or self.batch < 1 or self.eval_every < 1 or self.checkpoint_every < 1:
            raise ValueError("steps, batch, eval_every and checkpoint_every must be >= 1")
        if self.lr < 0:
            raise ValueError(f"lr must be >= 0, got {self.lr}")

    @property
    def peak_lr(self) -> float:
        """The oracle matches the RL arms' lr; continuation keeps the warmup's."""
        return self.lr or {"oracle": RL_LR, "continuation": WARMUP_LR}[self.arm]


WARMUP_LR = 5e-4
"""Peak lr of the published-size warmup stage, kept by supervised continuation."""


def sft_loss(config, body, rows, tokenizer, ids, prompts, labels, py: random.Random,
             marks=None, probe=None, targets=None) -> torch.Tensor:
    """Letter NLL at each prompt's last token, plus (format stage) the optional auxiliary losses.

    ``targets``: per row a known posterior over its options to fit instead of the drawn label, or
    None (``letter_targets``); the per-option losses keep the drawn label.
    ``config.lm_weight``: the LM loss on prompt + answer + lookup drill; ``config.option_aux``: the
    per-option letter and is-answer losses at ``marks`` (``option_ends``), with the ``probe`` vector.
    """
    n_options = [len(p.options) for p in prompts]
    y = letter_targets(labels, targets)
    if config.lm_weight == 0 and config.option_aux == 0:
        return nll_loss(batch_logits(body, rows, collate(ids, n_options, tokenizer.pad_token_id)), y)
    tails = [[] for _ in prompts]
    if config.lm_weight:
        texts = [f" {chr(65 + lab)}" + lookup_drill(p.options, py, config.drills) for p, lab in zip(prompts, labels)]
        tails = tokenizer(texts, add_special_tokens=False)["input_ids"]
    batch = collate([list(a) + list(b) for a, b in zip(ids, tails)], n_options, tokenizer.pad_token_id)
    hidden = body_hidden(body, batch)
    last = torch.tensor([len(a) - 1 for a in ids])
    loss = nll_loss(readout(hidden[torch.arange(len(ids)), last], rows, batch.n_options), y)
    if config.lm_weight:
        loss = loss + config.lm_weight * lm_loss(hidden, body.embed_tokens.weight, batch.input_ids,
                                                 batch.attention_mask)
    if config.option_aux:
        loss = loss + config.option_aux * option_aux_loss(hidden, rows, probe, marks, labels)
    return loss


def letter_targets(labels, targets=None) -> torch.Tensor:
    """Cross-entropy targets: the label ids, or [B, len(LETTERS)] probabilities where a row fits its posterior."""
    if targets is None or all(t is None for t in targets):
        return torch.tensor(labels)
    y = torch.nn.functional.one_hot(torch.tensor(labels), len(LETTERS)).float()
    for i, t in enumerate(targets):
        if t is not None:
            y[i] = 0.0
            y[i, : len(t)] = torch.tensor(t, dtype=torch.float32)
    return y


def binding_pool(config: SupervisedConfig, tokenizer) -> tuple[int, list, list, list]:
    """(drills per step, their token ids, prompts, labels): a fixed pool, step s uses slice s.

    Drawn once from the seed, so a resumed run sees the same drills without extra RNG state.
    """
    per_step = round(config.batch * config.binding)
    drills = drill_rows(config.seed, per_step * config.steps, config.binding_easy)
    prompts = [prompt_of(r) for r in drills]
    return per_step, tokenize_prompts(tokenizer, prompts), prompts, [r.label for r in drills]


def sft_loop(config: SupervisedConfig, run: Run, body, rows, tokenizer, lr: float, tag: str) -> dict:
    """Minimise the labelled-letter NLL for ``config.steps`` steps; resumable; returns the last eval."""
    set_threads()
    labelled, prompts = load_prompts(config.data, config.partition, config.limit)
    val_rows, val_prompts = load_prompts(config.data, "val", config.eval_limit)
    ids = tokenize_prompts(tokenizer, prompts)
    labels = [r.label for r in labelled]
    soft = set(filter(None, config.soft_sources.split(",")))
    targets = [r.posterior if r.source in soft and r.posterior else None for r in labelled]
    per_drill, drill_ids, drill_prompts, drill_labels = binding_pool(config, tokenizer)
    aux = config.option_aux > 0
    marks = option_ends(tokenizer, prompts) if aux else [None] * len(ids)
    drill_marks = option_ends(tokenizer, drill_prompts) if aux else [None] * len(drill_ids)
    probe = torch.nn.Parameter(torch.zeros(rows.shape[1]))  # training-only: never exported
    params = list(body.parameters()) + [rows] + ([probe] if aux else [])
    opt = optimizer_for(params, lr)
    py, gen = random.Random(config.seed), torch.Generator().manual_seed(config.seed)
    start, history, step0, elapsed = 0, [], None, 0.0
    ckpt = run.load_checkpoint()
    if ckpt is not None:
        body.load_state_dict(ckpt["body"]); rows.data.copy_(ckpt["rows"]); opt.load_state_dict(ckpt["opt"])
        probe.data.copy_(ckpt.get("probe", probe.detach()))
        set_rng_state(ckpt["rng"], py, gen)
        start, history, step0, elapsed = ckpt["step"], ckpt["history"], ckpt["step0"], ckpt["elapsed"]
    t0 = time.time() - elapsed
    last = None
    for step in tqdm(range(start, config.steps + 1), initial=start, total=config.steps + 1,
                     desc=tag, disable=not config.progress):
        resumed_here = ckpt is not None and step == start  # evaluated before the checkpoint was written
        if (step % config.eval_every == 0 or step == config.steps) and not resumed_here:
            last = {"step": step, "tag": tag, **evaluate(body, rows, tokenizer, val_rows, val_prompts),
                    "wall_s": time.time() - t0}
            run.log(last)
            step0 = last["accuracy"] if step0 is None else step0
            history.append(last["accuracy"])
            if should_stop(step0, history[1:]):
                run.log({"step": step, "tag": tag, "stopped": "last 3 evaluations > 0.10 below step 0"})
                break
        if step == config.steps:
            break
        idx = py.sample(range(len(ids)), min(config.batch - per_drill, len(ids)))
        drill = range(step * per_drill, (step + 1) * per_drill)
        for g in opt.param_groups:
            g["lr"] = lr * cosine_lr_factor(step, config.steps)
        loss = sft_loss(config, body, rows, tokenizer, [ids[i] for i in idx] + [drill_ids[i] for i in drill],
                        [prompts[i] for i in idx] + [drill_prompts[i] for i in drill],
                        [labels[i] for i in idx] + [drill_labels[i] for i in drill], py,
                        [marks[i] for i in idx] + [drill_marks[i] for i in drill], probe,
                        [targets[i] for i in idx] + [None] * len(drill))
        opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(params, 1.0); opt.step()
        if (step + 1) % config.checkpoint_every == 0:
            run.save_checkpoint({"body": body.state_dict(), "rows": rows.detach(), "opt": opt.state_dict(),
                                 "probe": probe.detach(), "rng": rng_state(py, gen), "step": step + 1,
                                 "history": history, "step0": step0, "elapsed": time.time() - t0})
    return {**(last or {}), "wall_s": time.time() - t0}


def main(config: SupervisedConfig) -> dict:
    """Train one supervised arm from ``config.init`` and export it to ``config.out``/model."""
    torch.manual_seed(config.seed)
    run = Run(config.out, config, config.resume)
    body, rows, tokenizer = load_model(config.init)
    final = sft_loop(config, run, body, rows, tokenizer, config.peak_lr, config.arm)
    training = {"arm": config.arm, "recipe": "NLL of the labelled letter", "init": config.init,
                "partition": config.partition, "steps": config.steps, "batch": config.batch,
                "peak_lr": config.peak_lr, "seed": config.seed, "final_val": final}
    run.export(body, rows, tokenizer, training)
    return final


if __name__ == "__main__":
    print(main(parse_config(SupervisedConfig)))
