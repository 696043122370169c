"""Scores of one decision model on labelled rows and on the known-posterior probe, as records.

``score_rows`` keeps each row's probabilities over its own options plus the facts metrics slice by
(context, source, NOTA position); ``arm_report`` lays out ``core.decision.evaluation.reports``' headline
metrics and probe groups as the evaluation JSON, and ``paired_report`` adds paired differences;
``sets_report`` does both for several arms on several sets; ``measured`` reads a shipped model's figures
back from the committed JSON, so a picker shows what the model scored before anyone asks it.
Intervals resample whole contexts (the three questions about one ticket are not independent).
Used by ``python -m train.decision_eval``.
"""

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from core import calibration as cal
from core.decision.data.rows import NOTA, DecisionRow
from core.decision.evaluation.reports import PROBE_GROUPS, headline_metrics, probe_means
from core.stats import Interval

HEADLINE = ("accuracy", "ece", "brier", "mean_confidence")
"""Metrics with intervals in the evaluation JSON (and with paired differences)."""


@dataclass(frozen=True)
class ArmScores:
    """Per-row facts of one model on the test rows and the probe rows."""

    probs: list[list[float]]
    """Each test row's probabilities over its own options."""
    labels: list[int]
    contexts: list[str]
    sources: list[str]
    nota: list[int | None]
    """NOTA's option index in each row, or None when not offered."""
    probe_probs: list[list[float]]
    probe_tags: list[list[str]]
    probe_contexts: list[str]
    kinds: Sequence[str] = ()
    """Each test row's primitive (choice, score, noul), for per-kind slices."""

    @property
    def predictions(self) -> list[int]:
        return [int(np.argmax(p)) for p in self.probs]


def score_rows(rows: Sequence[DecisionRow], probs: np.ndarray, probe: Sequence[DecisionRow],
               probe_probs: np.ndarray) -> ArmScores:
    """Collect per-row facts from [N, 26] probability arrays (columns beyond each option count drop)."""
    if len(rows) != len(probs) or len(probe) != len(probe_probs):
        raise ValueError(f"rows and probabilities differ in length: {len(rows)}/{len(probs)}, "
                         f"{len(probe)}/{len(probe_probs)}")

    def cut(rs, ps):
        return [[float(x) for x in p[: len(r.options)]] for r, p in zip(rs, ps)]

    return ArmScores(
        probs=cut(rows, probs), labels=[r.label for r in rows], contexts=[r.context_id for r in rows],
        sources=[r.source for r in rows], nota=[r.options.index(NOTA) if NOTA in r.options else None for r in rows],
        probe_probs=cut(probe, probe_probs), probe_tags=[list(r.tags) for r in probe],
        probe_contexts=[r.context_id for r in probe], kinds=[r.kind for r in rows],
    )


def arm_report(s: ArmScores, resamples: int = 1000, seed: int = 0) -> dict:
    """Headline metrics with clustered 95% intervals, NOTA rates, AURC, per-source slices, probe means."""
    metrics = headline_metrics(s.probs, s.labels, s.contexts, s.nota, resamples=resamples, seed=seed)
    out = {k: metrics[k].mean for k in HEADLINE}
    intervals = {k: metrics[k].as_dict() for k in HEADLINE}
    probe = probe_means(s.probe_probs, s.probe_tags, s.probe_contexts, resamples=resamples, seed=seed)
    for group in PROBE_GROUPS:
        out[group.key], intervals[group.key] = probe[group.label].mean, probe[group.label].as_dict()
    out.update(nota_recall=metrics["nota_recall"].mean, nota_false_alarm=metrics["nota_false_alarm"].mean,
               aurc=metrics["aurc"].mean, intervals=intervals,
               reliability=[asdict(b) for b in cal.reliability_bins(s.probs, s.labels)],
               by_source=slices(s, s.sources), by_kind=slices(s, s.kinds))
    return out


def slices(s: ArmScores, keys: Sequence[str]) -> dict:
    """Headline metrics of the rows sharing each value of ``keys`` (one key per test row)."""
    out = {}
    for key in sorted(set(keys)):
        idx = [i for i, x in enumerate(keys) if x == key]
        p, y = [s.probs[i] for i in idx], [s.labels[i] for i in idx]
        out[key] = {"rows": len(idx), "accuracy": cal.accuracy(p, y), "ece": cal.ece(p, y),
                    "brier": cal.brier(p, y), "mean_confidence": cal.mean_confidence(p)}
    return out


def paired_report(a: ArmScores, b: ArmScores, resamples: int = 1000, seed: int = 0) -> dict:
    """a minus b on the same rows for each headline metric, with paired clustered intervals."""
    if a.contexts != b.contexts or a.labels != b.labels:
        raise ValueError("paired differences need both arms scored on the same rows")
    return {k: cal.paired_metric_difference(k, a.probs, b.probs, a.labels, a.contexts, resamples=resamples,
                                            seed=seed).as_dict() for k in HEADLINE}


def sets_report(sets: Mapping[str, Sequence[DecisionRow]], probs: Mapping[str, Mapping[str, np.ndarray]],
                pairs: Sequence[tuple[str, str]], resamples: int = 1000, seed: int = 0) -> dict:
    """``{set: {arm: arm_report}, "paired": {"set:a-b": paired_report}}`` for every set but ``"probe"``.

    ``probs[arm][set]`` are [N, 26] arrays; an arm scores the sets it has, each beside its own
    ``probs[arm]["probe"]``; a pair is reported on the sets both of its arms have."""
    named = [k for k in sets if k != "probe"]
    report: dict = {k: {} for k in named}
    scores = {}
    for arm, by_set in probs.items():
        for which in named:
            if which in by_set:
                scores[arm, which] = score_rows(sets[which], by_set[which], sets["probe"], by_set["probe"])
                report[which][arm] = arm_report(scores[arm, which], resamples, seed)
                report[which][arm].pop("reliability")
    report["paired"] = {f"{which}:{a}-{b}": paired_report(scores[a, which], scores[b, which], resamples, seed)
                        for which in named for a, b in pairs if (a, which) in scores and (b, which) in scores}
    return report


RESULTS = Path(__file__).resolve().parents[3] / "results"
NATURAL, SYNTHETIC = "natural test tickets (families no training row used)", "synthetic test rows"
COMMITTED: dict[str, tuple[tuple[str, tuple[str, ...], str, str], ...]] = {
    **{f"decision-smollm2-pooled-{arm}": (("decision_smollm2_pooled_eval.json", ("natural", arm), NATURAL, "ece"),
                                          ("decision_smollm2_pooled_eval.json", ("synthetic", arm), SYNTHETIC, "ece"))
       for arm in ("warmup", "rlcd", "rlvr")},
    **{f"decision-smollm2-{arm}": (("decision_smollm2_eval.json", ("natural", arm), NATURAL, "ece"),
                                   ("decision_smollm2_eval.json", ("synthetic", arm), SYNTHETIC, "ece"))
       for arm in ("warmup", "rlcd", "rlvr")},
    **{f"decision-{arm}": (("decision_eval.json", ("arms", arm), SYNTHETIC, "ece"),)
       for arm in ("warmup", "rlvr", "oracle")},
    "decision-rlcd": (("decision_eval.json", ("arms", "rlcd"), SYNTHETIC, "ece"),
                      ("decision_smollm2_eval.json", ("natural", "tiny-rlcd"), NATURAL, "ece")),
    "option-scorer": (("option_eval.json", (), "synthetic test questions, missing answers included", "ece_all"),),
}
"""Where each shipped model's evaluation sits: (file under results/, keys to its metrics, which rows, the ECE's key).
The option scorer's ECE is ``ece_all``, over the same rows as its accuracy (its ``ece`` leaves out missing answers)."""


@dataclass(frozen=True)
class Measured:
    """A shipped model's accuracy and ECE on one set, read back from the committed evaluation."""

    rows: str
    """Which rows, in words; their count is ``accuracy.n``."""
    accuracy: Interval
    ece: Interval
    """Expected calibration error over the same rows, with its interval."""
    source: str
    """The committed JSON it was read from, relative to the checkout."""


def measured(model: str, results: Path = RESULTS) -> list[Measured]:
    """The committed figures of the shipped model named ``model`` (none for any other name, or when a file is
    absent or lacks the model: a deployment without results/ shows no claim rather than a wrong one). Each file
    is read once; an arm's intervals sit under its ``intervals``, the option scorer's at the top."""
    files: dict[str, object] = {}
    found = []
    for name, keys, rows, ece in COMMITTED.get(model, ()):
        try:
            if name not in files:
                files[name] = json.loads((results / name).read_text(encoding="utf-8"))
            metrics = files[name]
            for key in keys:
                metrics = metrics[key]
            spans = metrics.get("intervals", metrics)
            accuracy, error = Interval(**spans["accuracy"]), Interval(**spans[ece])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        found.append(Measured(rows, accuracy, error, f"{results.name}/{name}"))
    return found
