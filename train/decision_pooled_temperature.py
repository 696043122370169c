"""An out-of-family temperature for the pooled arms: each arm's logits divided by the T that its recipe needs on
ticket families it never read.

Why: the pooled RLCD arm is overconfident on families nobody trained on (natural test: accuracy 0.714, mean
confidence 0.835), since every row its RL stage prices comes from families the warmup read; and val cannot say
by how much (its four families are harder than the test's). So the train families are cut into folds
(``train.decision_pooled.family_folds``); for each fold the three arms are trained with the shipped run's
settings on the pools without it and read on the fold's own rows (natural rows of families they never read,
synthetic rows of contexts they never read); each arm's T minimises the NLL of those out-of-family predictions
(``core.decision.evaluation.reports.fit_temperature``). The logits are linear in the head's weights, so T is
folded into them (M / T, w / T): the folder's format, serving and every reader stay as they are, and the card's
training record keeps T, the rows it was fitted on and the unscaled head's sha256. Val is read only to report
(raw and scaled side by side); nothing is chosen on it here.

    python -m train.decision_pooled_temperature --arms warmup=DIR,rlcd=DIR,rlvr=DIR --out runs/smollm2-pooled-t
"""

import dataclasses
import json
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core.decision.evaluation.reports import fit_temperature
from core.decision.pooled import HEAD_FILE, PooledHead, PooledReader, load_head, read_card, save_pooled
from train import decision_pooled as dp
from train.decision_run import evaluate_probs, parse_config, write_report

RUN = "python -m train.decision_pooled"


@dataclass(frozen=True)
class TemperatureConfig:
    arms: str = field(default="", metadata={"help": "the pooled arms to scale: warmup=DIR,rlcd=DIR,rlvr=DIR"})
    out: str = field(default="runs/smollm2-pooled-t", metadata={"help": "the scaled arms' folders and the log"})
    cache: str = field(default="runs/smollm2-pooled", metadata={"help": "the feature cache of train.decision_pooled"})
    natural: str = field(default="runs/data/natural", metadata={"help": "natural-ticket dataset"})
    synthetic: str = field(default="runs/data/decision", metadata={"help": "synthetic dataset"})
    folds: int = field(default=3, metadata={"help": "folds of the train families"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    json: str = field(default="", metadata={"help": "write the temperatures and the val report here"})


def recipe(cards: dict, config: TemperatureConfig) -> dp.PooledConfig:
    """The settings of the run that trained the arms, parsed from the command their cards record (one run: one
    command), with this stage's data, cache and threads."""
    commands = {c.training.get("command", "") for c in cards.values()}
    if len(commands) != 1 or not min(commands).startswith(RUN + " "):
        raise ValueError(f"the arms were not trained by one run of {RUN}: {sorted(commands)}")
    pooled = parse_config(dp.PooledConfig, shlex.split(commands.pop())[len(RUN.split()):])
    return dataclasses.replace(pooled, out=config.cache, natural=config.natural, synthetic=config.synthetic,
                               threads=config.threads, json="", arms="", served="")


def out_of_family(pooled: dp.PooledConfig, sets: dict, t: dict, folds: int, log) -> tuple[dict, list, list]:
    """Per arm, the probabilities [N, 26] of heads cross-fitted over the family folds on their held-out rows;
    the rows' labels; and the rows' sources."""
    family_folds = dp.family_folds(pooled.seed, folds)
    probs, labels, sources = {arm: [] for arm in dp.ARMS}, [], []
    pool = [(k, i, r) for k in ("warmup", "rl") for i, r in enumerate(sets[k])]
    fold = {(k, i): dp.fold_of(r, family_folds) for k, i, r in pool}
    for f in range(folds):
        keep = {k: [i for i in range(len(sets[k])) if fold[k, i] != f] for k in ("warmup", "rl")}
        part = {k: [sets[k][i] for i in keep[k]] for k in keep} | {"val": sets["val"]}
        part_t = {k: tuple(x[keep[k]] for x in t[k]) for k in keep} | {"val": t["val"]}
        heads = dp.train_arms(pooled, part, part_t, lambda record: log({"fold": f, **record}))
        for k in ("warmup", "rl"):
            held = [i for i in range(len(sets[k])) if fold[k, i] == f]
            held_t = tuple(x[held] for x in t[k])
            for arm, head in heads.items():
                probs[arm].append(dp.probs_26(head, held_t))
            labels += held_t[3].tolist()
            sources += [sets[k][i].source for i in held]
    return {arm: np.concatenate(p) for arm, p in probs.items()}, labels, sources


def divided(head: PooledHead, temperature: float) -> PooledHead:
    """The head whose logits are the given head's divided by ``temperature`` (both terms are linear in M and w)."""
    with torch.no_grad():
        head.m.div_(temperature)
        head.w.div_(temperature)
    return head


def val_report(rows: list, probs: np.ndarray) -> dict:
    """Val accuracy, ECE and mean confidence: every row, and the natural rows alone."""
    natural = [i for i, r in enumerate(rows) if r.source == "natural"]
    pick = lambda m: {k: m[k] for k in ("accuracy", "ece", "mean_confidence")}  # noqa: E731
    return {"all": pick(evaluate_probs(rows, probs)),
            "natural": pick(evaluate_probs([rows[i] for i in natural], probs[natural]))}


def main(config: TemperatureConfig) -> dict:
    from core.models.loader import load_location
    from train.decision_smollm2_eval import arm_dirs

    torch.set_num_threads(config.threads)
    t0, out = time.time(), Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    folders = arm_dirs(config.arms)
    if set(folders) != set(dp.ARMS):
        raise ValueError(f"--arms must name {', '.join(dp.ARMS)}; got {', '.join(folders)}")
    cards = {arm: read_card(folder) for arm, folder in folders.items()}
    pooled = recipe(cards, config)
    every = dp.datasets(pooled)  # the features are read (or found in the cache) for the run's own sets
    sets = {k: every[k] for k in ("warmup", "rl", "val")}
    loaded = load_location(pooled.base)
    states, options = dp.features(PooledReader(loaded.model.get_decoder(), loaded.tokenizer, pooled.layer), every,
                                  Path(config.cache))
    hidden = loaded.model.config.hidden_size
    t = {k: dp.tensors(rows, states, options, hidden) for k, rows in sets.items()}
    logfile = (out / "log.jsonl").open("a")

    def log(record):
        logfile.write(json.dumps(record) + "\n"); logfile.flush(); print(record, flush=True)

    probs, labels, sources = out_of_family(pooled, sets, t, config.folds, log)
    report = {"folds": config.folds, "fit_rows": len(labels), "fit_natural_rows": sources.count("natural"), "arms": {}}
    for arm, folder in folders.items():
        temperature = fit_temperature(probs[arm], labels)
        head = load_head(folder, hidden)
        raw = dp.probs_26(head, t["val"])
        scaled = divided(head, temperature)
        fit = {"temperature": temperature, "fit_rows": len(labels), "folds": config.folds,
               "fitted_on": "out-of-family rows of heads cross-fitted over the train families (NLL)",
               "unscaled_sha256": cards[arm].sha256[HEAD_FILE],
               "command": f"python -m train.decision_pooled_temperature --arms {config.arms} --folds {config.folds}"}
        save_pooled(out / arm, scaled.eval(), base=pooled.base, layer=pooled.layer,
                    training={**cards[arm].training, "temperature_fit": fit},
                    body_config=loaded.model.config, tokenizer=loaded.tokenizer)
        report["arms"][arm] = {"temperature": temperature, "val_raw": val_report(sets["val"], raw),
                               "val_scaled": val_report(sets["val"], dp.probs_26(scaled, t["val"]))}
        log({"arm": arm, **report["arms"][arm]})
    report["wall_s"] = round(time.time() - t0, 1)
    write_report(config.json, report)
    return report


if __name__ == "__main__":
    main(parse_config(TemperatureConfig))
