"""The out-of-family temperature on a tiny random Llama base: cross-fitted over family folds, folded into the
head so that the scaled folder answers as temperature scaling of the raw one says."""

import json

import pytest
import torch

from core.decision.evaluation.reports import scale
from core.decision.pooled import HEAD_FILE, PooledHead, load_pooled, read_card
from core.decision.questions import Choice
from train import decision_pooled as dp
from train import decision_pooled_temperature as dt


def test_divided_divides_every_logit_and_keeps_the_mask():
    torch.manual_seed(0)
    head = PooledHead(8)
    with torch.no_grad():
        head.m.normal_(); head.w.normal_(); head.state_mean.normal_(); head.option_scale.uniform_(0.5, 2.0)
    states, options = torch.randn(5, 8), torch.randn(5, 4, 8)
    mask = torch.tensor([[True] * 4, [True] * 3 + [False]] * 2 + [[True, True, False, False]])
    before = head(states, options, mask)
    after = dt.divided(head, 2.5)(states, options, mask)
    assert torch.equal(torch.isinf(after), ~mask)
    assert torch.allclose(after[mask], before[mask] / 2.5, atol=1e-6)


@pytest.fixture(scope="module")
def trained(pooled_data, tmp_path_factory):
    base, natural, synthetic = pooled_data
    root = tmp_path_factory.mktemp("temperature")
    config = dp.PooledConfig(out=str(root / "run"), base=str(base), natural=str(natural), synthetic=str(synthetic),
                             synthetic_rows=6, eval_synthetic_rows=6, probe_rows=6, layer=2, warmup_steps=3,
                             rl_steps=2, batch=8, threads=1, resamples=20)
    dp.main(config)
    return config, root


def arms_of(folder) -> str:
    return ",".join(f"{arm}={folder / arm}" for arm in dp.ARMS)


def test_scaled_arms_answer_as_temperature_scaling_of_the_raw_ones(trained, tmp_path):
    config, root = trained
    out = tmp_path / "scaled"
    report = dt.main(dt.TemperatureConfig(arms=arms_of(root / "run"), out=str(out), cache=config.out,
                                          natural=config.natural, synthetic=config.synthetic, folds=2, threads=1,
                                          json=str(tmp_path / "t.json")))
    assert json.loads((tmp_path / "t.json").read_text())["fit_rows"] == report["fit_rows"] > 0
    pools = dp.datasets(config)
    assert report["fit_rows"] == len(pools["warmup"]) + len(pools["rl"])  # every pooled row held out once
    rows = pools["natural"][:3]
    questions = [Choice(r.question, tuple(r.options)) for r in rows]
    for arm in dp.ARMS:
        t = report["arms"][arm]["temperature"]
        assert 0.05 <= t <= 20 and report["arms"][arm]["val_raw"]["all"]["accuracy"] == pytest.approx(
            report["arms"][arm]["val_scaled"]["all"]["accuracy"])
        card = read_card(out / arm)
        assert card.training["temperature_fit"]["temperature"] == t
        assert card.training["temperature_fit"]["unscaled_sha256"] == read_card(root / "run" / arm).sha256[HEAD_FILE]
        raw = load_pooled(root / "run" / arm).decide(rows[0].state, questions)
        got = load_pooled(out / arm).decide(rows[0].state, questions)
        for a, b in zip(raw, got):
            want = scale([list(a.probs.values())], t)[0]
            assert list(b.probs.values()) == pytest.approx(want, abs=1e-5)


def test_arms_of_different_runs_are_refused(trained, tmp_path):
    config, root = trained
    cards = {arm: read_card(root / "run" / arm) for arm in dp.ARMS}
    pooled = dt.recipe(cards, dt.TemperatureConfig(cache=str(tmp_path), threads=3))
    assert (pooled.warmup_steps, pooled.rl_steps, pooled.batch, pooled.out, pooled.threads) == (3, 2, 8, str(tmp_path), 3)
    other = {**cards["rlvr"].training, "command": cards["rlvr"].training["command"].replace("--l2 0.3", "--l2 1.0")}
    with pytest.raises(ValueError, match="one run"):
        dt.recipe({**cards, "rlvr": cards["rlvr"].model_copy(update={"training": other})}, dt.TemperatureConfig())
