"""PNG plots for the decision evaluation: reliability diagrams per arm and probe bars.

Matplotlib with the Agg backend (files only, no display). The bins and means come from
``core.calibration`` through ``core.decision.evaluation.scores``; this module only draws them.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from core import calibration as cal  # noqa: E402
from core.decision.evaluation.reports import PROBE_GROUPS  # noqa: E402
from core.decision.evaluation.scores import ArmScores  # noqa: E402


def reliability_diagrams(scores: dict[str, ArmScores], out: Path) -> Path:
    """One panel per arm: accuracy vs mean confidence per 15-bin, bar width ~ bin count."""
    fig, axes = plt.subplots(1, len(scores), figsize=(3.2 * len(scores), 3.4), squeeze=False)
    for ax, (name, s) in zip(axes[0], scores.items()):
        bins = [b for b in cal.reliability_bins(s.probs, s.labels) if b.count]
        conf, acc = [b.confidence for b in bins], [b.accuracy for b in bins]
        count = np.array([b.count for b in bins], dtype=float)
        ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
        ax.scatter(conf, acc, s=10 + 200 * count / count.sum(), color="tab:blue")
        ax.plot(conf, acc, color="tab:blue", lw=1)
        ax.vlines(conf, [b.acc_lo for b in bins], [b.acc_hi for b in bins], color="tab:blue", lw=0.8)
        ax.set_title(f"{name}  ECE {cal.ece(s.probs, s.labels):.3f}", fontsize=9)
        ax.set_xlabel("confidence (max p)")
        ax.set_xlim(0, 1.02); ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel("accuracy")
    return _save(fig, out)


def probe_bars(scores: dict[str, ArmScores], out: Path) -> Path:
    """Mean max p on one-cue, two-cue and escalation probe rows per arm, with the ideal values."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    width = 0.8 / max(1, len(scores))
    for j, (name, s) in enumerate(scores.items()):
        means = [float(np.mean([max(s.probe_probs[i]) for i in g.rows(s.probe_tags)])) for g in PROBE_GROUPS]
        ax.bar(np.arange(len(PROBE_GROUPS)) + j * width, means, width, label=name)
    for i, g in enumerate(PROBE_GROUPS):
        ax.hlines(g.ideal, i - 0.1, i + 0.8, colors="black", linestyles="--", lw=1)
    ax.set_xticks(np.arange(len(PROBE_GROUPS)) + 0.4 - width / 2, [f"{g.label} (ideal {g.ideal})" for g in PROBE_GROUPS])
    ax.set_ylabel("mean max probability")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8, ncol=4, loc="lower center")
    return _save(fig, out)


def _save(fig, out: Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
