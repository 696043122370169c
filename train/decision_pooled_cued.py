"""The ask-or-act agent's reader on frozen SmolLM2: the pooled readout with its options read in context, fitted
on the cued requests.

Why: neither shipped real-body design reads which value a cued request gives which field (docs/environment.md,
"Ask or act on a real body"), and a probe found where the body does (results/cued_real_body/probes.md): an
option's own states read after the request and its question carry it, so one weight vector over them (the
pooled head with ``M`` = 0, ``options_read = "in_context"``) names a clear cue's value on unseen requests. Data:
the synthetic dataset's cued rows (``train.decision_data``: training seeds only), the first ``--train_rows`` of
its warmup partition to fit, the first ``--val_rows`` of its rl partition (other requests) to choose the
penalty: the L2 of ``--l2_grid`` with the lowest val NLL (a proper score, so the chosen head's beliefs are its
best-calibrated). The warmup's loss is convex in ``w`` (full-batch L-BFGS). The held-out scenarios
(clarifylab-cued-v3, seeds 70000+) are read only by the agent afterwards (``core.runs.eval``).

    python -m train.decision_pooled_cued --out runs/pooled-cued --json results/cued_real_body/reader_fit.json

The shipped reader reads layer 20 (``--layer 20``; session 34, results/cued_real_body/layer_rule.md): its val NLL was
lower than layer 24's and its agent scored higher on held-out scenarios no step of its making read.
"""

import collections
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from core.decision.data.store import read_partition
from core.decision.pooled import OPTION_TEMPLATE, PooledReader, save_pooled
from train.decision_pooled import PooledConfig, kept, probs_26, standardised_head, train_arm
from train.decision_run import evaluate_probs, parse_config, write_report
from train.decision_smollm2 import BASE


@dataclass(frozen=True)
class CuedReaderConfig:
    out: str = field(default="runs/pooled-cued", metadata={"help": "features, log and the head's folder (<out>/head)"})
    base: str = field(default=BASE, metadata={"help": "the frozen base (the packaged SmolLM2 GGUF)"})
    synthetic: str = field(default="runs/data/decision", metadata={"help": "synthetic dataset (its cued rows are read)"})
    train_rows: int = field(default=1000, metadata={"help": "cued rows of the warmup partition fitted on"})
    val_rows: int = field(default=600, metadata={"help": "cued rows of the rl partition the penalty is chosen on"})
    layer: int = field(default=24, metadata={"help": "read the input states of this layer (1..30)"})
    l2_grid: str = field(default="0.01,0.03,0.1,0.3", metadata={"help": "L2 penalties on w tried (the pooled head's form)"})
    steps: int = field(default=200, metadata={"help": "L-BFGS iterations (full batch)"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    seed: int = field(default=0, metadata={"help": "seed"})
    json: str = field(default="", metadata={"help": "write the fits' val reads here"})


def cued_rows(config: CuedReaderConfig) -> dict[str, list]:
    """The fitted and the choosing rows: cued rows of two partitions (disjoint requests, checked)."""
    data = Path(config.synthetic)
    rows = {"train": [r for r in read_partition(data, "warmup") if r.source == "cued"][: config.train_rows],
            "val": [r for r in read_partition(data, "rl") if r.source == "cued"][: config.val_rows]}
    if shared := {r.context_id for r in rows["train"]} & {r.context_id for r in rows["val"]}:
        raise ValueError(f"{len(shared)} requests are in both the fitted and the choosing rows")
    return rows


def in_context_features(reader: PooledReader, rows: list, cache: Path) -> tuple[dict, dict]:
    """Every distinct state's mean state (the head's standardisation and familiarity) and every row's options read
    in context, keyed (state, question, option); each kept in ``cache``."""
    states = sorted({r.state for r in rows})
    asked = sorted({(r.state, r.question, tuple(o.strip() for o in r.options)) for r in rows})

    def options():  # one read per state: its prefix once, shared by every question's options (as the decider reads)
        by_state, out, t0 = collections.defaultdict(list), {}, time.time()
        for state, question, opts in asked:
            by_state[state] += [(question, o) for o in opts]
        for i, (state, pairs) in enumerate(by_state.items()):
            out.update({(state, q, o): s for (q, o), s in zip(pairs, reader.options(pairs, state))})
            if i % 100 == 0:
                print(f"{i}/{len(by_state)} states' options read in context, {time.time() - t0:.0f} s", flush=True)
        return out

    return (kept(cache, "states", [reader.layer, states], lambda: dict(zip(states, reader.states(states)))),
            kept(cache, "options-in-context", [reader.layer, OPTION_TEMPLATE, [list(a[:2]) + list(a[2]) for a in asked]],
                 options))


def context_tensors(rows: list, states: dict, options: dict, hidden: int):
    """(states [N, H], options read in context [N, K, H], mask [N, K], labels [N]): ``tensors``' shapes."""
    k = max(len(r.options) for r in rows)
    opts, mask = torch.zeros(len(rows), k, hidden), torch.zeros(len(rows), k, dtype=torch.bool)
    for i, r in enumerate(rows):
        for j, o in enumerate(r.options):
            opts[i, j], mask[i, j] = options[(r.state, r.question, o.strip())], True
    return torch.stack([states[r.state] for r in rows]), opts, mask, torch.tensor([r.label for r in rows])


def by_cue(probs: np.ndarray, rows: list) -> dict:
    """Per cue kind: rows, how often the most probable option is a mode of the known posterior, mean max p, the
    posterior's own max p, and the mean probability given to the hidden value."""
    out = collections.defaultdict(list)
    for p, r in zip(probs, rows):
        kind = next(t for t in r.tags if t.startswith("cue_"))[4:]
        q, post = p[: len(r.options)], np.array(r.posterior)
        out[kind].append((post[q.argmax()] == post.max(), q.max(), post.max(), q[r.label]))
    return {k: dict(zip(("rows", "map_is_a_mode", "max_p", "true_max_p", "p_hidden"),
                        [len(v)] + [round(float(np.mean([x[i] for x in v])), 3) for i in range(4)]))
            for k, v in sorted(out.items())}


def main(config: CuedReaderConfig) -> dict:
    from core.models.loader import load_location

    torch.set_num_threads(config.threads)
    t0, out = time.time(), Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = cued_rows(config)
    loaded = load_location(config.base)
    reader = PooledReader(loaded.model.get_decoder(), loaded.tokenizer, config.layer)
    states, options = in_context_features(reader, rows["train"] + rows["val"], out)
    hidden = reader.lower.config.hidden_size
    t = {k: context_tensors(v, states, options, hidden) for k, v in rows.items()}
    fits = {}
    logfile = (out / "log.jsonl").open("a")

    def log(record):
        logfile.write(json.dumps(record) + "\n"); logfile.flush()
    for l2 in (float(x) for x in config.l2_grid.split(",")):
        pooled = replace(PooledConfig(), l2=l2, warmup_steps=config.steps, seed=config.seed)
        head = standardised_head(pooled, t["train"])
        head.m.requires_grad_(False)  # M = 0: each option's in-context states alone decide its logit
        head = train_arm(pooled, "warmup", head, rows["train"], t["train"], rows["val"], t["val"],
                         lambda record, l2=l2: log({"l2": l2, **record}))
        p = probs_26(head, t["val"])
        nll = float(-np.mean(np.log([max(pr[r.label], 1e-12) for pr, r in zip(p, rows["val"])])))
        fits[l2] = (head, {"l2": l2, "val_nll": round(nll, 4), **evaluate_probs(rows["val"], p), "by_cue": by_cue(p, rows["val"])})
    chosen = min(fits, key=lambda k: fits[k][1]["val_nll"])
    training = {"arm": "warmup", "base": config.base, "layer": config.layer, "options_read": "in_context",
                "recipe": "NLL of the label, M = 0 (w alone), L2 chosen on val by NLL", "l2": chosen,
                "rows": len(rows["train"]), "val_rows": len(rows["val"]), "steps": config.steps, "seed": config.seed,
                "data": "cued rows of the synthetic dataset (training seeds)",
                "command": "python -m train.decision_pooled_cued " + " ".join(f"--{k} {v}" for k, v in vars(config).items())}
    logfile.close()
    save_pooled(out / "head", fits[chosen][0].eval(), base=config.base, layer=config.layer, training=training,
                body_config=loaded.model.config, tokenizer=loaded.tokenizer, options_read="in_context")
    report = {"chosen_l2": chosen, "fits": [f for _, f in fits.values()], "wall_s": round(time.time() - t0, 1)}
    write_report(config.json, report)
    return report


if __name__ == "__main__":
    print(json.dumps(main(parse_config(CuedReaderConfig)), indent=1))
