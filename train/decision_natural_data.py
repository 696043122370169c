"""Build the natural-ticket partition on disk: train, val and test splits disjoint by issue and urgency family.

Writes ``train/val/test.jsonl`` (three DecisionRows per ticket, ``source="natural"``) and
``manifest.json`` through ``core.decision.data.store``, so ``read_partition`` checks the hashes as it
does for the synthetic dataset (the manifest's ``source_weights`` is ``[1.0]``: one source; its
``probe_per_kind`` is 0: the ambiguous rows of every split carry their 0.5/0.5 posterior instead).
Deterministic: the same seed and counts give byte-identical files. ``--profile PATH`` also writes
each split's make-up (shares of ambiguous, typo and no-keyword tickets, lengths, the department
ceiling, the families it uses) and a word-memorising baseline fit on train (``word_baseline``) as JSON.

    python -m train.decision_natural_data --out runs/data/natural --seed 0 --profile results/decision_natural_data.json
"""

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from core.decision.data.natural import PHRASEBOOKS, natural_contexts, phrasebook_families, split_profile
from core.decision.data.rows import DecisionRow
from core.decision.data.store import Manifest, write_manifest, write_rows
from core.decision.data.ticket_families import SPLITS
from core.stats import bootstrap_mean

DEFAULT_TICKETS = {"train": 2000, "val": 200, "test": 400}


@dataclass(frozen=True)
class NaturalDataConfig:
    """What to build and where."""

    out: Path = field(default=Path("runs/data/natural"), metadata={"help": "output directory"})
    seed: int = field(default=0, metadata={"help": "generator seed"})
    tickets: dict = field(default_factory=lambda: dict(DEFAULT_TICKETS),
                          metadata={"help": "tickets per split (three rows each)"})
    profile: Path | None = field(default=None, metadata={"help": "also write each split's make-up here (JSON)"})
    phrasebook: str = field(default="v1", metadata={"help": "v1, v2, extra, fresh or wide"})

    def __post_init__(self):
        phrasebook_families(self.phrasebook)  # refuses an unknown one before anything is drawn
        if set(self.tickets) != set(SPLITS):
            raise ValueError(f"tickets needs a count for each of {SPLITS}, got {sorted(self.tickets)}")
        if any(n < 0 for n in self.tickets.values()):
            raise ValueError(f"ticket counts must be >= 0, got {self.tickets}")
        if self.profile is not None and self.tickets["train"] < 4:
            # the baseline needs every class in train; the first block of four tickets holds them all
            raise ValueError(f"--profile fits a baseline on train: it needs >= 4 train tickets, got {self.tickets['train']}")


def word_baseline(train: list[list[DecisionRow]], evaluations: dict[str, list[list[DecisionRow]]]) -> dict:
    """Accuracy of a word-memorising classifier per question, fit on ``train``, on each evaluation set.

    TF-IDF over word 1-2-grams and a logistic regression per question (department, priority, page),
    95% bootstrap intervals over tickets. It scores near the ceiling on fresh tickets of the training
    families and far lower on held-out families: the gap is what the family-disjoint split buys.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer  # only the profile needs it
    from sklearn.linear_model import LogisticRegression

    out: dict = {name: {} for name in evaluations}
    for q, question in enumerate(("department", "priority", "page")):
        def answers(contexts):
            return [rows[q].options[rows[q].label] for rows in contexts]
        vectorizer = TfidfVectorizer(ngram_range=(1, 2))
        features = vectorizer.fit_transform([rows[q].state for rows in train])
        classifier = LogisticRegression(max_iter=2000, C=10.0).fit(features, answers(train))
        for name, contexts in evaluations.items():
            guessed = classifier.predict(vectorizer.transform([rows[q].state for rows in contexts]))
            hits = [float(g == a) for g, a in zip(guessed, answers(contexts))]
            out[name][question] = bootstrap_mean(hits).as_dict()
    return out


def main(config: NaturalDataConfig) -> Manifest:
    """Draw every split, write it and the manifest; return the manifest."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    files, drawn = {}, {}
    for split in SPLITS:
        drawn[split] = natural_contexts(split, config.tickets[split], config.seed, config.phrasebook)
        files[f"{split}.jsonl"] = write_rows(out / f"{split}.jsonl", [row for rows in drawn[split] for row in rows])
    manifest = Manifest(seed=config.seed, contexts={s: config.tickets[s] for s in SPLITS}, source_weights=[1.0],
                        probe_per_kind=0, files=files, phrasebook=None if config.phrasebook == "v1" else config.phrasebook)
    write_manifest(out, manifest)
    if config.profile is not None:
        write_profile(config, drawn)
    return manifest


def write_profile(config: NaturalDataConfig, drawn: dict[str, list[list[DecisionRow]]]) -> None:
    """Each split's make-up, and the word baseline on val, test and fresh tickets of the training families."""
    # the fresh draw uses the next seed: same families and templates as train, tickets it did not hold
    fresh = natural_contexts("train", config.tickets["test"], config.seed + 1, config.phrasebook)
    baseline = word_baseline(drawn["train"], {"val": drawn["val"], "test": drawn["test"], "train_families_fresh": fresh})
    profile = {"seed": config.seed, "splits": {s: split_profile(drawn[s]) for s in SPLITS},
               "word_baseline": baseline}
    Path(config.profile).parent.mkdir(parents=True, exist_ok=True)
    Path(config.profile).write_text(json.dumps(profile, indent=2) + "\n")


def parse_args(argv=None) -> NaturalDataConfig:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=NaturalDataConfig.out)
    parser.add_argument("--seed", type=int, default=0)
    for split, n in DEFAULT_TICKETS.items():
        parser.add_argument(f"--{split}", type=int, default=n, help=f"tickets in the {split} split")
    parser.add_argument("--profile", type=Path, default=None, help="also write each split's make-up here (JSON)")
    parser.add_argument("--phrasebook", default="v1", choices=sorted(PHRASEBOOKS),
                        help="issue families: v1, v2 (v1 plus 24 more training families), extra (those 24 alone) or "
                             "fresh (those 24 and 12 more urgency families) or wide (fresh and 24 more issue families); "
                             "val and test unchanged")
    args = parser.parse_args(argv)
    return NaturalDataConfig(out=args.out, seed=args.seed, tickets={s: getattr(args, s) for s in SPLITS},
                             profile=args.profile, phrasebook=args.phrasebook)


if __name__ == "__main__":
    manifest = main(parse_args())
    for name, entry in manifest.files.items():
        print(f"{name:11s} {entry.rows:6d} rows {entry.contexts:5d} tickets  sha256 {entry.sha256[:12]}")
