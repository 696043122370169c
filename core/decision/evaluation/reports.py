"""Calibration reports per model: run a Decider over labelled items, then summarise.

Every number comes from ``core.calibration`` (metrics, reliability bins, selective curve) and
``core.stats`` (bootstrap intervals drawing whole contexts, or whole families); this module only
arranges them per model, adds intervals for the metrics the core report leaves as point values
(classwise ECE, NOTA rates, AURC), and offers temperature scaling as a clearly separate post-hoc
reference: T is fitted on one part of the contexts and every scaled number is reported on the
other part only.

    probs = probabilities(decider, items)
    report = model_report("rlcd", items, probs)
"""

import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from core import calibration as cal
from core.decision.data.natural import deciding_family, family_counts
from core.decision.evaluation.evalsets import EvalItem
from core.stats import Interval, bootstrap_mean, bootstrap_statistic

RESAMPLES = 300
"""Bootstrap draws per interval: the view recomputes on every click (reports elsewhere use 1000)."""
CONTEXTS, FAMILIES = "contexts", "families"
RESAMPLE_UNITS = (CONTEXTS, FAMILIES)
"""What an interval's bootstrap draws whole: the questions about one state (default), or the natural
tickets' deciding families (``core.decision.data.natural.deciding_family``)."""
METRICS = (("accuracy", "accuracy"), ("ece", "ECE (15 bins)"), ("classwise_ece", "classwise ECE"),
           ("brier", "Brier"), ("mean_confidence", "mean confidence"), ("aurc", "AURC"),
           ("nota_recall", "NOTA recall"), ("nota_false_alarm", "NOTA false alarm"))
"""Report metric keys, in table order, with their display names."""


@dataclass(frozen=True)
class ProbeGroup:
    """One group of known-posterior probe rows: the rows carrying every tag, and the ideal mean max p."""

    label: str
    """Name in the tab and the plots."""
    key: str
    """Key in the evaluation JSON (``python -m train.decision_eval``)."""
    tags: tuple[str, ...]
    ideal: float

    def rows(self, tags: Sequence[Sequence[str]]) -> list[int]:
        return [i for i, t in enumerate(tags) if all(x in t for x in self.tags)]


PROBE_GROUPS = (ProbeGroup("one-cue department", "probe_one_cue_max_p", ("one_cue", "department"), 1.0),
                ProbeGroup("two-cue department", "probe_two_cue_max_p", ("two_cue", "department"), 0.5),
                ProbeGroup("escalate", "probe_escalate_confidence", ("escalate",), 0.9))
"""The probe groups, for the tab, the evaluation JSON and the plots alike."""
PUBLISHED_PROBE = {"warmup": {"two-cue department": 0.798}, "RLCD": {"two-cue department": 0.593, "escalate": 0.932},
                   "RLVR": {"two-cue department": 0.990, "escalate": 1.000}, "oracle": {"two-cue department": 0.630}}
"""Published known-posterior probe means (held-out tickets), for reference beside ours."""
NAN = Interval(float("nan"), float("nan"), float("nan"), 0)


class EvaluationTooLong(ValueError):
    """An evaluation that ran past its time budget (a shared server answers one evaluation at a time)."""


def probabilities(decider, items: Sequence[EvalItem], deadline: float | None = None) -> list[list[float]]:
    """Each item's option probabilities; questions about one context share one Decider call. Past ``deadline``
    (a ``time.perf_counter`` time) it stops with ``EvaluationTooLong``, naming how far it got."""
    groups: dict[tuple, list[int]] = {}
    for i, item in enumerate(items):
        key = (item.context_id, repr(item.state))
        groups.setdefault(key, []).append(i)
    out: list[list[float]] = [[] for _ in items]
    for done, idx in enumerate(groups.values()):
        if deadline is not None and time.perf_counter() > deadline:
            raise EvaluationTooLong(f"stopped at context {done:,} of {len(groups):,}: this server gives an evaluation "
                                    "its time budget; evaluate fewer rows, or one model at a time")
        answers = decider.decide(items[idx[0]].state, [items[i].question for i in idx])
        for i, ans in zip(idx, answers):
            out[i] = list(ans.probs.values())
    return out


@dataclass(frozen=True)
class ModelReport:
    """One model on one evaluation set: metrics with intervals, reliability bins, selective curve."""

    name: str
    n: int
    metrics: dict[str, Interval]
    """METRICS key -> value with its 95% clustered bootstrap interval (NaN when undefined)."""
    bins: list[cal.ReliabilityBin]
    curve: cal.SelectiveCurve
    note: str = ""
    """How the rows were chosen (e.g. the post-hoc temperature), shown beside the name."""
    resampled: str = CONTEXTS
    """What the intervals' bootstrap drew whole: ``contexts`` or ``families``."""


def _classwise_statistic(items: Sequence[EvalItem], probs: Sequence[Sequence[float]]):
    """Classwise ECE needs fixed classes: group rows by (question, option set), put each row's
    probabilities in sorted-option order, and weight each group's classwise ECE by its rows."""
    keys, canon, labels = [], [], []
    for item, p in zip(items, probs):
        opts = item.question.options
        order = sorted(range(len(opts)), key=lambda k: opts[k])
        keys.append((item.question.text, tuple(opts[k] for k in order)))
        canon.append([p[k] for k in order])
        labels.append(order.index(item.label))
    _, gid = np.unique(np.array([repr(k) for k in keys]), return_inverse=True)

    def statistic(idx: np.ndarray) -> float:
        total = 0.0
        for g in np.unique(gid[idx]):
            sel = idx[gid[idx] == g]
            total += sel.size * cal.classwise_ece([canon[i] for i in sel], [labels[i] for i in sel])
        return total / idx.size

    return statistic


def _interval(statistic, n: int, clusters, seed: int, resamples: int = RESAMPLES) -> Interval:
    if n == 0 or math.isnan(statistic(np.arange(n))):
        return NAN  # e.g. no row offers NOTA: the rate is undefined, not zero
    return bootstrap_statistic(statistic, n, clusters, resamples=resamples, seed=seed)


def headline_metrics(probs: Sequence[Sequence[float]], labels: Sequence[int], clusters: Sequence[str],
                     nota: Sequence[int | None], *, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Interval]:
    """Accuracy, ECE, Brier, mean confidence, AURC and the NOTA rates, each with its clustered interval.

    The one assembly of a model's headline numbers: the tab's reports and the evaluation JSON both
    come from here, so the two can never disagree on what a metric means.
    """
    base = cal.calibration_report(probs, labels, clusters, resamples=resamples, seed=seed)
    metrics = {k: getattr(base, k) for k in cal.METRICS}
    metrics.update({k: _interval(f, len(probs), clusters, seed, resamples)
                    for k, f in _selective_statistics(probs, labels, nota).items()})
    return metrics


def _selective_statistics(probs: Sequence[Sequence[float]], labels: Sequence[int], nota: Sequence[int | None]):
    """AURC and the NOTA rates as functions of a row-index draw (the metrics ``cal.METRICS`` does not hold)."""
    preds, y = np.array([int(np.argmax(p)) for p in probs]), np.array(labels)

    def nota_rate(which: str):
        return lambda idx: getattr(cal.nota_rates(preds[idx].tolist(), y[idx].tolist(), [nota[i] for i in idx]), which)

    return {"aurc": lambda idx: cal.selective_curve([probs[i] for i in idx], y[idx].tolist()).aurc,
            "nota_recall": nota_rate("recall"), "nota_false_alarm": nota_rate("false_alarm")}


def paired_metrics(items: Sequence[EvalItem], probs_a: Sequence[Sequence[float]], probs_b: Sequence[Sequence[float]],
                   *, seed: int = 0, resample: str = CONTEXTS) -> dict[str, Interval]:
    """Every METRICS entry of model A minus model B on the same rows, each bootstrap draw shared by both (paired):
    two models' intervals can overlap while their difference on the same rows excludes 0."""
    labels, clusters, nota = [it.label for it in items], clusters_of(items, resample), [it.nota for it in items]
    out = {k: cal.paired_metric_difference(k, probs_a, probs_b, labels, clusters, resamples=RESAMPLES, seed=seed)
           for k in cal.METRICS}
    sel_a, sel_b = _selective_statistics(probs_a, labels, nota), _selective_statistics(probs_b, labels, nota)
    pairs = {k: (sel_a[k], sel_b[k]) for k in sel_a}
    pairs["classwise_ece"] = (_classwise_statistic(items, probs_a), _classwise_statistic(items, probs_b))
    for k, (fa, fb) in pairs.items():  # undefined on either model (no NOTA row): undefined, as each model's own
        out[k] = _interval(lambda idx, fa=fa, fb=fb: fa(idx) - fb(idx), len(items), clusters, seed)
    return {k: out[k] for k, _ in METRICS}


def probe_means(probs: Sequence[Sequence[float]], tags: Sequence[Sequence[str]], clusters: Sequence[str], *,
                resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Interval]:
    """Mean max p of each probe group (label -> value with its clustered interval)."""
    out = {}
    for group in PROBE_GROUPS:
        idx = group.rows(tags)
        out[group.label] = bootstrap_mean([max(probs[i]) for i in idx], [clusters[i] for i in idx],
                                          resamples=resamples, seed=seed)
    return out


OWN_CONTEXT = "context:"
"""How a row that names no family is clustered when families are drawn: as its own context."""


def _resample_unit(resample: str) -> str:
    if resample not in RESAMPLE_UNITS:
        raise ValueError(f"intervals resample whole {' or '.join(RESAMPLE_UNITS)}; got {resample!r}")
    return resample


def clusters_of(items: Sequence[EvalItem], resample: str = CONTEXTS) -> list[str]:
    """What the bootstrap draws whole: each item's context, or the family deciding its answer (an item that
    names no family stays its own context), the unit a claim of transfer to unseen families is about."""
    if _resample_unit(resample) == CONTEXTS:
        return [it.context_id for it in items]
    return [deciding_family(it.tags) or f"{OWN_CONTEXT}{it.context_id}" for it in items]


def model_report(name: str, items: Sequence[EvalItem], probs: Sequence[Sequence[float]], *,
                 seed: int = 0, note: str = "", resample: str = CONTEXTS) -> ModelReport:
    """Every METRICS entry with its interval, plus the reliability bins and the selective curve."""
    labels, clusters = [it.label for it in items], clusters_of(items, resample)
    metrics = headline_metrics(probs, labels, clusters, [it.nota for it in items], seed=seed)
    metrics["classwise_ece"] = _interval(_classwise_statistic(items, probs), len(items), clusters, seed)
    families = resample == FAMILIES and any(not c.startswith(OWN_CONTEXT) for c in clusters)  # drawn, not asked
    return ModelReport(name, len(items), {k: metrics[k] for k, _ in METRICS},
                       cal.reliability_bins(probs, labels), cal.selective_curve(probs, labels), note,
                       FAMILIES if families else CONTEXTS)


OUTSIDE = "†"
"""Marks an estimate outside its own percentile interval (``OUTSIDE_NOTE`` says why)."""
OUTSIDE_NOTE = (f"{OUTSIDE} the estimate lies outside its percentile interval: sampling noise inflates each bin's "
                "|accuracy - confidence| gap and a resample adds its own on top, so a binned ECE runs higher on "
                "resamples than on the set itself; on a small set the whole interval can sit above the estimate.")


def interval_cell(iv: Interval, signed: bool = False) -> str:
    """``value [lo, hi]`` ("—" when undefined; ``signed``: ``+d [lo, hi]``, a paired difference), marked when the
    value lies outside its interval; one context has a value and no interval (``core.stats.MIN_UNITS``)."""
    if math.isnan(iv.mean):
        return "—"
    form = "+.3f" if signed else ".3f"
    if math.isnan(iv.lo):
        return f"{iv.mean:{form}} (one context: no interval)"
    outside = f" {OUTSIDE}" if not iv.lo <= iv.mean <= iv.hi else ""
    return f"{iv.mean:{form}} [{iv.lo:{form}}, {iv.hi:{form}}]{outside}"


def outside_note(rows: Sequence[Sequence[str]]) -> str:
    """``OUTSIDE_NOTE`` when a table cell is marked ``OUTSIDE``, else "": the reader is told why, once."""
    return OUTSIDE_NOTE if any(OUTSIDE in str(cell) for row in rows for cell in row) else ""


def metrics_rows(reports: Sequence[ModelReport], paired: dict[str, Interval] | None = None) -> list[list[str]]:
    """Table rows: metric, then ``value [lo, hi]`` per report ("—" when undefined), then the paired difference's
    ``+d [lo, hi]`` when given."""
    rows = [[label] + [interval_cell(r.metrics[key]) for r in reports] +
            ([interval_cell(paired[key], signed=True)] if paired else []) for key, label in METRICS]
    units = sorted({r.resampled for r in reports}) or [CONTEXTS]
    return rows + [[f"rows ({' / '.join(units)} resampled)"] + [str(r.n) for r in reports] +
                   ([str(reports[0].n)] if paired else [])]


def resampling_note(items: Sequence[EvalItem], resample: str = CONTEXTS) -> str:
    """What the intervals resample and, on rows whose answers a few held-out families decide, whom they speak for."""
    counts = family_counts(it.tags for it in items)
    named = f"{counts['issue']} issue and {counts['urgency']} urgency families"
    if resample == FAMILIES:
        if not counts["issue"] and not counts["urgency"]:
            return "95% intervals resample whole contexts: these rows name no family"
        return f"95% intervals resample whole families: the {named} deciding these answers (few: wide intervals)"
    note = "95% intervals resample whole contexts"
    if counts["issue"] or counts["urgency"]:
        note += (f"; these answers are decided by {named}, so the intervals say how sure the figures are about these "
                 "families, not about families never seen (resample families for that)")
    return note


# ---- temperature scaling: a post-hoc reference, never the model's own numbers


def split_contexts(items: Sequence[EvalItem], fit_fraction: float = 0.5, seed: int = 0) -> tuple[list[int], list[int]]:
    """(fit rows, report rows): whole contexts, assigned by a hash of (seed, context id)."""
    if not 0.0 < fit_fraction < 1.0:
        raise ValueError(f"fit_fraction must be in (0, 1), got {fit_fraction}")
    def u(cid: str) -> float:
        return int(hashlib.sha256(f"{seed}/{cid}".encode()).hexdigest()[:12], 16) / 16**12
    fit = [i for i, it in enumerate(items) if u(it.context_id) < fit_fraction]
    rest = [i for i, it in enumerate(items) if u(it.context_id) >= fit_fraction]
    return fit, rest


def scale(probs: Sequence[Sequence[float]], temperature: float) -> list[list[float]]:
    """softmax(log p / T) per row: T > 1 softens, T < 1 sharpens; zeros stay zero."""
    out = []
    for p in probs:
        p = np.asarray(p, dtype=np.float64)
        logp = np.log(np.clip(p, 1e-300, None)) / temperature
        q = np.where(p > 0, np.exp(logp - logp.max()), 0.0)
        out.append((q / q.sum()).tolist())
    return out


def fit_temperature(probs: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    """The T in [0.05, 20] minimising mean negative log-likelihood of the labels (bounded 1-D search)."""
    from scipy.optimize import minimize_scalar

    if not len(probs):
        raise ValueError("no rows to fit a temperature on")

    def nll(log_t: float) -> float:
        scaled = scale(probs, math.exp(log_t))
        return -float(np.mean([math.log(max(q[y], 1e-300)) for q, y in zip(scaled, labels)]))

    return float(math.exp(minimize_scalar(nll, bounds=(math.log(0.05), math.log(20.0)), method="bounded").x))


@dataclass(frozen=True)
class TemperatureReference:
    """Raw and temperature-scaled reports on the same held-out rows."""

    temperature: float
    fit_rows: int
    raw: ModelReport
    scaled: ModelReport


def temperature_reference(name: str, items: Sequence[EvalItem], probs: Sequence[Sequence[float]], *,
                          fit_fraction: float = 0.5, seed: int = 0, resample: str = CONTEXTS) -> TemperatureReference:
    """Fit T on ``fit_fraction`` of the contexts; report raw vs scaled on the rest only."""
    fit, rest = split_contexts(items, fit_fraction, seed)
    if not fit or not rest:
        raise ValueError(f"{len(items)} rows are too few to hold out contexts for a temperature fit")
    t = fit_temperature([probs[i] for i in fit], [items[i].label for i in fit])
    held, held_probs = [items[i] for i in rest], [probs[i] for i in rest]
    note = f"post-hoc: T = {t:.2f} fitted on {len(fit)} other rows"
    raw = model_report(f"{name} (raw, held-out part)", held, held_probs, seed=seed, resample=resample)
    scaled = model_report(f"{name} × T={t:.2f} (post-hoc)", held, scale(held_probs, t), seed=seed, note=note,
                          resample=resample)
    return TemperatureReference(t, len(fit), raw, scaled)


# ---- the known-posterior probe


@dataclass(frozen=True)
class ProbeSummary:
    """Mean top probability per probe group, with intervals, and the ideal value of each."""

    name: str
    groups: dict[str, Interval] = field(default_factory=dict)
    ideal: dict[str, float] = field(default_factory=dict)


def probe_summary(name: str, items: Sequence[EvalItem], probs: Sequence[Sequence[float]], seed: int = 0) -> ProbeSummary:
    """Mean max p on one-cue (ideal 1.0) and two-cue (0.5) department rows and escalation rows (0.90)."""
    groups = probe_means(probs, [it.tags for it in items], [it.context_id for it in items], seed=seed)
    return ProbeSummary(name, groups, {g.label: g.ideal for g in PROBE_GROUPS})


def probe_rows(summaries: Sequence[ProbeSummary]) -> tuple[list[str], list[list]]:
    """(columns, rows) of the probe table: group, ideal, ``mean [lo, hi]`` per model, published values."""
    groups = list(summaries[0].groups) if summaries else [g.label for g in PROBE_GROUPS]
    ideal = {g.label: g.ideal for g in PROBE_GROUPS}
    cols = ["group", "ideal", *[s.name for s in summaries], *[f"published {a}" for a in PUBLISHED_PROBE]]
    rows = [[g, ideal[g], *[interval_cell(s.groups[g]) for s in summaries], *[PUBLISHED_PROBE[a].get(g, "") for a in PUBLISHED_PROBE]]
            for g in groups]
    return cols, rows


# ---- one press of Evaluate / Run probe


@dataclass(frozen=True)
class CalibrationView:
    """Reports of one or two models on one evaluation set, and the optional post-hoc references."""

    reports: list[ModelReport]
    references: list[TemperatureReference]
    seconds: float
    """Wall time of scoring and summarising."""
    paired: dict[str, Interval] = field(default_factory=dict)
    """With two models: the first minus the second on the same rows, for every METRICS entry (``paired_metrics``)."""


def evaluate(deciders: dict, items: Sequence[EvalItem], *, temperature: bool = False, seed: int = 0,
             resample: str = CONTEXTS, seconds: float | None = None) -> CalibrationView:
    """Score ``items`` under each decider (name -> Decider) and summarise each model, within ``seconds`` of
    wall time in all when given (else ``EvaluationTooLong``)."""
    _resample_unit(resample)  # before any model runs
    start = time.perf_counter()
    deadline = None if seconds is None else start + seconds
    reports, refs, answers = [], [], []
    for name, decider in deciders.items():
        answers.append(_probabilities_of(name, decider, items, deadline, seconds))
        reports.append(model_report(name, items, answers[-1], seed=seed, resample=resample))
        if temperature:
            refs.append(temperature_reference(name, items, answers[-1], seed=seed, resample=resample))
    paired = paired_metrics(items, *answers, seed=seed, resample=resample) if len(answers) == 2 else {}
    return CalibrationView(reports, refs, time.perf_counter() - start, paired)


def probe_view(deciders: dict, items: Sequence[EvalItem], seed: int = 0,
               seconds: float | None = None) -> list[ProbeSummary]:
    """The probe summary of each decider (name -> Decider), within ``seconds`` in all as ``evaluate``."""
    deadline = None if seconds is None else time.perf_counter() + seconds
    return [probe_summary(name, items, _probabilities_of(name, d, items, deadline, seconds), seed)
            for name, d in deciders.items()]


def _probabilities_of(name: str, decider, items, deadline: float | None, seconds: float | None):
    try:
        return probabilities(decider, items, deadline)
    except EvaluationTooLong as err:
        raise EvaluationTooLong(f"{name}: {err} (budget {seconds:.0f} s)") from None
