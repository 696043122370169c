"""Letter-readout decision arms on SmolLM2-135M-Instruct with LoRA on the CPU: warmup, RLCD, RLVR.

The recipe is the tiny arms' (``train/decision_warmup.py``'s warmup stage, ``train/decision_rl.py``'s
bandit REINFORCE with the leave-one-out baseline; rewards from ``core.decision.training``) on a real
body that already reads English. Departures, said plainly:

- LoRA (rank ``rank``) on the TOP ``top_layers`` of the 30 layers only, plus the 26 letter rows
  (initialised from the base's own output rows of " A" .. " Z"), over the split body of
  ``train/split_body.py``: every prompt's state below the adapted layers is computed once and cached.
- Data: the natural-ticket partition (``train/decision_natural_data.py``) mixed with the synthetic
  triage / orders / access rows (``train/decision_data.py``), ``natural_share`` of each pool natural.
  Warmup and RL draw disjoint natural rows (warmup: the first of train, RL: the last).
- A binding stage first (a warmup on easy binding drills alone, ``--drill_share 1 --drill_easy_share 1``):
  the base cannot read the letter in front of the option it means (zero-shot 0.53 on 2-3-option drills
  naming the answer), a mixed warmup moved nothing in 150 steps, and on easy drills alone the binding
  appears within about 100 (results/smollm2_decision/fit_probes.md). The warmup continues from it (``--init``).
- Each stage stops after ``max_minutes`` with a checkpoint and resumes with ``--resume true``
  (chunks of <= 60 min); every chunk's wall time is logged.

    python -m train.decision_smollm2 --stage warmup --out runs/smollm2-decision/warmup
    python -m train.decision_smollm2 --stage rlcd --init runs/smollm2-decision/warmup/model --out runs/smollm2-decision/rlcd
"""

import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import torch

from core.decision.export.adapter import export_adapter_arm, head_rows, read_adapter_card
from core.decision.batches import Prompt, prompt_of, tokenize_prompts
from core.decision.data.drills import drill_rows
from core.decision.data.store import read_partition
from core.decision.prompt import letter_token_ids
from core.decision.training import (
    REWARDS, Judge, cosine_lr_factor, leave_one_out_baseline, nll_loss, reinforce_loss, sample_options,
)
from core.models.entries import PACKAGED_MODELS
from train.split_body import BODY_LINEARS, SplitBody, cache_states
from train.decision_run import MODEL, Run, evaluate_probs, optimizer_for, parse_config, rng_state, set_rng_state

BASE = f"{PACKAGED_MODELS[0][1]}/{PACKAGED_MODELS[0][2]}"
"""The packaged SmolLM2-135M-Instruct GGUF, as the model loaders take it."""


@dataclass(frozen=True)
class SmolConfig:
    """One stage of the SmolLM2 decision arms."""

    stage: Literal["warmup", "rlcd", "rlvr"] = field(default="warmup", metadata={"help": "warmup (NLL), rlcd (c - p_a) or rlvr (c)"})
    out: str = field(default="runs/smollm2-decision/warmup", metadata={"help": "new run directory"})
    init: str = field(default="", metadata={"help": "RL: the warmup's exported arm (its adapter and rows)"})
    base: str = field(default=BASE, metadata={"help": "the real base (packaged GGUF or a model folder)"})
    natural: str = field(default="runs/data/natural", metadata={"help": "natural-ticket dataset (train/val.jsonl)"})
    synthetic: str = field(default="runs/data/decision", metadata={"help": "synthetic dataset (warmup/rl/val.jsonl)"})
    rows: int = field(default=1800, metadata={"help": "training rows in this stage's pool"})
    natural_share: float = field(default=0.67, metadata={"help": "share of the pool from natural tickets"})
    drill_share: float = field(default=0.0, metadata={
        "help": "warmup: share of the pool that is binding drills (core.decision.data.drills), taken from the synthetic share"})
    drill_easy_share: float = field(default=0.0, metadata={
        "help": "share of those drills that are the easy rung (one line, 2-3 options): a binding stage is all easy"})
    val_rows: int = field(default=300, metadata={"help": "val rows (natural and synthetic, same share)"})
    top_layers: int = field(default=6, metadata={"help": "LoRA on the top K layers; the rest cached"})
    train_top: int = field(default=0, metadata={
        "help": "how many of those layers train (0: all); fewer keeps the ones below as --init left them"})
    rank: int = field(default=16, metadata={"help": "LoRA rank"})
    alpha: int = field(default=32, metadata={"help": "LoRA alpha"})
    steps: int = field(default=120, metadata={"help": "optimiser steps"})
    batch: int = field(default=32, metadata={"help": "rows (warmup) or prompts (RL) per step"})
    samples: int = field(default=4, metadata={"help": "RL: options sampled per prompt (G)"})
    lr: float = field(default=3e-4, metadata={"help": "peak learning rate (cosine, 5% warmup)"})
    eval_every: int = field(default=40, metadata={"help": "steps between val evaluations"})
    checkpoint_every: int = field(default=20, metadata={"help": "steps between checkpoints"})
    max_minutes: float = field(default=55.0, metadata={"help": "stop this chunk after N minutes (resumable)"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    seed: int = field(default=0, metadata={"help": "row order and sampling seed"})
    resume: bool = field(default=False, metadata={"help": "continue the run in --out"})

    def __post_init__(self):
        if self.stage != "warmup" and not self.init:
            raise ValueError("an RL stage starts from the warmup's export: pass --init")
        if not 0 <= self.natural_share <= 1 or self.rows < 1 or self.top_layers < 1:
            raise ValueError("natural_share in [0, 1], rows >= 1 and top_layers >= 1")
        if not 0 <= self.train_top <= self.top_layers:
            raise ValueError(f"train_top in [0, top_layers = {self.top_layers}], got {self.train_top}")
        if not 0 <= self.drill_easy_share <= 1:
            raise ValueError(f"drill_easy_share in [0, 1], got {self.drill_easy_share}")
        if not 0 <= self.drill_share <= 1 - self.natural_share:
            raise ValueError(f"drill_share in [0, 1 - natural_share = {1 - self.natural_share:g}], got {self.drill_share}")


# ---- reading the arms


def probs_of(split: SplitBody, rows: torch.Tensor, states: list[torch.Tensor], prompts: Sequence[Prompt],
             temperatures: torch.Tensor | None = None, batch: int = 32):
    """Option probabilities [N, 26] from cached states (eval mode, no grad); each row's logits divided by its
    temperature when given (a softened arm's, ``core.decision.softening``)."""
    import numpy as np

    out = np.zeros((len(prompts), 26))
    with torch.no_grad():
        for s in range(0, len(prompts), batch):
            chunk = list(range(s, min(s + batch, len(prompts))))
            n = torch.tensor([len(prompts[i].options) for i in chunk])
            logits = split.logits([states[i] for i in chunk], n, rows)
            if temperatures is not None:
                logits = logits / temperatures[chunk][:, None]
            out[chunk] = torch.softmax(logits, -1).double().numpy()
    return out


# ---- data


def pool(config: SmolConfig, which: str, n: int) -> list:
    """``n`` labelled rows, ``natural_share`` of them natural: ``which`` is train (warmup), rl or val.

    The warmup's pool may hold ``drill_share`` binding drills: a clean signal for the letter binding
    alone (the answer's text is in the state), which the natural rows' semantic labels do not isolate."""
    n_nat = round(n * config.natural_share)
    n_drill = round(n * config.drill_share) if which == "train" else 0
    nat = read_partition(Path(config.natural), "val" if which == "val" else "train") if n_nat else []
    n_syn = n - n_nat - n_drill
    syn = read_partition(Path(config.synthetic), {"train": "warmup", "rl": "rl", "val": "val"}[which]) if n_syn else []
    if which == "rl":  # the last natural rows: the warmup takes the first ones (6,000 in train)
        nat = nat[len(nat) - n_nat:]
    rows = nat[:n_nat] + syn[:n_syn] + drill_rows(config.seed, n_drill, config.drill_easy_share)
    random.Random(config.seed).shuffle(rows)
    return rows


# ---- the loops


def build(config: SmolConfig):
    """(peft model, split body, letter rows, tokenizer) for this stage."""
    from peft import LoraConfig, PeftModel, get_peft_model

    from core.models.loader import load_location

    torch.manual_seed(config.seed)
    loaded = load_location(config.base)
    model, tokenizer = loaded.model, loaded.tokenizer
    n = model.config.num_hidden_layers
    if config.init:
        adapted = read_adapter_card(Path(config.init)).layers
        if adapted != list(range(n - config.top_layers, n)):
            raise ValueError(f"{config.init} adapts layers {adapted}; --top_layers {config.top_layers} would cache some of them")
        model = PeftModel.from_pretrained(model, config.init, is_trainable=True)
        rows = torch.nn.Parameter(head_rows(config.init).clone())
    else:
        lora = LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=0.0, target_modules=list(BODY_LINEARS),
                          layers_to_transform=list(range(n - config.top_layers, n)))
        model = get_peft_model(model, lora)
        ids = torch.tensor(letter_token_ids(tokenizer))
        rows = torch.nn.Parameter(model.get_output_embeddings().weight[ids].detach().float().clone())
    if config.train_top:
        for name, param in model.named_parameters():
            if param.requires_grad and int(re.search(r"layers\.(\d+)\.", name).group(1)) < n - config.train_top:
                param.requires_grad_(False)
    split = SplitBody.of(model.get_decoder(), config.top_layers)
    return model, split, rows, tokenizer


def main(config: SmolConfig) -> dict:
    torch.set_num_threads(config.threads)
    run = Run(config.out, config, config.resume)
    t_load = time.time()
    model, split, rows, tokenizer = build(config)
    params = [p for p in model.parameters() if p.requires_grad] + [rows]
    train = pool(config, "train" if config.stage == "warmup" else "rl", config.rows)
    val = pool(config, "val", config.val_rows)
    cache_dir = Path(config.out).parent / "cache"
    train_prompts, val_prompts = [prompt_of(r) for r in train], [prompt_of(r) for r in val]
    train_states = cache_states(split, tokenize_prompts(tokenizer, train_prompts), cache_dir,
                                "warmup-pool" if config.stage == "warmup" else "rl-pool")  # RLCD and RLVR share theirs
    val_states = cache_states(split, tokenize_prompts(tokenizer, val_prompts), cache_dir, "val")
    run.log({"event": "ready", "load_and_cache_s": time.time() - t_load, "rows": len(train), "val_rows": len(val)})
    opt = optimizer_for(params, config.lr, weight_decay=0.0)
    py, gen = random.Random(config.seed), torch.Generator().manual_seed(config.seed)
    judge = Judge(train)
    start, elapsed, ckpt = 0, 0.0, run.load_checkpoint()
    if ckpt is not None:
        model.load_state_dict(ckpt["model"], strict=False); rows.data.copy_(ckpt["rows"]); opt.load_state_dict(ckpt["opt"])
        set_rng_state(ckpt["rng"], py, gen)
        start, elapsed = ckpt["step"], ckpt["elapsed"]
    t0, chunk0, last = time.time() - elapsed, time.time(), {}
    order: list[int] = []
    for step in range(start, config.steps + 1):
        # ---- evaluate on val
        if step % config.eval_every == 0 or step == config.steps:
            model.eval()
            probs = probs_of(split, rows, val_states, val_prompts)
            last = {"step": step, "tag": config.stage, **evaluate_probs(val, probs), "wall_s": time.time() - t0}
            run.log(last); print(last, flush=True)
            model.train()
        if step == config.steps:
            break
        # ---- a batch: rows in a seeded order (warmup epochs), or a random draw of prompts (RL)
        if not order:
            order = list(range(len(train))); py.shuffle(order)
        idx = [order.pop() for _ in range(min(config.batch, len(order)))]
        n_opt = torch.tensor([len(train[i].options) for i in idx])
        logits = split.logits([train_states[i] for i in idx], n_opt, rows)
        for g in opt.param_groups:
            g["lr"] = config.lr * cosine_lr_factor(step, config.steps)
        if config.stage == "warmup":
            loss = nll_loss(logits, torch.tensor([train[i].label for i in idx]))
        else:
            logprobs = torch.log_softmax(logits, -1)
            actions = sample_options(logprobs.exp(), config.samples, gen)
            correct = judge.outcomes(idx, actions)
            reward = REWARDS[config.stage](correct, logprobs.exp().gather(-1, actions).detach())
            advantage = reward - leave_one_out_baseline(reward)
            loss = reinforce_loss(logprobs, actions, advantage)
        opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(params, 1.0); opt.step()
        # ---- checkpoint; end this chunk when its minutes are spent
        done = step + 1
        if done % config.checkpoint_every == 0 or time.time() - chunk0 > config.max_minutes * 60:
            trained = {k: v for k, v in model.state_dict().items() if "lora_" in k}
            run.save_checkpoint({"model": trained, "rows": rows.detach(), "opt": opt.state_dict(),
                                 "rng": rng_state(py, gen), "step": done, "elapsed": time.time() - t0})
            if time.time() - chunk0 > config.max_minutes * 60 and done < config.steps:
                run.log({"event": "chunk_end", "step": done, "chunk_wall_s": time.time() - chunk0})
                return {"stopped_at": done, "resume": "rerun with --resume true"}
    training = {"arm": config.stage, "base": config.base, "steps": config.steps, "batch": config.batch,
                "peak_lr": config.lr, "rank": config.rank, "alpha": config.alpha, "top_layers": config.top_layers,
                "train_top": config.train_top,
                "rows": config.rows, "natural_share": config.natural_share, "drill_share": config.drill_share,
                "drill_easy_share": config.drill_easy_share, "seed": config.seed,
                "init": config.init, "final_val": last, "wall_s": time.time() - t0,
                "recipe": "NLL of the labelled letter" if config.stage == "warmup" else
                          f"bandit REINFORCE, leave-one-out baseline, r = {'c - p_a' if config.stage == 'rlcd' else 'c'}"}
    n = model.config.num_hidden_layers
    export_adapter_arm(Path(config.out) / MODEL, model, rows, tokenizer, base=config.base,
                       layers=list(range(n - config.top_layers, n)), training=training)
    return last


if __name__ == "__main__":
    print(main(parse_config(SmolConfig)))
