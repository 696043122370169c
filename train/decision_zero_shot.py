"""Zero-shot decision models beside our arms: the same test contexts and probe, the same metrics.

Any model the Decisions tab can pick (an HF chat model through transformers' DecisionPipeline, a
System One URL, one of our exports) is scored on the first ``--contexts`` contexts of our test
split (three questions each) and on the known-posterior probe, with the tab's calibration reports
(``core.decision.evaluation.reports``: context-clustered 95% intervals). Departs from ``train.decision_eval``
only in using a prefix of the test split: a 135M chat model reads ~2 rows/s on one shared core.

    python -m train.decision_zero_shot --contexts 250 --probe 40 --json results/decision_zero_shot.json
"""

import json
import math
import time
from dataclasses import dataclass, field

from core.decision.evaluation import evalsets, reports
from core.decision.evaluation.reports import METRICS
from core.decision.model import open_decider
from core.models.cache import ModelCache, pick
from train.decision_run import parse_config, set_threads, write_report

DEFAULT_MODELS = "SmolLM2-135M-Instruct,decision-rlcd,decision-warmup,decision-rlvr,decision-oracle"


@dataclass(frozen=True)
class ZeroShotConfig:
    """Which models, how much data, where to write."""

    models: str = field(default=DEFAULT_MODELS, metadata={"help": "comma list of picker keys, folders or URLs"})
    contexts: int = field(default=250, metadata={"help": "first N test contexts (three questions each)"})
    probe: int = field(default=40, metadata={"help": "probe tickets per kind (one-cue, two-cue)"})
    json: str = field(default="", metadata={"help": "write the report here (JSON)"})
    seed: int = field(default=0, metadata={"help": "data and bootstrap seed"})

    def __post_init__(self):
        if self.contexts < 2 or self.probe < 2:
            raise ValueError("--contexts and --probe must be at least 2 (intervals resample contexts)")


def _interval(iv) -> list[float | None]:
    """[mean, lo, hi]; None where undefined (e.g. NOTA recall with no NOTA rows), so the JSON is valid."""
    return [None if math.isnan(x) else round(x, 4) for x in (iv.mean, iv.lo, iv.hi)]


def main(config: ZeroShotConfig) -> dict:
    set_threads()
    keys = [k.strip() for k in config.models.split(",") if k.strip()]
    deciders, errors = pick(ModelCache(open_decider=open_decider), None, {k: k for k in keys})
    if errors:
        raise SystemExit("; ".join(f"{k}: {m}" for k, m in errors.items()))
    test, probe = evalsets.split_items(config.contexts, config.seed), evalsets.probe_items(config.probe, config.seed)
    report = {"test_contexts": config.contexts, "test_rows": len(test), "probe_rows": len(probe), "models": {}}
    for key, decider in deciders.items():
        start = time.perf_counter()
        view = reports.evaluate({key: decider}, test, seed=config.seed)
        probe_summary = reports.probe_view({key: decider}, probe, seed=config.seed)[0]
        m = view.reports[0].metrics
        report["models"][key] = {
            "seconds": round(time.perf_counter() - start, 1), "path": getattr(decider, "path_name", "decider"),
            **{name: _interval(m[name]) for name, _ in METRICS if name in m},
            "probe": {g: _interval(iv) for g, iv in probe_summary.groups.items()},
        }
        print(key, json.dumps(report["models"][key]), flush=True)
    write_report(config.json, report)
    return report


if __name__ == "__main__":
    main(parse_config(ZeroShotConfig))
