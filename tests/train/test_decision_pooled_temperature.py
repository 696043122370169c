"""The softening on a tiny random Llama base: fitted on rows of heads cross-fitted over family folds, kept in the
head with its neighbours, so that the softened folder answers as temperature scaling of the raw one at the
temperature its state's nearness gives."""

import json
import math

import pytest
import torch

from core.decision.evaluation.reports import scale
from core.decision.pooled import HEAD_FILE, load_pooled, read_card
from core.decision.softening import SOFTEN_AT
from core.decision.questions import Choice
from train import decision_pooled as dp
from train import decision_pooled_temperature as dt


def test_fit_softening_recovers_a_temperature_that_grows_with_distance():
    gen = torch.Generator().manual_seed(0)
    n = 20000
    nearness = 0.5 + 0.5 * torch.rand(n, generator=gen)
    logits = 3.0 * torch.randn(n, 4, generator=gen)
    truth = torch.exp(0.5 - 2.0 * (nearness - 0.8))
    labels = torch.multinomial(torch.softmax(logits / truth[:, None], -1), 1, generator=gen).squeeze(-1)
    logits[:5, 3] = float("-inf")  # an undeclared option: never the label, never the softmax's
    labels[:5] = labels[:5].clamp(max=2)
    a, b = dt.fit_softening(logits, labels, nearness)
    assert a == pytest.approx(0.5, abs=0.06) and b == pytest.approx(-2.0, abs=0.3)


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
    folds = dp.family_folds(config.seed, 2)
    held = [[dp.placement(r, folds, f) for f in range(2)].count("held") for r in pools["warmup"] + pools["rl"]]
    assert set(held) == {0, 1} and report["fit_rows"] == sum(held)  # a row held out at most once; the tickets
    # naming families of both folds never are
    rows = pools["natural"][:3]
    questions = [Choice(r.question, tuple(r.options)) for r in rows]
    states = {r.state for rows_ in (pools["warmup"], pools["rl"]) for r in rows_}
    for arm in dp.ARMS:
        fit = report["arms"][arm]
        assert fit["val_raw"]["all"]["accuracy"] == pytest.approx(fit["val_softened"]["all"]["accuracy"])
        card = read_card(out / arm)
        assert (card.training["softening"]["a"], card.training["softening"]["b"]) == (fit["a"], fit["b"])
        assert card.training["softening"]["neighbours"] == len(states)  # the pools' distinct states
        assert card.training["softening"]["unsoftened_sha256"] == read_card(root / "run" / arm).sha256[HEAD_FILE]
        raw, softened = load_pooled(root / "run" / arm), load_pooled(out / arm)
        with torch.no_grad():
            t = float(softened.head.temperature(softened.reader.states([rows[0].state]))[0])
        assert t == pytest.approx(math.exp(fit["a"] + fit["b"] * (float(softened.head.nearness(
            softened.reader.states([rows[0].state]))[0]) - SOFTEN_AT)), rel=1e-5)
        before, after = raw.decide(rows[0].state, questions), softened.decide(rows[0].state, questions)
        assert len(before) == len(after) == len(questions) > 0
        for a, b in zip(before, after):
            assert list(b.probs.values()) == pytest.approx(scale([list(a.probs.values())], t)[0], abs=1e-5)
    with pytest.raises(ValueError, match="softened already"):  # a second pass would soften the softening's record
        dt.main(dt.TemperatureConfig(arms=arms_of(out), out=str(tmp_path / "again"), cache=config.out,
                                     natural=config.natural, synthetic=config.synthetic, threads=1))


def test_arms_of_different_runs_are_refused(trained, tmp_path):
    config, root = trained
    cards = {arm: read_card(root / "run" / arm) for arm in dp.ARMS}
    pooled = dt.recipe(cards, dt.TemperatureConfig(cache=str(tmp_path), threads=3))
    assert (pooled.warmup_steps, pooled.rl_steps, pooled.batch, pooled.out, pooled.threads) == (3, 2, 8, str(tmp_path), 3)
    other = {**cards["rlvr"].training, "command": cards["rlvr"].training["command"].replace("--l2 0.3", "--l2 1.0")}
    with pytest.raises(ValueError, match="one run"):
        dt.recipe({**cards, "rlvr": cards["rlvr"].model_copy(update={"training": other})}, dt.TemperatureConfig())
