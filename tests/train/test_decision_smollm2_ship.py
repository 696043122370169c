"""The shipped letter arms' cards are what the ship writes: a hand edit to a card, or a change to the generator that the
cards never saw, fails here (the two had drifted apart on the softening fit's log and the familiarity probe)."""

import json
from pathlib import Path

import pytest

from train.decision_smollm2_ship import ARMS, card

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("arm", ARMS)
def test_a_shipped_card_is_what_the_ship_writes(arm):
    report = json.loads((ROOT / "results" / "decision_smollm2_eval.json").read_text())
    folder = ROOT / "checkpoints" / f"decision-smollm2-{arm}"
    assert (folder / "README.md").read_text() == card(arm, folder, report)


def test_the_measured_table_gives_each_ece_its_interval():
    report = json.loads((ROOT / "results" / "decision_smollm2_eval.json").read_text())
    text = (ROOT / "checkpoints" / "decision-smollm2-rlcd" / "README.md").read_text()
    ece = report["natural"]["rlcd"]["intervals"]["ece"]
    assert f"| {report['natural']['rlcd']['ece']:.3f} {ece['lo']:.3f}-{ece['hi']:.3f} |" in text
