"""A softening for the pooled arms: each arm's logits divided by a temperature that grows as a state lies farther
from the states it was trained on, fitted on ticket families the arm's recipe never read.

Why: the pooled RLCD arm is overconfident on families nobody trained on (natural test, as trained: accuracy 0.714,
mean confidence 0.835) since every row its RL stage prices comes from families the warmup read, and val cannot
say by how much (its four families are harder than the test's). So the train families are cut into folds
(``train.decision_pooled.family_folds``); per fold the three arms are trained with the shipped run's settings on
the pools without it and read on what it holds out (``train.decision_pooled.placement``: whole tickets whose
families all lie in the fold, as val and test tickets share none with training; synthetic contexts by hash). One
temperature for every row fits those poorly: the synthetic rows, whose templates every split shares, need far
less than the natural ones (results/smollm2_decision/pooled_sweeps.md). A state's nearness
(``PooledHead.nearness``: mean cosine to its nearest training states) tells the two apart, so per arm
T = exp(a + b (nearness - SOFTEN_AT)), (a, b) minimising the Brier score of the held-out predictions (Nelder-Mead
from T = 1), each held-out row's nearness measured against its fold's own training states. The shipped head keeps
its weights and gains the pools' distinct states and (a, b); the card's training record keeps the fit and the
unsoftened head's sha256. Val is read only to report (as trained and softened side by side).

    python -m train.decision_pooled_temperature --arms warmup=DIR,rlcd=DIR,rlvr=DIR --out runs/smollm2-pooled-t
"""

import copy
import dataclasses
import json
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core.decision.pooled import HEAD_FILE, PooledHead, PooledReader, load_head, read_card, save_pooled
from core.decision.softening import NEAREST, SOFTEN_AT
from core.decision.training import brier
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


def out_of_family(pooled: dp.PooledConfig, sets: dict, t: dict, folds: int, log) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """Per arm, the logits [N, K] (-inf past a row's options) of heads cross-fitted over the family folds on their
    held-out rows; the rows' labels; and each row's nearness to its fold's training states."""
    family_folds = dp.family_folds(pooled.seed, folds)
    logits, labels, nearness = {arm: [] for arm in dp.ARMS}, [], []
    for f in range(folds):
        where = {k: [dp.placement(r, family_folds, f) for r in sets[k]] for k in ("warmup", "rl")}
        keep = {k: [i for i, w in enumerate(where[k]) if w == "train"] for k in where}
        part = {k: [sets[k][i] for i in keep[k]] for k in keep} | {"val": sets["val"]}
        part_t = {k: tuple(x[keep[k]] for x in t[k]) for k in keep} | {"val": t["val"]}
        heads = dp.train_arms(pooled, part, part_t, lambda record: log({"fold": f, **record}))
        # one standardisation for all arms: the warmup's
        reference = with_neighbours(copy.deepcopy(heads["warmup"]), pool_states(part, part_t))
        for k in ("warmup", "rl"):
            held_t = tuple(x[[i for i, w in enumerate(where[k]) if w == "held"]] for x in t[k])
            with torch.no_grad():
                for arm, head in heads.items():
                    logits[arm].append(head(*held_t[:3]))
                nearness.append(reference.nearness(held_t[0]))
            labels.append(held_t[3])
    width = max(x.shape[1] for parts in logits.values() for x in parts)
    pad = lambda x: torch.nn.functional.pad(x, (0, width - x.shape[1]), value=float("-inf"))  # noqa: E731
    return {arm: torch.cat([pad(x) for x in parts]) for arm, parts in logits.items()}, torch.cat(labels), torch.cat(nearness)


def pool_states(sets: dict, t: dict) -> torch.Tensor:
    """[N, H]: the distinct states of the training pools (``warmup`` and ``rl``), each once."""
    seen, rows = set(), []
    for k in ("warmup", "rl"):
        for i, r in enumerate(sets[k]):
            if r.state not in seen:
                seen.add(r.state); rows.append(t[k][0][i])
    return torch.stack(rows)


def with_neighbours(head: PooledHead, states: torch.Tensor) -> PooledHead:
    """``head`` holding ``states`` (its training pools' distinct states) as its neighbours."""
    with torch.no_grad():
        head.neighbours = head.unit_states(states)
    return head


def fit_softening(logits: torch.Tensor, labels: torch.Tensor, nearness: torch.Tensor) -> tuple[float, float]:
    """(a, b) minimising the mean Brier score of softmax(logits / exp(a + b (nearness - SOFTEN_AT))), from (0, 0).
    Brier, not NLL: a few confidently wrong answers set an NLL fit, which then left the bulk of the out-of-family
    rows underconfident (results/smollm2_decision/pooled_sweeps.md)."""
    from scipy.optimize import minimize

    finite = logits.double().masked_fill(~torch.isfinite(logits), -1e4)
    x = nearness.double() - SOFTEN_AT

    def loss(ab) -> float:
        return float(brier(torch.softmax(finite / torch.exp(ab[0] + ab[1] * x)[:, None], -1), labels))

    a, b = minimize(lambda ab: loss(torch.tensor(ab, dtype=torch.float64)), x0=[0.0, 0.0], method="Nelder-Mead").x
    return float(a), float(b)


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
    already = sorted(arm for arm, card in cards.items() if "softening" in card.training)
    if already:
        raise ValueError(f"arms {', '.join(already)} are softened already; pass the heads as trained "
                         "(their cards' softening.unsoftened_sha256 names them)")
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

    logits, labels, nearness = out_of_family(pooled, sets, t, config.folds, log)
    report = {"folds": config.folds, "fit_rows": len(labels), "arms": {}}
    pool = pool_states(sets, t)  # every arm's neighbours: the same pools
    for arm, folder in folders.items():
        a, b = fit_softening(logits[arm], labels, nearness)
        head = load_head(folder, hidden)
        raw = dp.probs_26(head, t["val"])
        softened = with_neighbours(head, pool)
        softened.softening.copy_(torch.tensor([a, b]))
        fit = {"a": a, "b": b, "nearest": NEAREST, "soften_at": SOFTEN_AT, "neighbours": len(softened.neighbours),
               "fit_rows": len(labels), "folds": config.folds,
               "fitted_on": "held-out tickets (and synthetic contexts) of heads cross-fitted over the train families (Brier)",
               "unsoftened_sha256": cards[arm].sha256[HEAD_FILE],
               "command": f"python -m train.decision_pooled_temperature --arms {config.arms} --folds {config.folds}"}
        save_pooled(out / arm, softened.eval(), base=pooled.base, layer=pooled.layer,
                    training={**cards[arm].training, "softening": fit},
                    body_config=loaded.model.config, tokenizer=loaded.tokenizer)
        with torch.no_grad():
            temperature = softened.temperature(t["val"][0])
        report["arms"][arm] = {"a": a, "b": b, "val_temperature_mean": float(temperature.mean()),
                               "val_raw": val_report(sets["val"], raw),
                               "val_softened": val_report(sets["val"], dp.probs_26(softened, t["val"]))}
        log({"arm": arm, **report["arms"][arm]})
    report["wall_s"] = round(time.time() - t0, 1)
    write_report(config.json, report)
    return report


if __name__ == "__main__":
    main(parse_config(TemperatureConfig))
