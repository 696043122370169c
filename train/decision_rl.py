"""RLCD and RLVR arms: bandit REINFORCE from the warmup, without ever seeing a label.

Each step draws prompts from the ``rl`` partition, samples G = 4 options per prompt from the
model's own letter distribution, and learns only from whether each SAMPLED option was right
(``Judge``, a callback that keeps the labels private). Reward: RLCD r = c - p_a (p_a detached; its
expected gradient is half the gradient of minus Brier, a proper scoring rule), RLVR r = c. Advantage:
r_j minus the leave-one-out baseline b_j = (sum_g r_g - r_j) / (G - 1). No KL, no entropy bonus;
AdamW(0.9, 0.95, wd 0.1), cosine with 5% warmup to 0.1 x peak. Departure from the published recipe:
our model is a tiny body trained from scratch, so the peak lr is 3e-4 (not 2e-5; 1e-3 made the
bandit runs lose accuracy early) and a step holds 64 prompts for 300 steps (not 128 for 500, to fit
the CPU budget); the published stop rule is kept (it never fired in our runs unless logged).

    python -m train.decision_rl --reward rlcd --init runs/decision/warmup/model --out runs/decision/rlcd --seed 0
"""

import random
import time
from dataclasses import dataclass, field
from typing import Literal

import torch
from tqdm import tqdm

from core.decision.batches import batch_logits, collate, tokenize_prompts
from core.decision.training import (
    REWARDS, Judge, cosine_lr_factor, leave_one_out_baseline, reinforce_loss, sample_options, should_stop,
)
from train.decision_run import (
    Run, evaluate, load_model, load_prompts, optimizer_for, parse_config, rng_state, set_rng_state, set_threads,
)
from train.decision_supervised import RL_BATCH, RL_LR, RL_STEPS


@dataclass(frozen=True)
class RLConfig:
    """One bandit REINFORCE run."""

    reward: Literal["rlcd", "rlvr"] = field(default="rlcd", metadata={"help": "rlcd: r = c - p_a; rlvr: r = c"})
    init: str = field(default="runs/decision/warmup/model", metadata={"help": "export to start from"})
    out: str = field(default="runs/decision/rlcd", metadata={"help": "new run directory"})
    data: str = field(default="runs/data/decision", metadata={"help": "dataset directory"})
    partition: str = field(default="rl", metadata={"help": "prompts to learn from (labels stay hidden)"})
    limit: int = field(default=0, metadata={"help": "use only the first N prompts (0 = all)"})
    steps: int = field(default=RL_STEPS, metadata={"help": "optimiser steps"})
    batch: int = field(default=RL_BATCH, metadata={"help": "prompts per step"})
    samples: int = field(default=4, metadata={"help": "options sampled per prompt (G)"})
    lr: float = field(default=RL_LR, metadata={"help": "peak learning rate"})
    eval_every: int = field(default=50, metadata={"help": "steps between val evaluations"})
    eval_limit: int = field(default=600, metadata={"help": "val rows per evaluation (0 = all)"})
    checkpoint_every: int = field(default=100, metadata={"help": "steps between checkpoints"})
    seed: int = field(default=0, metadata={"help": "prompt order and sampling seed"})
    resume: bool = field(default=False, metadata={"help": "continue the run in --out"})
    progress: bool = field(default=True, metadata={"help": "show a tqdm bar"})

    def __post_init__(self):
        if self.samples < 2:
            raise ValueError(f"the leave-one-out baseline needs samples >= 2, got {self.samples}")
        if self.steps < 1 or self.batch < 1 or self.lr <= 0:
            raise ValueError("steps and batch must be >= 1 and lr > 0")


def reinforce(config: RLConfig, run: Run, body, rows, tokenizer, prompts, judge: Judge, val) -> dict:
    """The bandit loop. It gets label-free ``prompts`` and the ``judge`` callback, nothing else."""
    set_threads()
    ids, pad = tokenize_prompts(tokenizer, prompts), tokenizer.pad_token_id
    params = list(body.parameters()) + [rows]
    opt = optimizer_for(params, config.lr)
    py, gen = random.Random(config.seed), torch.Generator().manual_seed(config.seed)
    start, history, step0, elapsed, ckpt = 0, [], None, 0.0, run.load_checkpoint()
    if ckpt is not None:
        body.load_state_dict(ckpt["body"]); rows.data.copy_(ckpt["rows"]); opt.load_state_dict(ckpt["opt"])
        set_rng_state(ckpt["rng"], py, gen)
        start, history, step0, elapsed = ckpt["step"], ckpt["history"], ckpt["step0"], ckpt["elapsed"]
    t0, last = time.time() - elapsed, {}
    for step in tqdm(range(start, config.steps + 1), initial=start, total=config.steps + 1,
                     desc=config.reward, disable=not config.progress):
        # ---- evaluate on val, apply the stop rule
        if (step % config.eval_every == 0 or step == config.steps) and not (ckpt and step == start):
            last = {"step": step, "tag": config.reward, **evaluate(body, rows, tokenizer, *val),
                    "wall_s": time.time() - t0}
            run.log(last)
            step0 = last["accuracy"] if step0 is None else step0
            history.append(last["accuracy"])
            if should_stop(step0, history[1:]):
                run.log({"step": step, "tag": config.reward, "stopped": "last 3 evaluations > 0.10 below step 0"})
                break
        if step == config.steps:
            break

        # ---- draw prompts and read the policy: log p over each prompt's options
        idx = py.sample(range(len(ids)), min(config.batch, len(ids)))
        batch = collate([ids[i] for i in idx], [len(prompts[i].options) for i in idx], pad)
        logprobs = torch.log_softmax(batch_logits(body, rows, batch), dim=-1)

        # ---- sample G options per prompt; the judge reveals only whether each was right
        actions = sample_options(logprobs.exp(), config.samples, gen)          # [B, G]
        correct = judge.outcomes(idx, actions)                                 # c in {0, 1}
        p_sampled = logprobs.exp().gather(-1, actions).detach()               # p_a, no gradient
        reward = REWARDS[config.reward](correct, p_sampled)                   # c - p_a, or c

        # ---- leave-one-out advantage: A_j = r_j - (sum_g r_g - r_j) / (G - 1)
        baseline = (reward.sum(-1, keepdim=True) - reward) / (config.samples - 1)
        assert torch.allclose(baseline, leave_one_out_baseline(reward))
        advantage = reward - baseline

        # ---- policy-gradient step: -mean A_j log p(a_j), cosine lr, clipped grad
        for g in opt.param_groups:
            g["lr"] = config.lr * cosine_lr_factor(step, config.steps)
        loss = reinforce_loss(logprobs, actions, advantage)
        opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(params, 1.0); opt.step()

        # ---- checkpoint (resumable: weights, optimiser, rng, eval history)
        if (step + 1) % config.checkpoint_every == 0:
            run.save_checkpoint({"body": body.state_dict(), "rows": rows.detach(), "opt": opt.state_dict(),
                                 "rng": rng_state(py, gen), "step": step + 1, "history": history,
                                 "step0": step0, "elapsed": time.time() - t0})
    return {**last, "wall_s": time.time() - t0, "outcomes_revealed": judge.calls}


def main(config: RLConfig) -> dict:
    """Load the warmup, hide the labels behind a Judge, run REINFORCE, export to ``out``/model."""
    torch.manual_seed(config.seed)
    run = Run(config.out, config, config.resume)
    body, rows, tokenizer = load_model(config.init)
    labelled, prompts = load_prompts(config.data, config.partition, config.limit)
    judge = Judge(labelled)
    del labelled  # from here on the loop sees prompts and outcomes only
    final = reinforce(config, run, body, rows, tokenizer, prompts, judge,
                      load_prompts(config.data, "val", config.eval_limit))
    training = {"arm": config.reward, "recipe": "bandit REINFORCE, leave-one-out baseline, no KL",
                "reward": "c - p_a" if config.reward == "rlcd" else "c", "init": config.init,
                "partition": config.partition, "steps": config.steps, "batch": config.batch,
                "samples": config.samples, "peak_lr": config.lr, "seed": config.seed, "final_val": final}
    run.export(body, rows, tokenizer, training)
    return final


if __name__ == "__main__":
    print(main(parse_config(RLConfig)))
