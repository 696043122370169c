"""Build the synthetic decision dataset on disk: context-grouped partitions plus the probe.

Writes ``format/warmup/rl/val/test/probe.jsonl`` (one DecisionRow per line) and ``manifest.json``
with the seed, the requested sizes, and each file's row/context counts and sha256. Deterministic:
the same seed and sizes give byte-identical files.

    python -m train.decision_data --out runs/data/decision --seed 0
"""

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from core.clarify.cued import KINDS
from core.decision.data import PARTITIONS, DataSpec, build_partition, probe_rows
from core.decision.data.store import Manifest, write_manifest, write_rows


@dataclass(frozen=True)
class DataConfig:
    """What to build and where."""

    out: Path = field(default=Path("runs/data/decision"), metadata={"help": "output directory"})
    seed: int = field(default=0, metadata={"help": "generator seed"})
    contexts: dict = field(default_factory=lambda: dict(DataSpec().contexts),
                           metadata={"help": "contexts per partition (three rows each)"})
    cued: dict = field(default_factory=lambda: dict(DataSpec().cued),
                       metadata={"help": "cued clarify-request contexts per training partition"})
    cued_kinds: tuple = field(default=KINDS, metadata={"help": "cue kinds the cued contexts keep"})
    probe_per_kind: int = field(default=500, metadata={"help": "probe tickets with one cue, and with two"})

    def __post_init__(self):
        if self.probe_per_kind < 1:
            raise ValueError(f"probe_per_kind must be >= 1, got {self.probe_per_kind}")


def main(config: DataConfig) -> Manifest:
    """Build every partition and the probe, write them and the manifest; return the manifest."""
    spec = DataSpec(contexts=dict(config.contexts), cued=dict(config.cued), cued_kinds=tuple(config.cued_kinds))
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, n in spec.contexts.items():
        files[f"{name}.jsonl"] = write_rows(out / f"{name}.jsonl", build_partition(name, n, config.seed, spec))
    files["probe.jsonl"] = write_rows(out / "probe.jsonl", probe_rows(config.seed, config.probe_per_kind))
    manifest = Manifest(seed=config.seed, contexts=spec.contexts, source_weights=list(spec.source_weights),
                        cued=dict(spec.cued), cued_kinds=list(spec.cued_kinds),
                        probe_per_kind=config.probe_per_kind, files=files)
    write_manifest(out, manifest)
    return manifest


def parse_args(argv=None) -> DataConfig:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DataConfig.out)
    parser.add_argument("--seed", type=int, default=0)
    for name in PARTITIONS:
        parser.add_argument(f"--{name}", type=int, default=DataSpec().contexts[name],
                            help=f"contexts in the {name} partition")
    for name, n in DataSpec().cued.items():
        parser.add_argument(f"--cued-{name}", type=int, default=n, help=f"cued clarify-request contexts in {name}")
    parser.add_argument("--cued-kinds", default=",".join(KINDS),
                        help="comma list of cue kinds the cued contexts keep (e.g. clear: noise-free rows)")
    parser.add_argument("--probe-per-kind", type=int, default=500)
    args = parser.parse_args(argv)
    return DataConfig(out=args.out, seed=args.seed, contexts={n: getattr(args, n) for n in PARTITIONS},
                      cued={n: getattr(args, f"cued_{n}") for n in DataSpec().cued},
                      cued_kinds=tuple(filter(None, args.cued_kinds.split(","))), probe_per_kind=args.probe_per_kind)


if __name__ == "__main__":
    manifest = main(parse_args())
    for name, entry in manifest.files.items():
        print(f"{name:14s} {entry.rows:6d} rows {entry.contexts:6d} contexts  sha256 {entry.sha256[:12]}")
