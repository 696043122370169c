"""Evaluate the SmolLM2 decision arms: natural held-out tickets, our synthetic test prefix and the probe.

Every arm is one LoRA adapter over the same frozen lower layers, so each prompt's lower-layer state
is computed once (``train.split_body.cache_states``) and every arm, and the zero-shot base
with its own letter rows, reads from it: the numbers equal each arm's Decider (checked in the
tests), at a fraction of the cost. The tiny RLCD arm (``checkpoints/decision-rlcd``) is scored on
the natural tickets beside them. ``--served URL`` also scores the natural tickets through a System
One endpoint (``python -m core.decision.serve checkpoints/decision-smollm2-rlcd``), one request per
ticket, so the judged numbers are the served model's. Metrics and context-clustered 95% intervals
come from ``core.decision.evaluation.scores`` (the tiny arms' evaluation, ``train.decision_eval``). An arm
whose card reads a choice in every cyclic order of its options (``core.decision.rotation``) is read so here too.

    python -m train.decision_smollm2_eval --json results/decision_smollm2_eval.json
"""

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core.decision.batches import option_probs, prompt_of, tokenize_prompts
from core.decision.data.store import read_partition
from core.decision.evaluation import evalsets, reports
from core.decision.evaluation.scores import sets_report
from core.decision.export.adapter import card_softens, head_rows
from core.decision.export.published import CARD_FILE, load_decider
from core.decision.prompt import letter_token_ids
from core.decision.rotation import merge_all, rows_in_orders
from train.decision_run import parse_config, write_report
from train.decision_smollm2 import BASE, probs_of
from train.split_body import SplitBody, cache_states

AS_TRAINED = " as trained"
"""A softened arm (``core.decision.softening``) is also read without its softening, under its name plus this."""
PAIRS = (("rlcd", "warmup"), ("rlvr", "rlcd"), ("rlvr", "warmup"), ("rlcd", "zero-shot"),
         ("rlcd as trained", "warmup as trained"), ("rlvr as trained", "rlcd as trained"))


@dataclass(frozen=True)
class SmolEvalConfig:
    """Which arms, which rows, where to write."""

    arms: str = field(default="warmup=checkpoints/decision-smollm2-warmup,rlcd=checkpoints/decision-smollm2-rlcd,"
                              "rlvr=checkpoints/decision-smollm2-rlvr", metadata={"help": "name=folder, comma-separated"})
    base: str = field(default=BASE, metadata={"help": "the base every arm adapts (the packaged SmolLM2 GGUF)"})
    natural: str = field(default="runs/data/natural", metadata={"help": "natural-ticket dataset (test.jsonl)"})
    synthetic: str = field(default="runs/data/decision", metadata={"help": "synthetic dataset (test, probe)"})
    natural_rows: int = field(default=0, metadata={"help": "first N natural test rows (0 = all)"})
    synthetic_rows: int = field(default=600, metadata={"help": "first N synthetic test rows (a prefix: whole contexts)"})
    probe_rows: int = field(default=400, metadata={"help": "first N probe rows"})
    tiny: str = field(default="checkpoints/decision-rlcd", metadata={"help": "tiny arm scored on natural rows ('' = none)"})
    served: str = field(default="", metadata={"help": "a System One URL scored on the natural rows too"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    cache: str = field(default="runs/smollm2-decision/cache", metadata={"help": "lower-layer state cache"})
    json: str = field(default="", metadata={"help": "write the report here (JSON)"})
    resamples: int = field(default=2000, metadata={"help": "bootstrap resamples (whole contexts)"})
    seed: int = field(default=0, metadata={"help": "bootstrap seed"})


def arm_dirs(spec: str) -> dict[str, Path]:
    return {n.strip(): Path(p.strip()) for n, p in (item.split("=", 1) for item in spec.split(",") if item.strip())}


def adapted_layers(folders: dict[str, Path]) -> int:
    """The number of top layers the arms adapt (they must agree: the cache lies below them)."""
    tops = {len(json.loads((d / "decision.json").read_text())["layers"]) for d in folders.values()}
    if len(tops) != 1:
        raise ValueError(f"the arms adapt different numbers of layers {sorted(tops)}; evaluate them separately")
    return tops.pop()


def arm_probs(config: SmolEvalConfig, sets: dict[str, list]) -> dict[str, dict[str, np.ndarray]]:
    """name -> set -> [N, 26] probabilities, for the zero-shot base and every arm."""
    from peft import PeftModel

    from core.models.loader import load_location

    folders = arm_dirs(config.arms)
    loaded = load_location(config.base)
    model, tokenizer = loaded.model, loaded.tokenizer
    split = SplitBody.of(model.get_decoder(), adapted_layers(folders))
    orders = {name: choice_orders(folder) for name, folder in folders.items()}
    reading = "cyclic" if "cyclic" in orders.values() else "given"  # every arm's readings lie among these
    shown = {k: rows_in_orders(rows, reading) for k, rows in sets.items()}
    given = {k: [j for j, (_, order) in enumerate(readings) if order == sorted(order)] for k, (_, readings) in shown.items()}
    prompts = {k: [prompt_of(r) for r in rows] for k, (rows, _) in shown.items()}
    states = {k: cache_states(split, tokenize_prompts(tokenizer, p), Path(config.cache), f"eval-{k}")
              for k, p in prompts.items()}

    def merged(name: str, k: str, p: np.ndarray) -> np.ndarray:
        return merge_all(p, shown[k][1], len(sets[k])) if orders.get(name) == "cyclic" else p[given[k]]

    base_rows = model.get_output_embeddings().weight[torch.tensor(letter_token_ids(tokenizer))].detach().float()
    out = {"zero-shot": {k: merged("zero-shot", k, probs_of(split, base_rows, states[k], prompts[k])) for k in sets}}
    peft, read = None, {}  # the softened arms' mean states, (layer, state) -> [H]: read once for all arms
    for name, folder in folders.items():
        if peft is None:
            peft = PeftModel.from_pretrained(model, folder, adapter_name=name)
        else:
            peft.load_adapter(folder, adapter_name=name)
        peft.set_adapter(name)
        peft.eval()
        rows = head_rows(folder)
        out[name] = {k: merged(name, k, probs_of(split, rows, states[k], prompts[k], softening_temperatures(
            folder, model, tokenizer, shown[k][0], read))) for k in sets}
        if softens(folder):
            out[name + AS_TRAINED] = {k: merged(name, k, probs_of(split, rows, states[k], prompts[k])) for k in sets}
        print(name, {k: round(float(np.mean(v.argmax(1) == [r.label for r in sets[k]])), 3)
                     for k, v in out[name].items()}, flush=True)
    return out


def choice_orders(folder: Path) -> str:
    """How the arm reads a choice question (its card's ``choice_orders``, ``core.decision.rotation``)."""
    return json.loads((folder / CARD_FILE).read_text()).get("choice_orders", "given")


def softens(folder: Path) -> bool:
    """Whether the arm's answers are softened: a softening whose fit is ``off`` (T = 1) keeps them as trained. Read
    off the card as ``card_softens`` reads it (no hashing: it is asked once per arm and set)."""
    if not card_softens(folder):
        return False
    return json.loads((folder / CARD_FILE).read_text()).get("training", {}).get("softening", {}).get("fit") != "off"


def softening_temperatures(folder: Path, model, tokenizer, rows: list, read: dict) -> torch.Tensor | None:
    """Each row's T under the arm's softening (its state's, as the served Decider measures it); None unsoftened.
    ``read`` keeps the mean states already read, (layer, state) -> [H], for the next arm."""
    from core.decision.export.adapter import SOFTENING_FILE
    from core.decision.prompt import encode_prefix, render_prefix
    from core.decision.softening import Softening, StateTemperature

    if not softens(folder):
        return None
    soft = Softening.load(folder / SOFTENING_FILE, model.config.hidden_size)
    if new := [x for x in dict.fromkeys(r.state for r in rows) if (soft.layer, x) not in read]:
        means = StateTemperature(model.get_decoder(), tokenizer, soft).states(
            [encode_prefix(tokenizer, render_prefix(x)) for x in new])
        read.update({(soft.layer, x): m for x, m in zip(new, means)})
    with torch.no_grad():
        return soft.temperature(torch.stack([read[(soft.layer, r.state)] for r in rows]))


def served_probs(url: str, rows: list) -> np.ndarray:
    """Probabilities from a System One endpoint, one request per ticket (its questions together)."""
    from core.decision.endpoint import open_model

    items = [evalsets.item_from_row(r) for r in rows]
    probs = reports.probabilities(open_model(url, "served"), items)
    out = np.zeros((len(rows), 26))
    for i, p in enumerate(probs):
        out[i, : len(p)] = p
    return out


def main(config: SmolEvalConfig) -> dict:
    torch.set_num_threads(config.threads)
    t0 = time.time()
    natural = read_partition(Path(config.natural), "test")
    natural = natural[: config.natural_rows] if config.natural_rows else natural
    synthetic = read_partition(Path(config.synthetic), "test")[: config.synthetic_rows]
    probe = read_partition(Path(config.synthetic), "probe")[: config.probe_rows]
    probs = arm_probs(config, {"natural": natural, "synthetic": synthetic, "probe": probe})
    if config.tiny:
        tiny = load_decider(config.tiny)
        probs["tiny-rlcd"] = {"natural": option_probs(tiny.body, tiny.rows, tiny.tokenizer, [prompt_of(r) for r in natural]),
                              "probe": option_probs(tiny.body, tiny.rows, tiny.tokenizer, [prompt_of(r) for r in probe])}
    if config.served:
        probs["served-rlcd"] = {"natural": served_probs(config.served, natural), "probe": probs["rlcd"]["probe"]}
    sets = {"natural": natural, "synthetic": synthetic, "probe": probe}
    report = {"rows": {k: len(v) for k, v in sets.items()}, "config": {k: str(v) for k, v in vars(config).items()},
              **sets_report(sets, probs, PAIRS, config.resamples, config.seed)}
    report["wall_s"] = round(time.time() - t0, 1)
    write_report(config.json, report)
    return report


def summary_table(report: dict) -> str:
    """Markdown: per arm and set, accuracy / ECE; on natural tickets also per question (the synthetic
    set's choice rows mix departments with order and access questions, so it gets none)."""
    lines = ["| arm | set | accuracy | ECE | Brier | mean conf | department | priority | page-now |", "|---|" * 1 + "---|" * 8]
    for which in ("natural", "synthetic"):
        for name, arm in report[which].items():
            kind = arm["by_kind"] if which == "natural" else {}
            per = " | ".join(f"{kind[k]['accuracy']:.3f}" if k in kind else "-" for k in ("choice", "score", "noul"))
            lines.append(f"| {name} | {which} | {arm['accuracy']:.3f} | {arm['ece']:.3f} | {arm['brier']:.3f} | "
                         f"{arm['mean_confidence']:.3f} | {per} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary_table(main(parse_config(SmolEvalConfig))))
