"""Evaluate the option scorer on our test requests, with the letter-readout RLCD model beside it.

Rows are the test split's questions (the letter models' test contexts, rewritten by
``train.option_data``); claim questions form the abstention probe. ``correct`` is 1 when the top
option is the truth, so a question whose truth is missing from the options is always an error:
that is what the confidence head is for. accuracy, wrong/coverage at p >= 0.9 (p = max p) and the
AURCs use every row; nll, ece, brier use rows whose truth is shown. So that accuracy and ECE are read on the
same rows, ``accuracy_shown`` (rows whose truth is shown) and ``ece_all`` (every row, a missing truth an
error at its max p) stand beside them. 95% intervals resample whole
contexts (core.stats). RLCD sees the same rows in its own format: canonical question and option
texts, no "none of the above", its max p as its confidence.

    python -m train.option_eval [--model checkpoints/option-scorer] [--json results/option_eval.json]
    python -m train.option_eval --model runs/option/scorer/model --ship checkpoints/option-scorer \
        --results results/option_eval.json --times runs/option/times.log   # copy + model card, no eval
"""

import json
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core import calibration as cal
from core.decision.export.published import load_decider
from core.decision.option.scorer import OptionScorer
from core.decision.questions import QUESTION_TYPES
from core.stats import bootstrap_statistic, paired_statistic_difference
from train.decision_run import parse_config, set_threads, write_report
from train.option_data import INSTRUCTIONS, OptionContext, read_contexts

START = "60edf50"
"""The commit whose checkpoints/decision-rlcd starts the scorer (train/option_pipeline.sh extracts it)."""
CANONICAL = {alt: q for q, alts in INSTRUCTIONS.items() for alt in alts}


@dataclass(frozen=True)
class EvalConfig:
    model: str = field(default="checkpoints/option-scorer", metadata={"help": "option-scorer directory"})
    rlcd: str = field(default="checkpoints/decision-rlcd", metadata={"help": "letter model beside it ('' to skip)"})
    data: str = field(default="runs/data/option", metadata={"help": "option data directory (test.jsonl)"})
    json: str = field(default="", metadata={"help": "write the results here"})
    limit: int = field(default=0, metadata={"help": "first N test contexts only (0 = all)"})
    resamples: int = field(default=1000, metadata={"help": "bootstrap resamples"})
    seed: int = field(default=0, metadata={"help": "bootstrap seed"})
    ship: str = field(default="", metadata={"help": "instead of evaluating: copy --model here with a model card"})
    results: str = field(default="results/option_eval.json", metadata={"help": "with --ship: the eval JSON for the card"})
    times: str = field(default="", metadata={"help": "with --ship: the pipeline's times.log"})


@dataclass
class Rows:
    """Per question: probabilities, label (-1 when missing), confidences, context, claim tag."""

    probs: list = field(default_factory=list)
    label: list = field(default_factory=list)
    head: list = field(default_factory=list)
    context: list = field(default_factory=list)
    claim: list = field(default_factory=list)
    """"" for a decision row, else "stated" / "unstated"."""

    def add(self, probs, label, head, context, tags):
        self.probs.append(list(probs))
        self.label.append(-1 if label is None else label)
        self.head.append(head)
        self.context.append(context)
        self.claim.append(next((t for t in tags if t in ("stated", "unstated")), ""))


def ours(scorer: OptionScorer, contexts: list[OptionContext]) -> Rows:
    rows = Rows()
    for c in contexts:
        answers = scorer.score(c.state, c.request())["answers"]
        for q in c.questions:
            a = answers[q.name]
            probs = [a["noul"], 1 - a["noul"]] if q.type == "noul" else list(a["probabilities"].values())
            head = a["confidence"] if scorer.settings.confidence_mode == "head" else float("nan")
            rows.add(probs, q.label, head, c.context_id, q.tags)
    return rows


def rlcd(decider, contexts: list[OptionContext]) -> Rows:
    rows = Rows()
    for c in contexts:
        qs = [QUESTION_TYPES[q.type](CANONICAL.get(q.instructions, q.instructions), tuple(q.values)) for q in c.questions]
        for q, a in zip(c.questions, decider.decide(c.state, qs)):
            rows.add(list(a.probs.values()), q.label, float("nan"), c.context_id, q.tags)
    return rows


def _correct(rows: Rows, sel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    probs = [rows.probs[i] for i in sel]
    max_p = np.array([max(p) for p in probs])
    top = np.array([int(np.argmax(p)) for p in probs])
    return max_p, (top == np.array([rows.label[i] for i in sel])).astype(float), np.array([rows.head[i] for i in sel])


def metrics(rows: Rows, resamples: int, seed: int) -> dict:
    """Every JSON key for one model (head keys only when it has a head)."""
    sel = [i for i, c in enumerate(rows.claim) if not c]
    max_p, correct, head = _correct(rows, sel)
    clusters = [rows.context[i] for i in sel]
    shown = np.array([rows.label[i] >= 0 for i in sel])
    probs = [rows.probs[i] for i in sel]
    labels = [rows.label[i] for i in sel]
    nll = np.array([-math.log(max(p[y], 1e-12)) if y >= 0 else np.nan for p, y in zip(probs, labels)])
    brier = np.array([cal.brier([p], [y]) if y >= 0 else np.nan for p, y in zip(probs, labels)])

    def on_shown(fn):
        return lambda idx: fn(idx[shown[idx]])

    def at_p90(conf, what):
        def stat(idx):
            kept = idx[conf[idx] >= 0.9]
            return float(1 - correct[kept].mean()) if what == "wrong" and kept.size else (
                kept.size / idx.size if what == "coverage" else float("nan"))
        return stat

    def accuracy(idx):
        return float(correct[idx].mean())

    def ece(idx):
        return cal.ece_from(max_p[idx], correct[idx])

    stats = {
        "accuracy": accuracy, "ece_all": ece, "accuracy_shown": on_shown(accuracy),
        "nll": on_shown(lambda idx: float(nll[idx].mean())),
        "ece": on_shown(ece),
        "brier": on_shown(lambda idx: float(brier[idx].mean())),
        "wrong_at_p90": at_p90(max_p, "wrong"), "coverage_at_p90": at_p90(max_p, "coverage"),
        "aurc_max_p": lambda idx: cal.selective_from(max_p[idx], correct[idx]).aurc,
    }
    has_head = not np.isnan(head).all()
    if has_head:
        stats |= {"aurc_head": lambda idx: cal.selective_from(head[idx], correct[idx]).aurc,
                  "wrong_at_p90_head": at_p90(head, "wrong"), "coverage_at_p90_head": at_p90(head, "coverage"),
                  "ece_head": lambda idx: cal.ece_from(head[idx], correct[idx])}
    kw = {"resamples": resamples, "seed": seed}
    out = {k: bootstrap_statistic(fn, len(sel), clusters, **kw).as_dict() for k, fn in stats.items()}
    if has_head:
        out["aurc_head_minus_max_p"] = paired_statistic_difference(stats["aurc_head"], stats["aurc_max_p"], len(sel),
                                                                    clusters, **kw).as_dict()
    out["truth_missing_share"] = float(1 - shown.mean())
    out |= abstention(rows, "head" if has_head else "max_p", resamples, seed)
    return out


def abstention(rows: Rows, which: str, resamples: int, seed: int) -> dict:
    """Mean confidence on claim questions whose record states / does not state the claim."""
    out = {}
    for kind in ("stated", "unstated"):
        sel = [i for i, c in enumerate(rows.claim) if c == kind]
        max_p, _, head = _correct(rows, sel)
        conf = head if which == "head" else max_p
        clusters = [rows.context[i] for i in sel]
        out[f"abstention_conf_{kind}"] = bootstrap_statistic(lambda idx: float(conf[idx].mean()), len(sel), clusters,
                                                             resamples=resamples, seed=seed).as_dict()
        out[f"abstention_max_p_{kind}"] = float(max_p.mean()) if len(sel) else float("nan")
    out["abstention_confidence"] = which
    return out


KEYS = ("accuracy", "ece_all", "accuracy_shown", "nll", "ece", "brier", "wrong_at_p90", "coverage_at_p90", "aurc_head", "aurc_max_p",
        "aurc_head_minus_max_p", "abstention_conf_stated", "abstention_conf_unstated")


def _cell(v) -> str:
    return "-" if v is None else f"{v['mean']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}]"


def ship(config: EvalConfig) -> Path:
    """Copy a verified model folder to ``config.ship`` with its run log and a card written from the records."""
    OptionScorer.load(config.model)
    out, run = Path(config.ship), Path(config.model).parent
    if out.exists():
        raise FileExistsError(f"{out} exists; remove it to ship again")
    shutil.copytree(config.model, out)
    for name in ("log.jsonl", "meta.jsonl"):
        shutil.copy(run / name, out / f"run_{name}")
    card = json.loads((out / "option_model.json").read_text())
    res = json.loads(Path(config.results).read_text())
    times = [json.loads(line) for line in Path(config.times).read_text().splitlines()] if config.times else []
    meta = [json.loads(line) for line in (run / "meta.jsonl").read_text().splitlines()]
    size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    rows = "\n".join(f"| {k} | {_cell(res.get(k))} | {_cell(res['rlcd'].get(k)) if 'rlcd' in res else '-'} |" for k in KEYS)
    lines = [
        "# option-scorer", "",
        "Our option-scoring decision model (ClarifyLab, issue #15): a Qwen3-architecture body "
        f"(hidden {card['hidden_size']}), an option head scoring each option at its own marker, and a confidence "
        "head trained afterwards on the frozen scorer. Format `clarifylab-option-scorer-v1`; load with "
        "`core.decision.option.scorer.OptionScorer.load` (sha256 verified, no remote code). See docs/decision_models.md.", "",
        "## Command (seed 0)", "", "```bash", "nice -n 10 bash train/option_pipeline.sh 0", "```", "",
        f"The body and tokenizer start from `checkpoints/decision-rlcd` as commit {START} holds it (the pipeline's start "
        "stage extracts it from the history: a later ship replaced that folder).", "",
        f"Starts: {len(meta)} (resumed: {sum(m['resume'] for m in meta)}). Config:", "", "```json",
        json.dumps(card["training"]["config"], indent=1), "```", "",
        "## Wall time (`nice -n 10`, one torch thread, shared 2-core CPU)", "",
        *[f"- {t['stage']}: {t['wall_s']:.1f} s wall, {t['cpu_s']:.1f} s CPU" for t in times],
        f"- train (from the run's own clock): {card['training']['wall_s']} s", "",
        f"Settings: temperature {card['settings']['temperature']}, confidence_mode `{card['settings']['confidence_mode']}`. "
        f"Scorer hash before/after the head phase: {card['training']['frozen_scorer']}. Size: {size:.2f} MB.", "",
        f"## Results ({res['contexts']} test contexts, {res['questions']} questions; 95% intervals over contexts)", "",
        "| key | option-scorer | rlcd (same rows) |", "|---|---|---|", rows, "",
        "Log: `run_log.jsonl` (loss, val, temperature, head BCE); full JSON: results/option_eval.json.", ""]
    (out / "README.md").write_text("\n".join(lines))
    OptionScorer.load(out)
    return out


def main(config: EvalConfig) -> dict:
    set_threads(1)
    if config.ship:
        return {"shipped": str(ship(config))}
    test = Path(config.data) / "test.jsonl"
    if not test.is_file():
        raise SystemExit(f"no {test}; build the data first: python -m train.option_data --out {config.data}")
    contexts = read_contexts(test)
    if config.limit:
        contexts = contexts[: config.limit]
    scorer = OptionScorer.load(config.model)
    result = {"model": config.model, "contexts": len(contexts), "questions": sum(len(c.questions) for c in contexts),
              "settings": scorer.settings.model_dump(), **metrics(ours(scorer, contexts), config.resamples, config.seed)}
    if config.rlcd:
        result["rlcd"] = {"model": config.rlcd, **metrics(rlcd(load_decider(config.rlcd), contexts),
                                                           config.resamples, config.seed)}
    write_report(config.json, result)
    return result


if __name__ == "__main__":
    res = main(parse_config(EvalConfig))
    if "shipped" in res:
        raise SystemExit(print(res["shipped"]))
    for name, r in (("option-scorer", res), ("rlcd", res.get("rlcd"))):
        if r:
            print(name, {k: round(v["mean"], 4) if isinstance(v, dict) else v for k, v in r.items()
                         if k in KEYS and k != "aurc_head_minus_max_p"})  # that one is printed whole below
    if "aurc_head_minus_max_p" in res:
        print("aurc_head_minus_max_p", res["aurc_head_minus_max_p"])
