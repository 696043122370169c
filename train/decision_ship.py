"""Copy finished decision runs into ``checkpoints/decision-<arm>`` with a model card each.

Each arm's ``runs/.../<arm>/model`` export is loaded with full verification, copied file by file,
and loaded again from its new home; the card (README.md) is written from the run's own records:
the dataset manifest hashes, the exact commands, seeds, wall and CPU times (from log.jsonl and
meta.jsonl), and the arm's numbers from the evaluation JSON.

    python -m train.decision_ship --runs runs/decision --eval results/decision_eval.json
"""

import json
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.decision.export.published import load_decider
from core.decision.data.store import read_manifest, read_partition
from train.decision_run import LOG, META, MODEL, parse_config, set_threads

COMMANDS = {
    "warmup": "python -m train.decision_warmup --init {runs}/base --out {runs}/warmup --data {data} --seed {seed}",
    "rlcd": "python -m train.decision_rl --reward rlcd --init {runs}/warmup/model --out {runs}/rlcd --data {data} --seed {seed}",
    "rlvr": "python -m train.decision_rl --reward rlvr --init {runs}/warmup/model --out {runs}/rlvr --data {data} --seed {seed}",
    "oracle": "python -m train.decision_supervised --arm oracle --init {runs}/warmup/model --out {runs}/oracle --data {data} --seed {seed}",
}
PREAMBLE = [
    "python -m train.decision_data --out {data} --seed {seed}",
    "python -m train.decision_tokenizer --data {data} --out {runs}/base --seed {seed}",
]
CUED_PREAMBLE = [
    "python -m train.decision_data --out {data} --seed {seed} --format 3000 --cued-format 3000",
    "mkdir -p {runs}/start && git archive 8fbbdcd checkpoints/decision-warmup | tar -x -C {runs}/start"
    "  # the start, as the run read it: this recipe's ship overwrote the folder",
    "python -m train.decision_vocab --init {runs}/start/checkpoints/decision-warmup --out {runs}/base",
    "python -m train.decision_supervised --arm continuation --partition format --init {runs}/base --out {runs}/format "
    "--data {data} --steps {format} --batch 32 --lr 2e-3 --option_aux 1.0 --seed {seed}",
    "python -m train.decision_data --out {data}-clear --seed {seed} --format 0 --cued-format 3000 --cued-kinds clear",
    "python -m train.decision_supervised --arm continuation --partition format --init {runs}/format/model --out {runs}/clear "
    "--data {data}-clear --steps {clear} --batch 32 --lr 1e-3 --option_aux 1.0 --seed {seed}",
    "python -m train.decision_supervised --arm continuation --partition format --init {runs}/clear/model --out {runs}/mixed "
    "--data {data} --steps {mixed} --batch 32 --lr 5e-4 --option_aux 1.0 --soft_sources cued --seed {seed}",
    "python -m train.decision_supervised --arm continuation --partition warmup --init {runs}/mixed/model --out {runs}/warmup "
    "--data {data} --steps {warmup} --seed {seed}",
]
CUED_COMMANDS = {
    "rlcd": "python -m train.decision_rl --reward rlcd --init {runs}/warmup/model --out {runs}/rlcd --data {data} --seed {seed}",
    "rlvr": "python -m train.decision_rl --reward rlvr --init {runs}/warmup/model --out {runs}/rlvr --data {data} --seed {seed}",
    "oracle": "python -m train.decision_supervised --arm oracle --init {runs}/warmup/model --out {runs}/oracle --data {data} "
              "--seed {seed}",
}
"""``--recipe cued`` (train/decision_cued_pipeline.sh): the shipped arms taught the cued clarify requests."""
CUED_STAGES = ("format", "clear", "mixed", "warmup")
TRAINING_LOG = "training_log.jsonl"
"""Each shipped folder's copy of its stages' per-step logs (``training_log``)."""
"""The cued recipe's training stages before the arms (each a run folder with its own step count)."""
ORIGINS = {
    "scratch": "Trained from random initialisation on our synthetic decision data (triage tickets\nwith a known "
               "posterior, order records, access-policy decisions)",
    "cued": "Continued from the earlier shipped decision-warmup (trained from random initialisation on\ntriage tickets, "
            "order records and access-policy decisions) on the same data plus cued clarify requests\n"
            "(`core/decision/data/cued.py`), by train/decision_cued_pipeline.sh: the tokenizer gains whole-word tokens\n"
            "for the clarify fields' values (train/decision_vocab.py), then format, clear-cue, mixed and warmup stages",
}


@dataclass(frozen=True)
class ShipConfig:
    runs: str = field(default="runs/decision", metadata={"help": "folder of finished runs"})
    data: str = field(default="runs/data/decision", metadata={"help": "dataset the runs used"})
    eval: str = field(default="results/decision_eval.json", metadata={"help": "decision_eval JSON of the runs"})
    out: str = field(default="checkpoints", metadata={"help": "where decision-<arm>/ go"})
    arms: str = field(default="warmup,rlcd,rlvr,oracle", metadata={"help": "comma list of arms"})
    seed: int = field(default=0, metadata={"help": "seed used by every command"})
    note: str = field(default="", metadata={"help": "extra sentence for every card (e.g. machine load)"})
    recipe: str = field(default="scratch", metadata={"help": "scratch (train/decision_pipeline.sh) or cued "
                                                             "(train/decision_cued_pipeline.sh)"})

    def __post_init__(self):
        if self.recipe not in ORIGINS:
            raise ValueError(f"recipe must be one of {sorted(ORIGINS)}, got {self.recipe!r}")


def run_times(run_dir: Path) -> dict:
    """Wall seconds of the run (last log record) and how many starts it took."""
    logs = [json.loads(x) for x in (run_dir / LOG).read_text().splitlines() if x.strip()]
    starts = (run_dir / META).read_text().splitlines()
    walls = [r["wall_s"] for r in logs if "wall_s" in r]
    config = json.loads(starts[0])["config"]
    return {"wall_s": round(max(walls), 1) if walls else None, "starts": len(starts), "steps": config.get("steps"),
            "config": config, "stopped": any("stopped" in r for r in logs)}


def speed(directory: Path, state: str, rows: list) -> dict:
    """Seconds to load (verified) and median milliseconds for one 3-question request (1 thread)."""
    from core.decision import Choice, Noul, Score

    t0 = time.perf_counter()
    decider = load_decider(directory)
    load_s = time.perf_counter() - t0
    make = {"choice": lambda r: Choice(r.question, r.options), "score": lambda r: Score(r.question, r.options),
            "noul": lambda r: Noul(r.question)}
    questions = [make[r.kind](r) for r in rows]
    decider.decide(state, questions)
    runs = []
    for _ in range(7):
        t0 = time.perf_counter()
        decider.decide(state, questions)
        runs.append(1000 * (time.perf_counter() - t0))
    return {"load_s": round(load_s, 3), "request_ms": round(statistics.median(runs), 1)}


def training_log(stages: dict[str, Path]) -> str:
    """Every stage's per-step log as one JSONL, each record tagged with its stage: the curves and the card's wall
    times stay beside the weights once the run folder is cleared (the cued arms shipped before this had lost theirs)."""
    records = [{"stage": name, **json.loads(line)} for name, folder in stages.items()
               for line in (folder / LOG).read_text().splitlines() if line.strip()]
    return "".join(json.dumps(record) + "\n" for record in records)


def _commands(arm: str, config: ShipConfig, times: dict) -> str:
    """The exact commands that made ``arm``, from its recipe (a cued run's steps from its own config)."""
    fmt = dict(runs=config.runs, data=config.data, seed=config.seed)
    if config.recipe == "scratch":
        chain = [COMMANDS["warmup"]] + ([COMMANDS[arm]] if arm != "warmup" else [])
        return "\n".join([c.format(**fmt) for c in PREAMBLE + chain])
    steps = {stage: times.get(stage, {}).get("steps") or "?" for stage in CUED_STAGES}
    chain = [c.format(**fmt, **steps) for c in CUED_PREAMBLE]
    return "\n".join(chain + ([CUED_COMMANDS[arm].format(**fmt)] if arm != "warmup" else []))


def card(arm: str, config: ShipConfig, times: dict, results: dict) -> str:
    """The model card text."""
    manifest = read_manifest(Path(config.data))
    commands = _commands(arm, config, times)
    files = "\n".join(f"| {n} | {e.rows} | {e.contexts} | `{e.sha256[:16]}` |" for n, e in manifest.files.items())
    res = "\n".join(f"| {k} | {results[k]:.4f} |" for k in
                    ("accuracy", "ece", "brier", "mean_confidence", "probe_two_cue_max_p",
                     "probe_one_cue_max_p", "probe_escalate_confidence", "nota_recall", "nota_false_alarm", "aurc")
                    if isinstance(results.get(k), (int, float)))
    fast = results.get("speed", {})
    by_source = ", ".join(f"{k} {v['accuracy']:.3f} / {v['ece']:.3f}" for k, v in results.get("by_source", {}).items())
    by_kind = ", ".join(f"{k} {v['accuracy']:.3f} / {v['ece']:.3f} ({v['rows']} rows)"
                        for k, v in results.get("by_kind", {}).items())
    stages = "\n".join(f"- {name}: {t['wall_s']} s wall, {t['starts']} start(s)" +
                       (", stopped by the stop rule" if t["stopped"] else "") for name, t in times.items())
    return f"""# decision-{arm}

A tiny Qwen3-architecture letter-readout decision model (ClarifyLab) in the published
`rlcd-decision-only-v1` layout (`model.safetensors`, `decision_head.safetensors`, `decision.json`,
`config.json`, tokenizer; eve-rlcd's loader reads it), loaded with `core.decision.export.published.load_decider`
(hash-verified, config and tokenizer included).
Arm: **{arm}**. {ORIGINS[config.recipe]}; see the project's
docs/decision_models.md for the recipe and how it departs from the published one.

## Data (`python -m train.decision_data`, seed {manifest.seed})

| file | rows | contexts | sha256 (prefix) |
|---|---|---|---|
{files}

## Exact commands (seed {config.seed})

```bash
{commands}
```

## Wall time (one torch thread, from `train/decision_{"cued_" if config.recipe == "cued" else ""}pipeline.sh`)

{stages}

{config.note}

Size: {results.get("size_mb", "?")} MB on disk. Speed on the same shared CPU: verified load {fast.get("load_s", "?")} s,
one 3-question request (a triage ticket) {fast.get("request_ms", "?")} ms (median of 7, one thread).

## Results on the test split ({results.get('rows', '?')} rows) and the probe

| metric | value |
|---|---|
{res}

Per source (accuracy / ECE): {by_source}.
Per primitive (accuracy / ECE): {by_kind}.
Choice questions need the option-to-letter binding that a from-scratch body does not find from
the answer letter alone; the warmup's format stage teaches it with binding drills and per-option
auxiliary losses (docs/decision_models.md).

Full numbers with clustered 95% bootstrap intervals and paired differences: `{config.eval}`.
Every stage's per-step log, each record tagged with its stage: `{TRAINING_LOG}`.
"""


def main(config: ShipConfig) -> list[Path]:
    set_threads()
    report = json.loads(Path(config.eval).read_text())
    shipped = []
    for arm in filter(None, config.arms.split(",")):
        run_dir = Path(config.runs) / arm
        src = (run_dir / MODEL).resolve()
        load_decider(src)
        dest = Path(config.out) / f"decision-{arm}"
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(src, dest)
        load_decider(dest)
        stages = ({"format": run_dir / "format", "warmup": run_dir / "warmup"}
                  if arm == "warmup" and config.recipe == "scratch" else {arm: run_dir})
        if config.recipe == "cued":
            stages = {**{stage: Path(config.runs) / stage for stage in CUED_STAGES}, **stages}
        times = {name: run_times(folder) for name, folder in stages.items()}
        (dest / TRAINING_LOG).write_text(training_log(stages))
        test = read_partition(Path(config.data), "test")
        size_mb = sum(f.stat().st_size for f in dest.iterdir() if f.is_file()) / 2**20
        results = {**report["arms"][arm], "rows": report["test_rows"], "size_mb": round(size_mb, 2),
                   "speed": speed(dest, test[0].state, test[:3])}
        (dest / "README.md").write_text(card(arm, config, times, results))
        shipped.append(dest)
    return shipped


if __name__ == "__main__":
    for path in main(parse_config(ShipConfig)):
        print(path)
