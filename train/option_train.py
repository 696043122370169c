"""Train the option scorer: soft-target cross-entropy, a temperature per type, then the confidence head.

Phase 1 trains body + option head with cross-entropy against the exact posterior over the shown
options (triage tickets) or the observed answer (everything else), each question weighted by
P(truth among the options), so a question whose truth is missing teaches the scorer nothing.
Phase 2 fits one temperature per question type on val (NLL grid). Phase 3 freezes the scorer and
trains only the confidence head (BCE against P(top option right) = posterior[argmax]); the scorer's
hash is checked unchanged. Departs from the published recipe: a from-random-init 128-wide body,
the body starts from our shipped letter model's body (checkpoints/decision-rlcd, same word-split
tokenizer): from random init the loss sat at chance for the first 75 steps, warm it fell at once.

    python -m train.option_train --data runs/data/option --out runs/option/scorer --seed 0
"""

import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from transformers import AutoTokenizer

from core.decision.export.published import load_decider
from core.decision.option.model import (
    OptionModel,
    Settings,
    confidence_features,
    save_option_model,
    soft_target_loss,
    state_hash,
)
from core.decision.option.request import Encoded, encode, pack, parse_questions
from core.decision.option.scorer import forward_packs
from core.decision.random_model import random_body
from train.decision_run import (
    MODEL,
    Run,
    optimizer_for,
    parse_config,
    rng_state,
    set_rng_state,
    set_threads,
)
from train.option_data import OptionContext, read_contexts


@dataclass(frozen=True)
class TrainConfig:
    """Data, model shape and the three phases."""

    data: str = field(default="runs/data/option", metadata={"help": "option data directory"})
    out: str = field(default="runs/option/scorer", metadata={"help": "run directory"})
    tokenizer: str = field(default="checkpoints/decision-rlcd", metadata={"help": "where our word-split tokenizer is"})
    init: str = field(default="checkpoints/decision-rlcd", metadata={
        "help": "a letter-model export whose body (same shape and tokenizer) starts the scorer; '' = random body"})
    hidden: int = field(default=128, metadata={"help": "hidden size"})
    layers: int = field(default=4, metadata={"help": "transformer layers"})
    heads: int = field(default=4, metadata={"help": "attention heads"})
    kv_heads: int = field(default=2, metadata={"help": "key/value heads"})
    steps: int = field(default=300, metadata={"help": "scorer optimiser steps"})
    batch: int = field(default=16, metadata={"help": "requests (contexts) per scorer step"})
    lr: float = field(default=1e-3, metadata={"help": "scorer peak learning rate (cosine to 0.1x, 5% warmup)"})
    head_contexts: int = field(default=2000, metadata={"help": "train contexts whose frozen-scorer features train the head"})
    head_epochs: int = field(default=60, metadata={"help": "confidence-head epochs over the cached features"})
    head_lr: float = field(default=3e-3, metadata={"help": "confidence-head learning rate"})
    eval_every: int = field(default=100, metadata={"help": "val evaluation every N scorer steps"})
    checkpoint_every: int = field(default=50, metadata={"help": "resumable checkpoint every N scorer steps"})
    seed: int = field(default=0, metadata={"help": "init, batch order and head seed"})
    resume: bool = field(default=False, metadata={"help": "continue the run in --out"})

    def __post_init__(self):
        if self.hidden % self.heads or self.steps < 1 or self.batch < 1:
            raise ValueError(f"bad shape or schedule: hidden {self.hidden}, heads {self.heads}, steps {self.steps}")


@dataclass
class Item:
    """A context ready for training: its packed sequence and per-question targets."""

    context: OptionContext
    enc: Encoded


def prepare(contexts: list[OptionContext], tokenizer) -> list[Item]:
    marker = tokenizer.eos_token_id
    return [Item(c, encode(tokenizer, c.state, parse_questions(c.request()), marker, 8192)) for c in contexts]


def targets(items: list[Item], k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(conditional posterior [Q, k], weight = P(truth shown) [Q], P(option right) [Q, k]) in pack order."""
    qs = [q for it in items for q in it.context.questions]
    full = torch.zeros(len(qs), k)
    for i, q in enumerate(qs):
        full[i, : len(q.posterior)] = torch.tensor(q.posterior)
    weight = full.sum(-1)
    cond = full / weight.clamp(min=1e-12)[:, None]
    return cond, weight, full


def lr_at(step: int, config: TrainConfig) -> float:
    warm = max(1, int(0.05 * config.steps))
    if step < warm:
        return config.lr * (step + 1) / warm
    t = (step - warm) / max(1, config.steps - warm)
    return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


@torch.no_grad()
def collect(model: OptionModel, items: list[Item], chunk: int = 32):
    """(logits, valid, head features, P(option right)) over items, in no-grad chunks."""
    out = []
    for i in range(0, len(items), chunk):
        part = items[i: i + chunk]
        o = forward_packs(model, [pack(it.enc) for it in part])
        _, _, full = targets(part, o.logits.shape[1])
        out.append((o.logits, o.valid, confidence_features(o.header_states, o.option_states, o.logits, o.valid), full))
    k = max(x[0].shape[1] for x in out)
    pad = lambda x, v: torch.nn.functional.pad(x, (0, k - x.shape[1]), value=v)
    return (torch.cat([pad(x[0], 0.0) for x in out]), torch.cat([pad(x[1], False) for x in out]),
            torch.cat([x[2] for x in out]), torch.cat([pad(x[3], 0.0) for x in out]))


def val_metrics(model: OptionModel, items: list[Item]) -> dict:
    logits, valid, _, full = collect(model, items)
    logp = torch.log_softmax(logits.masked_fill(~valid, float("-inf")), -1)
    top = logp.argmax(-1)
    shown = full.sum(-1) > 0.5
    hard = full.argmax(-1)
    return {"accuracy_shown": float((top == hard)[shown].float().mean()),
            "nll_shown": float(-(full * logp.masked_fill(~valid, 0)).sum(-1)[shown].mean())}


def fit_temperatures(logits, valid, full, types: list[str]) -> dict[str, float]:
    """Per type, the T on a log grid minimising the posterior-weighted NLL on val."""
    grid = torch.exp(torch.linspace(math.log(0.25), math.log(4.0), 81))
    out = {}
    for kind in ("choice", "score", "noul"):
        sel = torch.tensor([t == kind for t in types])
        if not sel.any():
            out[kind] = 1.0
            continue
        z, v, f = logits[sel], valid[sel], full[sel]
        nll = [float(soft_target_loss(z / t, v, f / f.sum(-1, keepdim=True).clamp(min=1e-12), f.sum(-1))) for t in grid]
        out[kind] = round(float(grid[int(torch.tensor(nll).argmin())]), 4)
    return out


def train_head(model: OptionModel, feats, p_right, config: TrainConfig, run: Run) -> dict:
    """Phase 3: BCE of the head on cached frozen-scorer features; nothing else has a gradient."""
    for p in model.parameters():
        p.requires_grad_(False)
    for p in model.confidence_head.parameters():
        p.requires_grad_(True)
    before = state_hash(model.body) + state_hash(model.option_head)
    opt = torch.optim.AdamW(model.confidence_head.parameters(), lr=config.head_lr, weight_decay=0.01)
    g = torch.Generator().manual_seed(config.seed + 7)
    for epoch in range(config.head_epochs):
        total = 0.0
        for idx in torch.randperm(len(feats), generator=g).split(256):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model.confidence_head(feats[idx]), p_right[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        if epoch % 10 == 0 or epoch == config.head_epochs - 1:
            run.log({"phase": "head", "epoch": epoch, "bce": total / len(feats)})
    after = state_hash(model.body) + state_hash(model.option_head)
    if before != after:
        raise RuntimeError("the scorer moved while the confidence head trained")
    return {"scorer_sha256_before": before[:16], "scorer_sha256_after": after[:16]}


def build_model(config: TrainConfig, vocab: int) -> OptionModel:
    body = random_body(vocab, seed=config.seed, hidden=config.hidden, layers=config.layers, heads=config.heads,
                       kv_heads=config.kv_heads, head_dim=config.hidden // config.heads, intermediate=3 * config.hidden)
    if config.init:  # verified load; strict: the shapes must match
        body.load_state_dict(load_decider(config.init).body.state_dict(), strict=True)
    with torch.random.fork_rng():
        torch.manual_seed(config.seed + 1)
        return OptionModel(body.train())


def main(config: TrainConfig) -> Path:
    set_threads(1)
    run = Run(config.out, config, config.resume)
    tokenizer = AutoTokenizer.from_pretrained(config.tokenizer)
    train = prepare(read_contexts(Path(config.data) / "train.jsonl"), tokenizer)
    val = prepare(read_contexts(Path(config.data) / "val.jsonl"), tokenizer)
    model = build_model(config, len(tokenizer))
    scorer_params = list(model.body.parameters()) + list(model.option_head.parameters())
    opt = optimizer_for(scorer_params, config.lr)
    rng, gen = random.Random(config.seed), torch.Generator().manual_seed(config.seed)
    step, wall = 0, 0.0
    ck = run.load_checkpoint()
    if ck is not None:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        set_rng_state(ck["rng"], rng, gen)
        step, wall = ck["step"], ck["wall_s"]
    start = time.time() - wall
    # ---- phase 1: the scorer
    model.train()
    while step < config.steps:
        batch = rng.sample(train, config.batch)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, config)
        out = forward_packs(model, [pack(it.enc) for it in batch])
        cond, weight, _ = targets(batch, out.logits.shape[1])
        loss = soft_target_loss(out.logits, out.valid, cond, weight)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(scorer_params, 1.0)
        opt.step()
        step += 1
        if step % 25 == 0:
            run.log({"phase": "scorer", "step": step, "loss": float(loss.detach()), "lr": lr_at(step - 1, config),
                     "wall_s": round(time.time() - start, 1)})
        if step % config.eval_every == 0 or step == config.steps:
            model.eval()
            run.log({"phase": "scorer", "step": step, "val": val_metrics(model, val)})
            model.train()
        if step % config.checkpoint_every == 0 or step == config.steps:
            run.save_checkpoint({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                                 "rng": rng_state(rng, gen), "wall_s": time.time() - start})
    model.eval()
    # ---- phase 2: temperatures on val
    logits, valid, _, full = collect(model, val)
    temperature = fit_temperatures(logits, valid, full, [q.type for it in val for q in it.context.questions])
    run.log({"phase": "temperature", "temperature": temperature})
    # ---- phase 3: the confidence head on the frozen scorer
    torch.manual_seed(config.seed + 3)
    logits, valid, feats, full = collect(model, train[: config.head_contexts])
    p_right = full.gather(1, logits.masked_fill(~valid, float("-inf")).argmax(-1, keepdim=True)).squeeze(1)
    frozen = train_head(model, feats, p_right, config, run)
    wall = time.time() - start
    training = {"config": asdict(config), "train_contexts": len(train), "val_contexts": len(val),
                "frozen_scorer": frozen, "wall_s": round(wall, 1), "temperature": temperature}
    run.log({"phase": "done", "wall_s": round(wall, 1)})
    save_option_model(run.dir / MODEL, model.eval(), tokenizer, training=training,
                      settings=Settings(temperature=temperature))
    return run.dir / MODEL


if __name__ == "__main__":
    print(main(parse_config(TrainConfig)))
