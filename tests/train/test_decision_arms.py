"""CPU smoke tests of the decision training arms on tiny data: each trains a few steps in seconds."""

import json

import pytest
import torch

from core.decision.export.published import load_decider
from core.decision.prompt import check_seam, letter_token_ids, split_prompt
from core.decision.batches import Prompt
from core.decision.data.store import read_partition
from core.decision.training import Judge
from train import decision_data, decision_eval, decision_rl, decision_supervised, decision_tokenizer, decision_warmup
from train.decision_run import Run, load_model, load_prompts

TINY = {"format": 40, "warmup": 20, "rl": 20, "val": 10, "test": 10}
FAST = dict(eval_limit=12, eval_every=2, checkpoint_every=2, progress=False)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A tiny dataset and a tiny random model built by the real CLIs' main functions."""
    root = tmp_path_factory.mktemp("decision")
    data = root / "data"
    decision_data.main(decision_data.DataConfig(out=data, seed=0, contexts=TINY, probe_per_kind=5))
    out = decision_tokenizer.main(decision_tokenizer.BaseConfig(
        data=str(data), out=str(root / "base"), corpus_rows=120, vocab_size=400, hidden=16, layers=1,
        heads=2, kv_heads=1, seed=0))
    return root, str(data), str(out)


@pytest.fixture(scope="module")
def warm(base):
    root, data, init = base
    result = decision_warmup.main(decision_warmup.WarmupConfig(
        init=init, out=str(root / "warmup"), data=data, format_steps=3, warmup_steps=2, batch=8, **FAST))
    return result["model"]


def _weights(directory):
    d = load_decider(directory)
    return torch.cat([p.detach().flatten() for p in d.body.parameters()] + [d.rows.flatten()])


def test_tokenizer_has_single_letter_tokens_and_a_clean_seam(base):
    _, data, init = base
    tok = load_decider(init).tokenizer
    assert len(set(letter_token_ids(tok))) == 26
    for row in read_partition(data, "test")[:6]:
        check_seam(tok, *split_prompt(row.state, row.question, row.options))


def test_warmup_trains_and_exports(base, warm):
    _, _, init = base
    assert not torch.equal(_weights(init), _weights(warm))
    log = [json.loads(x) for x in open(f"{warm}/../log.jsonl")]
    assert log[0]["step"] == 0 and {"accuracy", "ece", "mean_confidence"} <= set(log[0])


@pytest.mark.parametrize("reward", ["rlcd", "rlvr"])
def test_rl_arm_trains(base, warm, reward):
    root, data, _ = base
    cfg = decision_rl.RLConfig(reward=reward, init=warm, out=str(root / reward), data=data, steps=3, batch=6,
                               lr=1e-2, **FAST)
    final = decision_rl.main(cfg)
    assert final["outcomes_revealed"] == 3 * 6 * 4  # one outcome per sampled option, nothing more
    assert not torch.equal(_weights(warm), _weights(root / reward / "model"))


@pytest.mark.parametrize("arm", ["oracle", "continuation"])
def test_supervised_arm_trains(base, warm, arm):
    root, data, _ = base
    cfg = decision_supervised.SupervisedConfig(arm=arm, init=warm, out=str(root / arm), data=data, steps=3,
                                               batch=6, **FAST)
    decision_supervised.main(cfg)
    assert not torch.equal(_weights(warm), _weights(root / arm / "model"))
    meta = json.loads((root / arm / "meta.jsonl").read_text().splitlines()[0])
    assert meta["config"]["arm"] == arm and meta["config"]["steps"] == 3  # every argument recorded


def test_format_stage_with_lm_loss_and_drills_trains(base, warm):
    root, data, _ = base
    cfg = decision_supervised.SupervisedConfig(arm="continuation", init=warm, out=str(root / "drill"), data=data,
                                               partition="format", steps=2, batch=4, lm_weight=1.0, drills=2, **FAST)
    decision_supervised.main(cfg)
    assert not torch.equal(_weights(warm), _weights(root / "drill" / "model"))


def _format_run(root, name, warm, data, **over):
    knobs = {**FAST, "binding": 0.5, "binding_easy": 0.5, "option_aux": 1.0, **over}
    cfg = decision_supervised.SupervisedConfig(arm="continuation", init=warm, out=str(root / name), data=data,
                                               partition="format", steps=4, batch=6, **knobs)
    run = Run(cfg.out, cfg, cfg.resume)
    body, rows, tok = load_model(warm)
    decision_supervised.sft_loop(cfg, run, body, rows, tok, 1e-2, "format")
    return torch.cat([p.detach().flatten() for p in body.parameters()] + [rows.detach().flatten()])


def test_format_stage_with_binding_drills_and_option_losses_trains_and_resumes(base, warm, monkeypatch):
    root, data, _ = base
    straight = _format_run(root, "fmt-straight", warm, data)
    assert not torch.equal(_weights(warm), straight)
    calls = {"n": 0}
    real = decision_supervised.sft_loss

    def crash_on_step_3(*args, **kwargs):  # after the step-2 checkpoint
        calls["n"] += 1
        if calls["n"] == 3:
            raise _Interrupt()
        return real(*args, **kwargs)

    monkeypatch.setattr(decision_supervised, "sft_loss", crash_on_step_3)
    with pytest.raises(_Interrupt):
        _format_run(root, "fmt-resumed", warm, data)
    monkeypatch.setattr(decision_supervised, "sft_loss", real)
    resumed = _format_run(root, "fmt-resumed", warm, data, resume=True)
    assert torch.allclose(straight, resumed, atol=1e-6)  # drills and the aux probe resume exactly
    without = _format_run(root, "fmt-plain", warm, data, binding=0.0, option_aux=0.0)
    assert not torch.allclose(straight, without)  # the drills and aux losses change training


def test_run_directory_is_never_overwritten(base, warm):
    root, data, _ = base
    cfg = decision_supervised.SupervisedConfig(init=warm, out=str(root / "once"), data=data, steps=1, batch=4, **FAST)
    decision_supervised.main(cfg)
    with pytest.raises(FileExistsError, match="already"):
        decision_supervised.main(cfg)


def _rl_run(root, name, data, warm, judge_factory, prompts_from=None, **over):
    cfg = decision_rl.RLConfig(init=warm, out=str(root / name), data=data, steps=4, batch=5, lr=1e-2,
                               **{**FAST, **over})
    run = Run(cfg.out, cfg, cfg.resume)
    body, rows, tok = load_model(warm)
    labelled, prompts = load_prompts(data, "rl")
    val = load_prompts(data, "val", 12)
    decision_rl.reinforce(cfg, run, body, rows, tok, prompts_from or prompts, judge_factory(labelled), val)
    return torch.cat([p.detach().flatten() for p in body.parameters()] + [rows.detach().flatten()])


class _Interrupt(Exception):
    pass


class _FailingJudge(Judge):
    """Reveals outcomes for the first ``limit`` calls, then simulates a crash."""

    def __init__(self, rows, limit):
        super().__init__(rows)
        self.limit = limit

    def __call__(self, index, option):
        if self.calls >= self.limit:
            raise _Interrupt()
        return super().__call__(index, option)


def test_rl_resume_gives_the_uninterrupted_result(base, warm):
    root, data, _ = base
    straight = _rl_run(root, "straight", data, warm, Judge)
    with pytest.raises(_Interrupt):  # crash during step 3 (after the step-2 checkpoint)
        _rl_run(root, "resumed", data, warm, lambda rows: _FailingJudge(rows, 2 * 5 * 4 + 3))
    resumed = _rl_run(root, "resumed", data, warm, Judge, resume=True)
    assert torch.allclose(straight, resumed, atol=1e-6)
    starts = (root / "resumed" / "meta.jsonl").read_text().splitlines()
    assert len(starts) == 2  # the log of the first start was appended to, not replaced


def test_bandit_loop_never_sees_labels(base, warm):
    """Labels reach the loop only through the judge: scrambling them elsewhere changes nothing."""
    root, data, _ = base
    assert "label" not in Prompt.__dataclass_fields__
    rows = read_partition(data, "rl")
    honest = Judge(rows)
    a = _rl_run(root, "labels-a", data, warm, lambda _: honest)
    # same judge, but prompts rebuilt from rows whose label fields were all replaced
    scrambled = [r.model_copy(update={"label": (r.label + 1) % len(r.options)}) for r in rows]
    prompts = [Prompt(r.state, r.question, tuple(r.options)) for r in scrambled]
    b = _rl_run(root, "labels-b", data, warm, lambda _: Judge(rows), prompts_from=prompts)
    assert torch.equal(a, b)
    # while a judge built from the scrambled labels does change the result
    c = _rl_run(root, "labels-c", data, warm, lambda _: Judge(scrambled))
    assert not torch.equal(a, c)


def test_eval_reports_every_arm_with_intervals_and_plots(base, warm, tmp_path):
    root, data, _ = base
    rlcd = root / "rlcd" / "model"
    if not rlcd.exists():
        decision_rl.main(decision_rl.RLConfig(init=warm, out=str(root / "rlcd"), data=data, steps=2, batch=4, **FAST))
    cfg = decision_eval.EvalConfig(arms=f"warmup={warm},rlcd={rlcd}", data=data, json=str(tmp_path / "e.json"),
                                   plots=str(tmp_path / "plots"), resamples=50)
    report = decision_eval.main(cfg)
    saved = json.loads((tmp_path / "e.json").read_text())
    for arm in ("warmup", "rlcd"):
        got = saved["arms"][arm]
        for key in ("accuracy", "ece", "brier", "mean_confidence", "probe_two_cue_max_p", "probe_escalate_confidence"):
            assert 0.0 <= got[key] <= 2.0, key
            assert got["intervals"][key]["lo"] <= got[key] <= got["intervals"][key]["hi"]
        kinds = got["by_kind"]
        assert set(kinds) == {"choice", "score", "noul"}
        assert sum(k["rows"] for k in kinds.values()) == report["test_rows"]
        weighted = sum(k["rows"] * k["accuracy"] for k in kinds.values()) / report["test_rows"]
        assert weighted == pytest.approx(got["accuracy"])
    assert set(saved["paired"]) == {"rlcd-warmup"}
    assert saved["paired"]["rlcd-warmup"]["accuracy"]["n"] == report["test_rows"]
    assert (tmp_path / "plots" / "reliability.png").stat().st_size > 1000
    assert (tmp_path / "plots" / "probe.png").stat().st_size > 1000
    assert "| rlcd |" in decision_eval.summary_table(report)


def test_eval_matches_the_decider(base, warm):
    """Batched evaluation reads the same probabilities the app's Decider gives."""
    from core.decision import Choice, Noul, Score

    _, data, _ = base
    rows = read_partition(data, "test")[:3]
    batched = decision_eval.probabilities(warm, rows)
    decider = load_decider(warm)
    make = {"choice": lambda r: Choice(r.question, r.options), "score": lambda r: Score(r.question, r.options),
            "noul": lambda r: Noul(r.question)}
    answers = decider.decide(rows[0].state, [make[r.kind](r) for r in rows])
    for i, (row, ans) in enumerate(zip(rows, answers)):
        probs = list(ans.probs.values())
        assert len(probs) == len(row.options)
        assert max(abs(a - b) for a, b in zip(probs, batched[i][: len(row.options)])) < 1e-5
