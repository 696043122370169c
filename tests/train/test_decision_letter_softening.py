"""train/decision_letter_softening.py on three tiny arms: the rule picks from out-of-half reads, the written arms
carry the fit on every val row and answer softened, the ship step adds them to shipped folders, and the
evaluation reads a softened arm both ways."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from core.decision.export.adapter import SOFTENING_FILE, load_adapter_decider, read_adapter_card
from core.decision.questions import Choice
from tests.fixtures.tiny_adapter_arm import build_tiny_llama
from train import decision_letter_softening as ls
from train.decision_smollm2 import SmolConfig, main as train_stage


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from train.decision_natural_data import NaturalDataConfig, main as build

    root = tmp_path_factory.mktemp("letter_soft")
    base, natural = build_tiny_llama(root / "base"), root / "natural"
    build(NaturalDataConfig(out=natural, tickets={"train": 40, "val": 12, "test": 8}, seed=0))
    common = dict(base=str(base), natural=str(natural), natural_share=1.0, rows=24, val_rows=6, top_layers=2, rank=2,
                  alpha=4, steps=2, batch=8, eval_every=2, threads=1)
    for stage in ("warmup", "rlcd", "rlvr"):
        init = {"init": str(root / "runs" / "warmup" / "model")} if stage != "warmup" else {}
        train_stage(SmolConfig(stage=stage, out=str(root / "runs" / stage), **common, **init))
    arms = ",".join(f"{a}={root}/runs/{a}/model" for a in ls.ARMS)
    return root, base, natural, arms


def reads(rlcd_natural, rlcd_all, trained_all, warmup_all, rlvr_all):
    arm = lambda natural, every: {"natural": {"ece": natural}, "all": {"ece": every}}  # noqa: E731
    fit = {"rlcd": arm(rlcd_natural, rlcd_all), "warmup": arm(0, warmup_all), "rlvr": arm(0, rlvr_all)}
    return {"as trained": {"rlcd": arm(0.3, trained_all)}, "shared": fit, "each": fit}


def test_the_rule_as_written():
    assert ls.rule(reads(0.09, 0.10, 0.20, 0.095, 0.16)) == "shared"
    assert ls.rule(reads(0.09, 0.10, 0.20, 0.08, 0.16)) == "each"  # RLCD more than 0.01 above the warmup
    assert ls.rule(reads(0.09, 0.10, 0.20, 0.10, 0.14)) == "each"  # RLVR less than 0.05 above RLCD
    assert ls.rule(reads(0.11, 0.10, 0.20, 0.10, 0.16)) == ""  # natural ECE above 0.10
    assert ls.rule(reads(0.09, 0.21, 0.20, 0.21, 0.30)) == ""  # worse than as trained


def test_out_of_half_reads_never_fit_the_rows_they_read():
    rows = [type("Row", (), {"state": f"ticket {i}"})() for i in range(40)]
    halves = np.array([ls.half_of(r.state) for r in rows])
    assert 0 < halves.sum() < 40
    logp = {arm: torch.log_softmax(torch.randn(40, 3), -1) for arm in ls.ARMS}
    labels, near = torch.randint(0, 3, (40,)), torch.rand(40)
    got = ls.out_of_half(rows, logp, near, labels, "each")
    h = np.where(halves == 0)[0]
    ab = ls.fit_softening(logp["rlcd"][torch.tensor(np.where(halves == 1)[0])], labels[halves == 1], near[halves == 1])
    assert np.allclose(got["rlcd"][h], ls.softened(logp["rlcd"][h], near[h], ab), atol=1e-9)


def test_the_softened_arms_carry_their_fit_and_ship_and_evaluate(tiny, tmp_path):
    from train import decision_smollm2_eval as ev
    from train import decision_smollm2_ship as ship

    root, base, natural, arms = tiny
    report = ls.main(ls.LetterSofteningConfig(arms=arms, out=str(tmp_path / "soft"), layer=1, base=str(base), fit="each",
                                              natural=str(natural), val_rows=12, threads=1, json=str(tmp_path / "fit.json")))
    assert report["chosen"] == "each" and report["reference_states"] == len({r for r in ls.distinct(
        [r.state for r in ls.pool(ls.warmup_config(read_adapter_card(root / "runs/warmup/model"),
                                                   ls.LetterSofteningConfig(natural=str(natural), val_rows=12)),
                                  "train", 24)])})
    assert set(report["out_of_half"]) == {"as trained", "shared", "each"} and "synthetic" not in report["out_of_half"]["each"]["rlcd"]
    card = read_adapter_card(tmp_path / "soft" / "rlcd")
    a, b = report["fit_all_val"]["rlcd"]
    assert card.softening_layer == 1 and card.training["softening"]["a"] == a and card.training["softening"]["fit"] == "each"
    row = ls.pool(ls.warmup_config(card, ls.LetterSofteningConfig(natural=str(natural), val_rows=12)), "val", 12)[0]
    question = [Choice(row.question, row.options)]
    plain = load_adapter_decider(root / "runs/rlcd/model").decide(row.state, question)[0]
    soft = load_adapter_decider(tmp_path / "soft" / "rlcd").decide(row.state, question)[0]
    assert plain.probs != soft.probs and sum(soft.probs.values()) == pytest.approx(1.0)

    # the ship step adds the softening to a shipped folder; the evaluation reads the arm softened and as trained
    ck = tmp_path / "ck"
    ship.main(ship.ShipConfig(runs=str(root / "runs"), eval="", checkpoints=str(ck), arms="rlcd"))
    ship.main(ship.ShipConfig(refresh=True, soft=str(tmp_path / "soft"), eval="", checkpoints=str(ck), arms="rlcd"))
    shipped = ck / "decision-smollm2-rlcd"
    assert (shipped / SOFTENING_FILE).is_file() and "## Softened" in (shipped / "README.md").read_text()
    assert load_adapter_decider(shipped).decide(row.state, question)[0].probs == soft.probs
    with pytest.raises(ValueError, match="is not decision-smollm2-rlcd softened"):
        ship.soften(tmp_path / "soft" / "warmup", shipped)
    synthetic = tmp_path / "synthetic"
    subprocess.run([sys.executable, "-m", "train.decision_data", "--out", str(synthetic), "--format", "2", "--warmup", "2",
                    "--rl", "2", "--val", "2", "--test", "4", "--cued-format", "0", "--cued-warmup", "0", "--cued-rl", "0",
                    "--probe-per-kind", "3"], check=True, capture_output=True)
    evaluated = ev.main(ev.SmolEvalConfig(arms=f"rlcd={shipped}", base=str(base), natural=str(natural),
                                          synthetic=str(synthetic), synthetic_rows=6, probe_rows=6, tiny="",
                                          cache=str(tmp_path / "cache"), resamples=20, threads=1))
    assert {"rlcd", "rlcd as trained"} <= set(evaluated["natural"])
    as_trained = ev.main(ev.SmolEvalConfig(arms=f"rlcd={root}/runs/rlcd/model", base=str(base), natural=str(natural),
                                           synthetic=str(synthetic), synthetic_rows=6, probe_rows=6, tiny="",
                                           cache=str(tmp_path / "cache"), resamples=20, threads=1))
    for key in ("accuracy", "ece", "brier", "mean_confidence"):
        assert evaluated["natural"]["rlcd as trained"][key] == pytest.approx(as_trained["natural"]["rlcd"][key], abs=1e-9)
    assert evaluated["natural"]["rlcd"]["ece"] != as_trained["natural"]["rlcd"]["ece"]
    assert json.loads(Path(tmp_path / "fit.json").read_text())["chosen"] == "each"


def test_fit_off_keeps_the_answers_as_trained_and_the_familiarity(tiny, tmp_path):
    from train import decision_smollm2_eval as ev
    from train import decision_smollm2_ship as ship

    root, base, natural, arms = tiny
    ls.main(ls.LetterSofteningConfig(arms=arms, out=str(tmp_path / "off"), layer=1, base=str(base), fit="off",
                                     natural=str(natural), val_rows=12, threads=1))
    card = read_adapter_card(tmp_path / "off" / "rlcd")
    fit = card.training["softening"]
    assert (fit["fit"], fit["a"], fit["b"], fit["fitted_on"]) == ("off", 0.0, 0.0, "nothing") and "warn_below" in fit
    row = ls.pool(ls.warmup_config(card, ls.LetterSofteningConfig(natural=str(natural), val_rows=12)), "val", 12)[0]
    question = [Choice(row.question, row.options)]
    plain = load_adapter_decider(root / "runs/rlcd/model").decide(row.state, question)[0]
    decider = load_adapter_decider(tmp_path / "off" / "rlcd")
    off = decider.decide(row.state, question)[0]
    assert off.probs == pytest.approx(plain.probs, abs=1e-6) and decider.state_familiarity(row.state) is not None
    assert ev.softens(tmp_path / "off" / "rlcd") is False
    ck = tmp_path / "ck"
    ship.main(ship.ShipConfig(runs=str(root / "runs"), soft=str(tmp_path / "off"), eval="", checkpoints=str(ck), arms="rlcd"))
    text = (ck / "decision-smollm2-rlcd" / "README.md").read_text()
    assert "## As trained, with a familiarity signal" in text and "## Softened" not in text and "--fit off" in text


def test_an_unknown_fit_is_refused():
    with pytest.raises(ValueError, match="--fit must be rule, shared, each or off; got 'some'"):
        ls.LetterSofteningConfig(fit="some")
