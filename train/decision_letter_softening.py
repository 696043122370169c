"""A softening for the letter arms: logits divided by T = exp(a + b (nearness - SOFTEN_AT)), nearness measured at
a layer of the frozen base below the adapter (``core.decision.softening``), fitted on val by Brier.

Why: the letter RLCD arm is overconfident on ticket families nobody trained on (natural test, as trained: ECE
0.179) and one temperature cannot help both those and the synthetic rows (results/smollm2_decision/graft/
identity/temperature_reference.log). The reference states are the distinct states of the warmup's training
pool (rebuilt from the warmup card's settings). Two fits are read, under the rule written before this ran
(results/smollm2_decision/letter_softening/rule.md): ``shared`` (the warmup's fit added to every arm) and
``each`` (every arm its own). The val rows are cut in two by context; each half's fit is read on the other half,
and the rule picks from those reads; the arms written (``--out``) carry the fit on all val rows of the choice,
and the familiarity under which they warn (the 5th percentile of the val states': ``Softening.of_states``).
``--fit off`` writes a = b = 0 (T = 1: every answer as trained) and keeps the reference for the familiarity signal,
for an arm whose val tickets are too unlike its test tickets for a fit on val to serve it
(results/smollm2_decision/heldout_rl/rule.md).

    python -m train.decision_letter_softening --out runs/letter-soft --json results/smollm2_decision/letter_softening/fit.json
"""

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core.decision.export.adapter import read_adapter_card, soften_adapter_arm
from core.decision.prompt import encode_prefix, render_prefix
from core.decision.softening import NEAREST, SOFTEN_AT, Softening, StateTemperature, temperature_of
from train.decision_pooled_temperature import fit_softening
from train.decision_run import evaluate_probs, parse_config, write_report
from train.decision_smollm2 import BASE, SmolConfig, pool
from train.decision_smollm2_eval import SmolEvalConfig, arm_dirs, arm_probs

ARMS = ("warmup", "rlcd", "rlvr")
FITS = ("shared", "each")
OFF = (0.0, 0.0)
"""a = b = 0: T = 1 for every state, the arm's answers as trained."""


@dataclass(frozen=True)
class LetterSofteningConfig:
    arms: str = field(default="warmup=checkpoints/decision-smollm2-warmup,rlcd=checkpoints/decision-smollm2-rlcd,"
                              "rlvr=checkpoints/decision-smollm2-rlvr", metadata={"help": "the arms as trained: name=DIR"})
    out: str = field(default="runs/letter-soft", metadata={"help": "the softened arms (<out>/<arm>) and the caches"})
    layer: int = field(default=24, metadata={"help": "the base layer whose input states nearness reads"})
    base: str = field(default=BASE, metadata={"help": "the base every arm adapts (the packaged SmolLM2 GGUF)"})
    fit: str = field(default="rule", metadata={"help": "which fit to write: rule (as the rule decides), shared, each "
                                                              "or off (T = 1, the familiarity reference alone)"})
    natural: str = field(default="runs/data/natural", metadata={"help": "natural-ticket dataset"})
    synthetic: str = field(default="runs/data/decision", metadata={"help": "synthetic dataset"})
    val_rows: int = field(default=1000, metadata={"help": "the RL stages' val rows"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    json: str = field(default="", metadata={"help": "write the fits and the val reads here"})

    def __post_init__(self):
        if self.fit not in ("rule", *FITS, "off"):
            raise ValueError(f"--fit must be rule, {', '.join(FITS)} or off; got {self.fit!r}")


def warmup_config(card, config: LetterSofteningConfig) -> SmolConfig:
    """The warmup's pool settings, from its card's training record."""
    t = card.training
    return SmolConfig(rows=t["rows"], natural_share=t["natural_share"], drill_share=t.get("drill_share", 0.0),
                      drill_easy_share=t.get("drill_easy_share", 0.0), seed=t["seed"], natural=config.natural,
                      synthetic=config.synthetic, val_rows=config.val_rows)


def distinct(states: list[str]) -> list[str]:
    return list(dict.fromkeys(states))


def state_means(texts: list[str], decoder, tokenizer, layer: int, cache: Path) -> dict[str, torch.Tensor]:
    """Each state's mean input to ``layer`` (header left out, as ``StateTemperature`` reads it), cached by the list."""
    key = hashlib.sha256(json.dumps([layer, texts]).encode()).hexdigest()[:16]
    path = cache / f"states-{key}.pt"
    if path.is_file():
        return dict(zip(texts, torch.load(path)))
    reader = StateTemperature(decoder, tokenizer, Softening(layer, decoder.config.hidden_size, 0))
    means = reader.states([encode_prefix(tokenizer, render_prefix(t)) for t in texts])
    cache.mkdir(parents=True, exist_ok=True)
    torch.save(means, path)
    return dict(zip(texts, means))


def log_probs(probs: np.ndarray) -> torch.Tensor:
    """Logits up to a per-row constant (what a temperature divides alike): log p, -inf where p is 0."""
    with np.errstate(divide="ignore"):
        return torch.from_numpy(np.log(probs))


def softened(logp: torch.Tensor, near: torch.Tensor, ab: tuple[float, float]) -> np.ndarray:
    finite = logp.double().masked_fill(~torch.isfinite(logp), -1e4)
    t = temperature_of(near.double(), torch.tensor(ab, dtype=torch.float64))
    return torch.softmax(finite / t[:, None], -1).numpy()


def read(rows: list, probs: np.ndarray) -> dict:
    """Accuracy, ECE, Brier and mean confidence: every row, the natural rows, the synthetic rows."""
    out = {}
    for part, keep in (("all", lambda r: True), ("natural", lambda r: r.source == "natural"),
                       ("synthetic", lambda r: r.source != "natural")):
        idx = [i for i, r in enumerate(rows) if keep(r)]
        if not idx:
            continue
        m = evaluate_probs([rows[i] for i in idx], probs[idx])
        out[part] = {k: round(float(m[k]), 4) for k in ("accuracy", "ece", "brier", "mean_confidence")}
    return out


def half_of(state: str) -> int:
    return hashlib.sha256(state.encode()).digest()[0] % 2


def out_of_half(rows, logp: dict, near, labels, fit: str) -> dict[str, np.ndarray]:
    """Per arm, the val probabilities softened by the fit on the other half of the contexts."""
    halves = np.array([half_of(r.state) for r in rows])
    out = {arm: np.zeros(logp[arm].shape) for arm in logp}
    for h in (0, 1):
        fit_idx, read_idx = torch.tensor(np.where(halves != h)[0]), np.where(halves == h)[0]
        fits = {arm: fit_softening(logp[arm][fit_idx], labels[fit_idx], near[fit_idx]) for arm in logp}
        for arm in logp:
            ab = fits["warmup"] if fit == "shared" else fits[arm]
            out[arm][read_idx] = softened(logp[arm][read_idx], near[read_idx], ab)
    return out


def rule(reads: dict) -> str:
    """results/smollm2_decision/letter_softening/rule.md, on the out-of-half reads: which fit ships ('' none)."""
    def ok(fit, shared):
        r = reads[fit]
        base = r["rlcd"]["natural"]["ece"] <= 0.10 and r["rlcd"]["all"]["ece"] <= reads["as trained"]["rlcd"]["all"]["ece"]
        if not shared:
            return base
        return (base and r["rlcd"]["all"]["ece"] - r["warmup"]["all"]["ece"] <= 0.01
                and r["rlvr"]["all"]["ece"] - r["rlcd"]["all"]["ece"] >= 0.05)
    return "shared" if ok("shared", True) else "each" if ok("each", False) else ""


def main(config: LetterSofteningConfig) -> dict:
    from core.models.loader import load_location

    torch.set_num_threads(config.threads)
    t0, out = time.time(), Path(config.out)
    folders = arm_dirs(config.arms)
    if set(folders) != set(ARMS):
        raise ValueError(f"--arms must name {', '.join(ARMS)}; got {', '.join(folders)}")
    cards = {arm: read_adapter_card(folder) for arm, folder in folders.items()}
    if already := sorted(arm for arm, c in cards.items() if c.softening_layer is not None):
        raise ValueError(f"arms {', '.join(already)} are softened already; pass them as trained")
    smol = warmup_config(cards["warmup"], config)
    reference = distinct([r.state for r in pool(smol, "train", smol.rows)])
    val = pool(smol, "val", config.val_rows)
    loaded = load_location(config.base)
    means = state_means(reference + distinct([r.state for r in val]), loaded.model.get_decoder(), loaded.tokenizer,
                        config.layer, out / "cache")
    t_states = time.time() - t0
    probe = Softening.of_states(config.layer, torch.stack([means[s] for s in reference]))
    near = probe.nearness(torch.stack([means[r.state] for r in val]))
    evaluated = SmolEvalConfig(arms=config.arms, base=config.base, natural=config.natural, synthetic=config.synthetic, tiny="",
                               cache=str(out / "cache"), threads=config.threads)
    probs = {arm: p["val"] for arm, p in arm_probs(evaluated, {"val": val}).items() if arm in ARMS}
    t_arms = time.time() - t0 - t_states
    logp, labels = {arm: log_probs(p) for arm, p in probs.items()}, torch.tensor([r.label for r in val])
    reads = {"as trained": {arm: read(val, p) for arm, p in probs.items()}}
    for fit in FITS:
        reads[fit] = {arm: read(val, p) for arm, p in out_of_half(val, logp, near, labels, fit).items()}
    chosen = rule(reads) if config.fit == "rule" else config.fit
    fits = {arm: fit_softening(logp[arm], labels, near) for arm in ARMS}
    report = {"reference_states": len(reference), "val_rows": len(val), "layer": config.layer, "nearest": NEAREST,
              "soften_at": SOFTEN_AT, "val_nearness": {"natural": float(near[[r.source == "natural" for r in val]].mean()),
                                                      "synthetic": float(near[[r.source != "natural" for r in val]].mean())},
              "out_of_half": reads, "chosen": chosen or "none", "fit_all_val": fits,
              "wall_s": {"states": round(t_states, 1), "arms_on_val": round(t_arms, 1)}}
    if chosen:
        for arm, folder in folders.items():
            ab = OFF if chosen == "off" else fits["warmup"] if chosen == "shared" else fits[arm]
            fitted_on = "nothing" if chosen == "off" else "warmup" if chosen == "shared" else arm
            fit = {"a": ab[0], "b": ab[1], "fit": chosen, "fitted_on": fitted_on,
                   "layer": config.layer, "nearest": NEAREST, "soften_at": SOFTEN_AT, "neighbours": len(reference),
                   "reference": "the distinct states of the warmup's training pool", "fit_rows": len(val),
                   **({"report": config.json} if config.json else {}),
                   "command": "python -m train.decision_letter_softening "
                              + " ".join(f"--{k} {v}" for k, v in dataclasses.asdict(config).items() if k != "json")}
            soft = Softening.of_states(config.layer, torch.stack([means[s] for s in reference]), ab,
                                       val=torch.stack([means[s] for s in distinct([r.state for r in val])]))
            fit["warn_below"] = float(soft.warn_below[0])
            soften_adapter_arm(folder, out / arm, soft, fit)
            report.setdefault("val_all_softened", {})[arm] = read(val, softened(logp[arm], near, ab))
    report["wall_s"]["total"] = round(time.time() - t0, 1)
    write_report(config.json, report)
    print(json.dumps({k: report[k] for k in ("chosen", "fit_all_val", "wall_s")}), flush=True)
    return report


if __name__ == "__main__":
    main(parse_config(LetterSofteningConfig))
