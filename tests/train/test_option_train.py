"""Option-scorer training: the head trains on a frozen scorer; data -> train -> eval end to end, tiny."""

import json
from pathlib import Path

import pytest
import torch

from core.decision.option.model import OptionModel, load_option_model, state_hash
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


def scorer_hash(model: OptionModel) -> str:
    """The card's ``frozen_scorer`` record of a model's scorer, as train.option_train writes it (its 16 characters
    are the body's hash; the option head's lies past them, so the record pins the body only)."""
    return (state_hash(model.body) + state_hash(model.option_head))[:16]


def test_data_to_model_to_eval(data, tmp_path):
    config = TrainConfig(data=str(data), out=str(tmp_path / "run"), init="", hidden=32, layers=1, steps=3, batch=4,
                         head_epochs=2, eval_every=2, checkpoint_every=2)
    root = train(config)
    model, _, card = load_option_model(root)
    assert card.settings.confidence_mode == "head" and set(card.settings.temperature) == {"choice", "score", "noul"}
    # the scorer's hash taken before the head trained is the saved scorer's: the head phase left it where it was
    assert card.training["frozen_scorer"]["scorer_sha256_before"] == scorer_hash(model)
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert {r["phase"] for r in log} >= {"scorer", "temperature", "head", "done"}
    res = evaluate(EvalConfig(model=str(root), data=str(data), rlcd="checkpoints/decision-rlcd", resamples=20,
                              json=str(tmp_path / "eval.json")))
    keys = {"accuracy", "ece_all", "accuracy_shown", "nll", "ece", "brier", "wrong_at_p90", "coverage_at_p90", "aurc_head", "aurc_max_p",
            "aurc_head_minus_max_p", "abstention_conf_stated", "abstention_conf_unstated"}
    assert keys <= set(res) and {"mean", "lo", "hi"} <= set(res["aurc_head_minus_max_p"])
    assert keys - {"aurc_head", "aurc_head_minus_max_p"} <= set(res["rlcd"]) and "aurc_head" not in res["rlcd"]
    assert json.loads((tmp_path / "eval.json").read_text())["contexts"] == 10


SHIPPED = "checkpoints/option-scorer"


def test_shipped_option_scorer_is_small_verified_and_abstains():
    from core.decision.option.scorer import OptionScorer

    scorer = OptionScorer.load(SHIPPED)  # sha256 of both weight files checked here
    size = sum(p.stat().st_size for p in Path(SHIPPED).iterdir()) / 1e6
    assert size < 6 and scorer.settings.confidence_mode == "head"
    card = json.loads((Path(SHIPPED) / "option_model.json").read_text())["training"]
    assert card["frozen_scorer"]["scorer_sha256_before"] == scorer_hash(scorer.model)  # the shipped scorer is that one
    readme = (Path(SHIPPED) / "README.md").read_text()
    assert "train/option_pipeline.sh" in readme and "Wall time" in readme and "aurc_head_minus_max_p" in readme
    tier = {"tier": {"type": "choice", "instructions": "What plan tier is the customer on?",
                     "criteria": {"x": "FREE", "y": "BUSINESS", "z": "ENTERPRISE"}}}
    stated = "Ticket 1\nCustomer tier: BUSINESS\nMessage: I was charged twice.\nNote: no rush at all."
    said = scorer.score(stated, tier)["answers"]["tier"]
    unsaid = scorer.score(stated.replace("Customer tier: BUSINESS\n", ""), tier)["answers"]["tier"]
    assert said["choice"] == "y" and said["confidence"] > 0.9 and unsaid["confidence"] < 0.5


def test_published_results_file_shows_the_head_beating_max_p():
    res = json.loads(Path("results/option_eval.json").read_text())
    assert res["aurc_head_minus_max_p"]["hi"] < 0
    assert res["abstention_conf_stated"]["lo"] > res["abstention_conf_unstated"]["hi"] + 0.2
    assert "aurc_head" not in res["rlcd"] and res["rlcd"]["accuracy"]["n"] == res["accuracy"]["n"]


def test_a_stopped_run_resumes_from_its_checkpoint(data, tmp_path):
    tiny = dict(data=str(data), out=str(tmp_path / "run"), init="", hidden=32, layers=1, batch=4, head_epochs=1,
                eval_every=100, checkpoint_every=1)
    train(TrainConfig(steps=2, **tiny))
    (tmp_path / "run" / "model").rename(tmp_path / "first")  # as if it had stopped after step 2
    with pytest.raises(FileExistsError, match="--resume"):
        train(TrainConfig(steps=3, **tiny))
    train(TrainConfig(steps=3, resume=True, **tiny))
    meta = [json.loads(line) for line in (tmp_path / "run" / "meta.jsonl").read_text().splitlines()]
    assert [m["resume"] for m in meta] == [False, True]
    assert torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["step"] == 3


def test_accuracy_and_ece_are_also_read_on_each_others_rows():
    from train.option_eval import Rows, metrics

    rows = Rows()
    # two contexts: a right answer at 0.8, a wrong one at 0.6, and a question whose truth is missing (top p 0.9)
    rows.add([0.8, 0.2], 0, 0.7, "a", [])
    rows.add([0.6, 0.4], 1, 0.5, "a", [])
    rows.add([0.9, 0.1], None, 0.2, "b", [])
    out = metrics(rows, resamples=20, seed=0)
    assert out["accuracy"]["mean"] == pytest.approx(1 / 3) and out["accuracy_shown"]["mean"] == pytest.approx(1 / 2)
    # ECE on shown rows: bins 0.6 and 0.8, |0.6 - 0| + |0.8 - 1| over 2; on every row the missing one adds |0.9 - 0|
    assert out["ece"]["mean"] == pytest.approx((0.6 + 0.2) / 2) and out["ece_all"]["mean"] == pytest.approx((0.6 + 0.2 + 0.9) / 3)


def test_the_pipelines_start_is_the_body_the_shipped_scorer_grew_from(tmp_path):
    """checkpoints/decision-rlcd has since been replaced (a bigger vocabulary: a strict load would fail); the
    pipeline's start stage extracts the commit the scorer's run read, whose body has the shipped scorer's shapes."""
    import subprocess

    from safetensors.torch import load_file

    from core.decision.export.published import load_decider
    from train.option_eval import START

    root = Path(__file__).resolve().parents[2]
    assert f"START={START}\n" in (root / "train" / "option_pipeline.sh").read_text()
    archive = subprocess.run(["git", "archive", START, "checkpoints/decision-rlcd"], cwd=root, capture_output=True)
    if archive.returncode:  # a shallow clone lacks the history; a full clone's CI has it
        pytest.skip(f"commit {START} is not in this clone")
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive.stdout, check=True)
    start = load_decider(tmp_path / "checkpoints" / "decision-rlcd").body.state_dict()
    shipped = load_file(root / "checkpoints" / "option-scorer" / "body.safetensors")
    assert {k: tuple(v.shape) for k, v in start.items()} == {k: tuple(v.shape) for k, v in shipped.items()}
    now = load_decider(root / "checkpoints" / "decision-rlcd").body.state_dict()
    assert now["embed_tokens.weight"].shape != start["embed_tokens.weight"].shape
