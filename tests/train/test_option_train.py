"""Option-scorer training: the head trains on a frozen scorer; data -> train -> eval end to end, tiny."""

import json

import pytest
import torch

from core.decision.option_model import OptionModel, load_option_model, state_hash
from core.decision.random_model import random_body
from train.decision_run import Run
from train.option_data import DataConfig, read_contexts
from train.option_data import main as build_data
from train.option_eval import EvalConfig
from train.option_eval import main as evaluate
from train.option_train import TrainConfig, train_head
from train.option_train import main as train


def test_head_trains_without_moving_the_scorer(tmp_path):
    model = OptionModel(random_body(1024, seed=0, hidden=32, layers=1, heads=4, kv_heads=2, head_dim=8))
    feats, p_right = torch.randn(300, 2 * 32 + 5), torch.rand(300)
    scorer_before, head_before = state_hash(model.body) + state_hash(model.option_head), state_hash(model.confidence_head)
    config = TrainConfig(out=str(tmp_path), head_epochs=3)
    frozen = train_head(model, feats, p_right, config, Run(tmp_path, config, resume=False))
    assert state_hash(model.body) + state_hash(model.option_head) == scorer_before
    assert state_hash(model.confidence_head) != head_before
    assert frozen["scorer_sha256_before"] == frozen["scorer_sha256_after"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return build_data(DataConfig(out=str(tmp_path_factory.mktemp("d") / "data"), train=24, val=8, test=10))


def test_rewritten_data_hides_nota_and_keeps_the_posterior(data):
    contexts = read_contexts(data / "train.jsonl")
    questions = [q for c in contexts for q in c.questions]
    assert all("None of the above" not in q.values for q in questions)
    assert all(abs(sum(q.posterior) + q.missing - 1) < 1e-9 for q in questions)
    assert all((q.label is None) == (q.missing == 1.0) for q in questions if q.missing in (0.0, 1.0))
    claims = [q for q in questions if "claim" in q.tags]
    assert len(claims) == len(contexts) and {q.tags[1] for q in claims} == {"stated", "unstated"}
    assert json.loads((data / "manifest.json").read_text())["files"]["test.jsonl"]["partition"] == "test"


def test_data_to_model_to_eval(data, tmp_path):
    config = TrainConfig(data=str(data), out=str(tmp_path / "run"), init="", hidden=32, layers=1, steps=3, batch=4,
                         head_epochs=2, eval_every=2, checkpoint_every=2)
    root = train(config)
    model, _, card = load_option_model(root)
    assert card.settings.confidence_mode == "head" and set(card.settings.temperature) == {"choice", "score", "noul"}
    frozen = card.training["frozen_scorer"]
    assert frozen["scorer_sha256_before"] == frozen["scorer_sha256_after"]
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert {r["phase"] for r in log} >= {"scorer", "temperature", "head", "done"}
    res = evaluate(EvalConfig(model=str(root), data=str(data), rlcd="checkpoints/decision-rlcd", resamples=20,
                              json=str(tmp_path / "eval.json")))
    keys = {"accuracy", "nll", "ece", "brier", "wrong_at_p90", "coverage_at_p90", "aurc_head", "aurc_max_p",
            "aurc_head_minus_max_p", "abstention_conf_stated", "abstention_conf_unstated"}
    assert keys <= set(res) and {"mean", "lo", "hi"} <= set(res["aurc_head_minus_max_p"])
    assert keys - {"aurc_head", "aurc_head_minus_max_p"} <= set(res["rlcd"]) and "aurc_head" not in res["rlcd"]
    assert json.loads((tmp_path / "eval.json").read_text())["contexts"] == 10
