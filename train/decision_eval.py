"""Evaluate the decision arms on the test split and the known-posterior probe; JSON and plots.

For each arm (default: the shipped ``checkpoints/decision-{warmup,rlcd,rlvr,oracle}``, each loaded
with full verification) this reads option probabilities for every test row and probe row, then
reports accuracy, ECE (15 bins), Brier, mean confidence, NOTA recall/false alarm, AURC, per-source
slices, the probe means (two-cue max p, ideal 0.5; one-cue max p, ideal 1.0; escalation
confidence, ideal 0.90), 95% bootstrap intervals resampling whole contexts, and paired differences
between arms on the same rows. Every metric comes from ``core.calibration``.

    python -m train.decision_eval --json results/decision_eval.json --plots results/decision_plots
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.decision.batches import option_probs, prompt_of
from core.decision.data.store import read_partition
from core.decision.evaluation.scores import ArmScores, arm_report, paired_report, score_rows
from core.decision.export.published import load_decider
from train.decision_run import parse_config, set_threads, write_report

ARMS = ("warmup", "rlcd", "rlvr", "oracle")
PAIRS = (("rlcd", "warmup"), ("rlvr", "rlcd"), ("oracle", "rlcd"), ("rlvr", "warmup"))
"""Paired differences reported (first minus second) when both arms are present."""


@dataclass(frozen=True)
class EvalConfig:
    """Which arms, which data, where to write."""

    checkpoints: str = field(default="checkpoints", metadata={"help": "folder holding decision-<arm>/"})
    arms: str = field(default=",".join(ARMS), metadata={"help": "comma list of arm names, or name=dir pairs"})
    data: str = field(default="runs/data/decision", metadata={"help": "dataset directory (test.jsonl, probe.jsonl)"})
    limit: int = field(default=0, metadata={"help": "first N test rows only (0 = all)"})
    json: str = field(default="", metadata={"help": "write the report here (JSON)"})
    plots: str = field(default="", metadata={"help": "write reliability and probe PNGs into this folder"})
    resamples: int = field(default=2000, metadata={"help": "bootstrap resamples"})
    seed: int = field(default=0, metadata={"help": "bootstrap seed"})


def arm_dirs(config: EvalConfig) -> dict[str, Path]:
    """Arm name -> export directory, from ``--arms``."""
    out = {}
    for item in filter(None, (a.strip() for a in config.arms.split(","))):
        name, _, path = item.partition("=")
        out[name] = Path(path) if path else Path(config.checkpoints) / f"decision-{name}"
    if not out:
        raise ValueError("no arms to evaluate")
    return out


def probabilities(directory: Path, rows) -> np.ndarray:
    """Verified load, then option probabilities [N, 26] for ``rows``."""
    decider = load_decider(directory)
    return option_probs(decider.body, decider.rows, decider.tokenizer, [prompt_of(r) for r in rows])


def main(config: EvalConfig) -> dict:
    set_threads()
    test = read_partition(Path(config.data), "test")
    test = test[: config.limit] if config.limit else test
    probe = read_partition(Path(config.data), "probe")
    scores: dict[str, ArmScores] = {}
    report = {"data": config.data, "test_rows": len(test), "probe_rows": len(probe), "arms": {}, "paired": {}}
    for name, directory in arm_dirs(config).items():
        scores[name] = score_rows(test, probabilities(directory, test), probe, probabilities(directory, probe))
        report["arms"][name] = {"dir": str(directory), **arm_report(scores[name], config.resamples, config.seed)}
    for a, b in PAIRS:
        if a in scores and b in scores:
            report["paired"][f"{a}-{b}"] = paired_report(scores[a], scores[b], config.resamples, config.seed)
    write_report(config.json, report)
    if config.plots:
        from train.decision_plots import probe_bars, reliability_diagrams
        reliability_diagrams(scores, Path(config.plots) / "reliability.png")
        probe_bars(scores, Path(config.plots) / "probe.png")
    return report


def summary_table(report: dict) -> str:
    """A markdown table of the headline numbers per arm."""
    head = "| arm | accuracy | ECE | Brier | mean conf | probe two-cue max p | probe escalate conf |\n|---|---|---|---|---|---|---|"
    lines = [head]
    for name, arm in report["arms"].items():
        lines.append(f"| {name} | {arm['accuracy']:.3f} | {arm['ece']:.3f} | {arm['brier']:.3f} | "
                     f"{arm['mean_confidence']:.3f} | {arm['probe_two_cue_max_p']:.3f} | "
                     f"{arm['probe_escalate_confidence']:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary_table(main(parse_config(EvalConfig))))
