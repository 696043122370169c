"""The pooled-readout arms on frozen SmolLM2-135M-Instruct: warmup (NLL), then RLCD and RLVR from it.

The body is frozen (``core.decision.pooled``), so every state's and every option's mean layer-``layer``
state is read once and kept under ``--out``; the stages train only the bilinear head on those features
(seconds each). The recipes are the tiny arms' (``core.decision.training``: the NLL of the label; bandit
REINFORCE with the leave-one-out baseline, r = c - p_a or r = c, the judge revealing only sampled
outcomes). Data: natural tickets (``train.decision_natural_data``; warmup the first two thirds of the
train tickets, RL the last third, or with ``--rl_split families`` RL the rows whose answer a third of the train
families decide, families the warmup never read; val and test families held out) beside synthetic rows
(``train.decision_data``: warmup / rl / val / test partitions). Evaluation on the natural test split
(every row), a synthetic test prefix and the probe, with context-clustered 95% intervals and paired
differences (``core.decision.evaluation.scores``), written to ``--json``.

    python -m train.decision_pooled --out runs/smollm2-pooled --json results/decision_smollm2_pooled_eval.json
    python -m train.decision_pooled --arms warmup=checkpoints/decision-smollm2-pooled-warmup,... --json OUT  # evaluate only
    python -m train.decision_pooled --arms rlcd=DIR --served rlcd=http://127.0.0.1:8000/v1/systemone --json OUT
"""

import hashlib
import json
import random
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core.decision.data.natural import deciding_families
from core.decision.data.store import read_partition
from core.decision.evaluation.scores import sets_report
from core.decision.pooled import OPTION_TEMPLATE, PooledHead, PooledReader, load_head, option_tensor, read_card, save_pooled
from core.decision.softening import distance_quantiles
from core.decision.training import REWARDS, Judge, leave_one_out_baseline, nll_loss, reinforce_loss, sample_options
from train.decision_run import evaluate_probs, optimizer_for, parse_config, write_report
from train.decision_smollm2 import BASE
from train.split_body import stored

ARMS = ("warmup", "rlcd", "rlvr")
RL_SPLITS = ("tickets", "families")
PAIRS = (("rlcd", "warmup"), ("rlvr", "rlcd"), ("rlvr", "warmup"))


@dataclass(frozen=True)
class PooledConfig:
    out: str = field(default="runs/smollm2-pooled", metadata={"help": "features, logs and the three arms' folders"})
    base: str = field(default=BASE, metadata={"help": "the frozen base (the packaged SmolLM2 GGUF)"})
    natural: str = field(default="runs/data/natural", metadata={"help": "natural-ticket dataset"})
    synthetic: str = field(default="runs/data/decision", metadata={"help": "synthetic dataset"})
    synthetic_rows: int = field(default=3000, metadata={"help": "synthetic rows in the warmup pool (RL: half)"})
    eval_synthetic_rows: int = field(default=600, metadata={"help": "synthetic test prefix (whole contexts)"})
    probe_rows: int = field(default=400, metadata={"help": "probe rows"})
    layer: int = field(default=24, metadata={"help": "read the input states of this layer (1..30)"})
    warmup_steps: int = field(default=100, metadata={"help": "warmup L-BFGS iterations (full batch)"})
    rl_steps: int = field(default=400, metadata={"help": "RLCD / RLVR optimiser steps"})
    batch: int = field(default=256, metadata={"help": "rows per step"})
    samples: int = field(default=4, metadata={"help": "RL: options sampled per row (G)"})
    rl_lr: float = field(default=1e-5, metadata={"help": "RL learning rate (AdamW, no weight decay)"})
    l2: float = field(default=0.3, metadata={"help": "L2 penalty on the head's weights, added to every stage's loss"})
    rl_split: str = field(default="tickets", metadata={
        "help": "natural train rows for RL: 'tickets' (the last third of the tickets, the warmup's families) or "
                "'families' (rows decided by a third of the families, drawn per label with --seed; the warmup never "
                "reads those families)"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    seed: int = field(default=0, metadata={"help": "order, sampling and bootstrap seed"})
    resamples: int = field(default=2000, metadata={"help": "bootstrap resamples (whole contexts)"})
    json: str = field(default="", metadata={"help": "write the evaluation here"})
    arms: str = field(default="", metadata={
        "help": "evaluate these saved heads instead of training (warmup=DIR,rlcd=DIR,rlvr=DIR): test sets only"})
    served: str = field(default="", metadata={
        "help": "NAME=URL: also score the natural test rows and the probe through a System One endpoint serving arm "
                "NAME (python -m core.decision.serve DIR), as arm served-NAME, and compare with the local NAME"})

    def __post_init__(self):
        if self.rl_split not in RL_SPLITS:
            raise ValueError(f"--rl_split must be one of {RL_SPLITS}, got {self.rl_split!r}")


# ---- data and features


def datasets(config: PooledConfig) -> dict[str, list]:
    """warmup / rl / val pools and the natural, synthetic and probe test sets."""
    nat = read_partition(Path(config.natural), "train")
    if config.rl_split == "families":
        held = rl_families(config.seed)
        decided = [bool(deciding_families(r.tags) & held) for r in nat]
        warm, rl = [r for r, d in zip(nat, decided) if not d], [r for r, d in zip(nat, decided) if d]
    else:
        cut = (len(nat) * 2 // 3) // 3 * 3  # whole tickets: three rows each, in order
        warm, rl = nat[:cut], nat[cut:]
    syn = lambda part, n: read_partition(Path(config.synthetic), part)[:n]  # noqa: E731
    return {"warmup": warm + syn("warmup", config.synthetic_rows),
            "rl": rl + syn("rl", config.synthetic_rows // 2),
            "val": read_partition(Path(config.natural), "val") + syn("val", 600),
            "natural": read_partition(Path(config.natural), "test"),
            "synthetic": syn("test", config.eval_synthetic_rows),
            "probe": syn("probe", config.probe_rows)}


def rl_families(seed: int) -> frozenset[str]:
    """A third of the train issue families of each department and of the urgency families of each priority,
    as row tags: RL on rows these decide prices the confidence of families the warmup never read, as val and
    test families are."""
    return family_folds(seed)[0]


def family_folds(seed: int, k: int = 3) -> list[frozenset[str]]:
    """The train families as ``k`` disjoint folds of row tags: each department's issue families and each
    priority's urgency families shuffled with ``seed`` and cut into ``k`` runs, so every fold holds families
    of every label."""
    from core.decision.data.ticket_families import ISSUE_FAMILIES, URGENCY_FAMILIES, families_in

    rng, folds = random.Random(seed), [set() for _ in range(k)]
    for prefix, table in (("family:", ISSUE_FAMILIES), ("urgency:", URGENCY_FAMILIES)):
        train = families_in("train", table)
        for label in sorted({f.label for f in train}):
            names = sorted(f.name for f in train if f.label == label)
            rng.shuffle(names)
            for j in range(k):
                folds[j] |= {prefix + n for n in names[j * len(names) // k:(j + 1) * len(names) // k]}
    return [frozenset(f) for f in folds]


def placement(row, folds: list[frozenset[str]], fold: int) -> str | None:
    """Where ``row`` goes when ``fold`` is held out: "held", "train" or None (neither). A natural ticket is held
    out whole, as val and test tickets are: held when every family it names lies in the fold, trained on when none
    does, dropped otherwise (else its other questions would keep its very text in training). A synthetic row by its
    context's hash (its templates are shared by every split, so a context is all it can be held out by)."""
    if row.source == "natural":
        named = {t for t in row.tags if t.startswith(("family:", "urgency:"))}
        inside = named & folds[fold]
        return "train" if not inside else "held" if inside == named else None
    return "held" if int(hashlib.sha256(row.context_id.encode()).hexdigest(), 16) % len(folds) == fold else "train"


def features(reader: PooledReader, sets: dict[str, list], cache: Path) -> tuple[dict, dict]:
    """Every distinct state's and (question, option)'s mean state, read once (each kept in ``cache``)."""
    states = sorted({r.state for rows in sets.values() for r in rows})
    pairs = sorted({(r.question, o.strip()) for rows in sets.values() for r in rows for o in r.options})
    return (kept(cache, "states", [reader.layer, states], lambda: _in_chunks(reader.states, states)),
            kept(cache, "options", [reader.layer, OPTION_TEMPLATE, pairs], lambda: _in_chunks(reader.options, pairs)))


def kept(cache: Path, tag: str, key: list, build) -> dict:
    """``build()``'s features, kept under ``cache`` by a hash of what they are read from (a changed set reads anew)."""
    return stored(cache / f"{tag}-{hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]}.pt", build)


def _in_chunks(read, items: list, chunk: int = 256) -> dict:
    t0, out = time.time(), {}
    for i in range(0, len(items), chunk):
        out.update(zip(items[i:i + chunk], read(items[i:i + chunk])))
        print(f"{len(out)}/{len(items)} read, {time.time() - t0:.0f} s", flush=True)
    return out


def tensors(rows: list, states: dict, options: dict, hidden: int):
    """(states [N, H], options [N, K, H], mask [N, K], labels [N]) of labelled rows."""
    from core.decision.questions import Choice

    qs = [Choice(r.question, tuple(r.options)) for r in rows]
    opts, mask = option_tensor(qs, options, hidden)
    return (torch.stack([states[r.state] for r in rows]), opts, mask, torch.tensor([r.label for r in rows]))


def probs_26(head: PooledHead, t) -> np.ndarray:
    """[N, 26] option probabilities (zeros past each row's options), as the reports take them."""
    with torch.no_grad():
        p = torch.softmax(head(*t[:3]), -1).double().numpy()
    out = np.zeros((len(p), 26))
    out[:, : p.shape[1]] = p
    return out


# ---- the stages


def standardised_head(config: PooledConfig, train) -> PooledHead:
    """A fresh head whose standardisation and familiarity percentiles come from the warmup pool."""
    torch.manual_seed(config.seed)
    head = PooledHead(train[0].shape[-1])
    states = train[0]
    head.state_mean.copy_(states.mean(0)); head.state_scale.copy_(states.std(0) + 1e-4)
    _, centred = head.standardise(states, train[1], train[2])
    head.option_scale.copy_(centred[train[2]].std(0) + 1e-4)
    head.familiar.copy_(distance_quantiles(head.state_z(states)))
    return head


def penalty(config: PooledConfig, head: PooledHead) -> torch.Tensor:
    return config.l2 * (head.m.pow(2).sum() + head.w.pow(2).sum())


def train_arm(config: PooledConfig, arm: str, head: PooledHead, rows: list, train, val_rows, val, log) -> PooledHead:
    """Warmup: full-batch L-BFGS on the penalised NLL (convex in the head). RL: bandit
    REINFORCE with the leave-one-out baseline, minibatches, AdamW; both with the same L2 penalty."""
    t0 = time.time()
    log({"arm": arm, "step": 0, **evaluate_probs(val_rows, probs_26(head, val)), "wall_s": 0.0})
    if arm == "warmup":
        opt = torch.optim.LBFGS([head.m, head.w], lr=1.0, max_iter=config.warmup_steps, history_size=20,
                                line_search_fn="strong_wolfe", tolerance_grad=1e-6, tolerance_change=1e-9)

        def closure():
            opt.zero_grad()
            loss = nll_loss(head(*train[:3]), train[3]) + penalty(config, head)
            loss.backward()
            return loss

        opt.step(closure)
        log({"arm": arm, "step": config.warmup_steps, **evaluate_probs(val_rows, probs_26(head, val)), "wall_s": time.time() - t0})
        return head
    opt = optimizer_for([head.m, head.w], config.rl_lr, weight_decay=0.0)
    gen, py = torch.Generator().manual_seed(config.seed), random.Random(config.seed)
    judge = Judge(rows)
    for step in range(1, config.rl_steps + 1):
        idx = py.sample(range(len(train[3])), min(config.batch, len(train[3])))
        logprobs = torch.log_softmax(head(train[0][idx], train[1][idx], train[2][idx]), -1)
        actions = sample_options(logprobs.exp().detach(), config.samples, gen)
        correct = judge.outcomes(idx, actions)
        reward = REWARDS[arm](correct, logprobs.exp().gather(-1, actions).detach())
        loss = reinforce_loss(logprobs.masked_fill(~train[2][idx], 0.0), actions, reward - leave_one_out_baseline(reward))
        opt.zero_grad(); (loss + penalty(config, head)).backward(); opt.step()
        if step % 100 == 0 or step == config.rl_steps:
            log({"arm": arm, "step": step, **evaluate_probs(val_rows, probs_26(head, val)), "wall_s": time.time() - t0})
    return head


def main(config: PooledConfig) -> dict:
    from core.models.loader import load_location

    torch.set_num_threads(config.threads)
    t0, out = time.time(), Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    logfile = (out / "log.jsonl").open("a")

    def log(record):
        logfile.write(json.dumps(record) + "\n"); logfile.flush(); print(record, flush=True)

    sets = datasets(config)
    if config.arms:
        sets = {k: sets[k] for k in ("natural", "synthetic", "probe")}
    loaded = load_location(config.base)
    reader = PooledReader(loaded.model.get_decoder(), loaded.tokenizer, config.layer)
    states, options = features(reader, sets, out)
    log({"event": "features", "states": len(states), "options": len(options), "wall_s": time.time() - t0})
    hidden = reader.lower.config.hidden_size
    t = {k: tensors(rows, states, options, hidden) for k, rows in sets.items()}
    heads = saved_heads(config, hidden) if config.arms else trained_heads(config, sets, t, out, log, loaded)
    report = evaluation(config, sets, t, heads)
    report["wall_s"] = round(time.time() - t0, 1)
    write_report(config.json, report)
    return report


def train_arms(config: PooledConfig, sets: dict, t: dict, log) -> dict[str, PooledHead]:
    """The warmup on the ``warmup`` pool, then RLCD and RLVR from it on the ``rl`` pool (val read for the log)."""
    import copy

    heads = {"warmup": train_arm(config, "warmup", standardised_head(config, t["warmup"]), sets["warmup"], t["warmup"],
                                 sets["val"], t["val"], log)}
    for arm in ("rlcd", "rlvr"):
        heads[arm] = train_arm(config, arm, copy.deepcopy(heads["warmup"]), sets["rl"], t["rl"], sets["val"], t["val"], log)
    return heads


def trained_heads(config: PooledConfig, sets: dict, t: dict, out: Path, log, loaded) -> dict[str, PooledHead]:
    """The warmup, then RLCD and RLVR from it, each saved under ``out/<arm>`` with its training record (and the
    ``loaded`` base's config and tokenizer)."""
    heads = train_arms(config, sets, t, log)
    for arm, head in heads.items():
        training = {"arm": arm, "base": config.base, "layer": config.layer, "l2": config.l2, "rl_split": config.rl_split,
                    "recipe": "NLL of the label" if arm == "warmup" else
                              f"bandit REINFORCE, leave-one-out baseline, r = {'c - p_a' if arm == 'rlcd' else 'c'}, from the warmup",
                    "rows": len(sets["warmup" if arm == "warmup" else "rl"]),
                    "steps": config.warmup_steps if arm == "warmup" else config.rl_steps, "seed": config.seed,
                    "command": "python -m train.decision_pooled " + " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in vars(config).items())}
        save_pooled(out / arm, head.eval(), base=config.base, layer=config.layer, training=training,
                    body_config=loaded.model.config, tokenizer=loaded.tokenizer)
    return heads


def saved_heads(config: PooledConfig, hidden: int) -> dict[str, PooledHead]:
    """``--arms``: each folder's head, its card checked (hashes, base) and read at this run's layer."""
    from train.decision_smollm2_eval import arm_dirs

    heads = {}
    for name, folder in arm_dirs(config.arms).items():
        card = read_card(folder)
        if card.layer != config.layer:
            raise ValueError(f"{folder} reads layer {card.layer}; pass --layer {card.layer}")
        heads[name] = load_head(folder, hidden)
    return heads


def evaluation(config: PooledConfig, sets: dict, t: dict, heads: dict) -> dict:
    """Per arm and set: accuracy, ECE, Brier, mean confidence, NOTA, the probe, intervals; paired differences."""
    tested = {k: sets[k] for k in ("natural", "synthetic", "probe")}
    probs = {arm: {k: probs_26(head, t[k]) for k in tested} for arm, head in heads.items()}
    pairs, agreement = PAIRS, {}
    if config.served:
        from train.decision_smollm2_eval import served_probs

        arm, url = config.served.split("=", 1)
        probs[f"served-{arm}"] = {k: served_probs(url, tested[k]) for k in ("natural", "probe")}
        pairs += ((f"served-{arm}", arm),)
        agreement = {f"served-{arm}": {k: float(np.abs(probs[f"served-{arm}"][k] - probs[arm][k]).max())
                                       for k in ("natural", "probe")}}
    report = {"rows": {k: len(v) for k, v in tested.items()}, **sets_report(tested, probs, pairs, config.resamples, config.seed)}
    if agreement:  # the largest difference of any option probability, served vs the same head read here
        report["served_max_abs_difference"] = agreement
    return report


if __name__ == "__main__":
    from train.decision_smollm2_eval import summary_table

    print(summary_table(main(parse_config(PooledConfig))))
