"""The pooled-readout arms' training on a tiny random Llama base: warmup, RLCD and RLVR fit on cached
features, export folders that load (hash-checked) and answer as the evaluation read them."""

import collections
import dataclasses
import json

import numpy as np
import pytest
import torch

from core.decision.data.natural import deciding_families
from core.decision.pooled import PooledHead, load_pooled
from core.decision.questions import Choice
from core.decision.training import Judge
from train import decision_pooled as dp


def test_train_evaluate_export_and_load(pooled_data, tmp_path):
    base, natural, synthetic = pooled_data
    config = dp.PooledConfig(out=str(tmp_path / "run"), base=str(base), natural=str(natural), synthetic=str(synthetic),
                             synthetic_rows=6, eval_synthetic_rows=6, probe_rows=6, layer=2, warmup_steps=3,
                             rl_steps=2, batch=8, threads=1, resamples=20, json=str(tmp_path / "eval.json"))
    report = dp.main(config)
    assert set(report["natural"]) == set(dp.ARMS) and report["rows"]["natural"] == 18
    assert {"natural:rlcd-warmup", "natural:rlvr-rlcd", "synthetic:rlvr-warmup"} <= set(report["paired"])
    assert json.loads((tmp_path / "eval.json").read_text())["rows"] == report["rows"]
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [(r["arm"], r["step"]) for r in log if "arm" in r] == [("warmup", 0), ("warmup", 3), ("rlcd", 0), ("rlcd", 2),
                                                                   ("rlvr", 0), ("rlvr", 2)]
    kept = {p.name.split("-")[0]: p for p in (tmp_path / "run").glob("*.pt")}
    assert set(kept) == {"states", "options"}  # read once; a rerun reuses them
    # the exported arm answers as the evaluation's features read it
    rows = dp.datasets(config)["natural"][:3]
    decider = load_pooled(tmp_path / "run" / "rlcd")
    t = dp.tensors(rows, torch.load(kept["states"]), torch.load(kept["options"]), decider.head.m.shape[0])
    want = dp.probs_26(decider.head, t)
    got = decider.decide(rows[0].state, [Choice(r.question, tuple(r.options)) for r in rows])
    for i, a in enumerate(got):
        assert list(a.probs.values()) == pytest.approx(list(want[i, : len(rows[i].options)]), abs=1e-5)
    card = json.loads((tmp_path / "run" / "rlvr" / "pooled.json").read_text())
    assert card["training"]["recipe"].endswith("r = c, from the warmup") and card["layer"] == 2
    # --arms: the saved heads evaluated alone (test sets only) give the training run's numbers
    again = dp.main(dataclasses.replace(config, arms=",".join(f"{a}={tmp_path / 'run' / a}" for a in dp.ARMS), json=""))
    for arm in dp.ARMS:
        assert again["natural"][arm]["accuracy"] == report["natural"][arm]["accuracy"]
        assert again["natural"][arm]["ece"] == pytest.approx(report["natural"][arm]["ece"], abs=1e-6)
    with pytest.raises(ValueError, match="reads layer 2; pass --layer 2"):
        dp.main(dataclasses.replace(config, arms=f"rlcd={tmp_path / 'run' / 'rlcd'}", layer=3))
    # --served: the same head through python -m core.decision.serve answers as it is read here
    from tests.fixtures.served_export import served

    with served(tmp_path / "run" / "rlcd") as url:
        remote = dp.main(dataclasses.replace(config, arms=f"rlcd={tmp_path / 'run' / 'rlcd'}", served=f"rlcd={url}",
                                             json=""))
    assert remote["served_max_abs_difference"]["served-rlcd"]["natural"] < 1e-4
    assert remote["natural"]["served-rlcd"]["accuracy"] == report["natural"]["rlcd"]["accuracy"]
    assert "natural:served-rlcd-rlcd" in remote["paired"]


def _toy(n=400, k=3, hidden=8, seed=0):
    """Features where option j is right when the state's coordinate j is largest (a bilinear rule)."""
    g = torch.Generator().manual_seed(seed)
    states = torch.randn(n, hidden, generator=g)
    opts = torch.eye(hidden)[:k].expand(n, k, hidden).clone()
    labels = states[:, :k].argmax(-1)
    rows = [type("Row", (), {"label": int(y), "options": ["a", "b", "c"], "source": "toy", "kind": "choice"})()
            for y in labels]
    return rows, (states, opts, torch.ones(n, k, dtype=torch.bool), labels)


def test_warmup_learns_a_bilinear_rule_and_rl_keeps_it():
    rows, t = _toy()
    config = dp.PooledConfig(warmup_steps=100, rl_steps=100, batch=64, rl_lr=1e-2, l2=1e-3)
    head = dp.standardised_head(config, t)
    logged = []
    warm = dp.train_arm(config, "warmup", head, rows, t, rows, t, logged.append)
    acc = lambda h: float(np.mean(dp.probs_26(h, t).argmax(1) == t[3].numpy()))  # noqa: E731
    assert logged[0]["accuracy"] < 0.6 and acc(warm) > 0.9
    import copy

    for arm in ("rlcd", "rlvr"):
        assert acc(dp.train_arm(config, arm, copy.deepcopy(warm), rows, t, rows, t, logged.append)) > 0.85
    assert isinstance(head, PooledHead) and Judge(rows)(0, int(t[3][0])) == 1.0


def test_rl_families_hold_out_a_third_of_each_label_drawn_by_seed():
    from core.decision.data.ticket_families import ISSUE_FAMILIES, URGENCY_FAMILIES

    held = dp.rl_families(0)
    label = {**{"family:" + f.name: f.label for f in ISSUE_FAMILIES}, **{"urgency:" + f.name: f.label for f in URGENCY_FAMILIES}}
    assert sorted(collections.Counter(label[t] for t in held).items()) == sorted(
        {"BILLING": 2, "INFRASTRUCTURE": 2, "SECURITY": 2, "PRODUCT_SUPPORT": 2,
         "P3_LOW": 1, "P2_NORMAL": 1, "P1_HIGH": 1, "P0_CRITICAL": 1}.items())
    train = {"family:" + f.name for f in ISSUE_FAMILIES if f.split == "train"} | {
        "urgency:" + f.name for f in URGENCY_FAMILIES if f.split == "train"}
    assert held <= train and dp.rl_families(0) == held and dp.rl_families(1) != held


def test_family_folds_partition_the_train_families_with_every_label_in_every_fold():
    from core.decision.data.ticket_families import ISSUE_FAMILIES, URGENCY_FAMILIES

    folds = dp.family_folds(0)
    label = {**{"family:" + f.name: f.label for f in ISSUE_FAMILIES}, **{"urgency:" + f.name: f.label for f in URGENCY_FAMILIES}}
    train = {"family:" + f.name for f in ISSUE_FAMILIES if f.split == "train"} | {
        "urgency:" + f.name for f in URGENCY_FAMILIES if f.split == "train"}
    assert set().union(*folds) == train and sum(map(len, folds)) == len(train)  # disjoint, every train family
    assert all({label[t] for t in f} == set(label[t] for t in train) for f in folds)
    assert folds[0] == dp.rl_families(0) and dp.family_folds(0) == folds and dp.family_folds(1) != folds


def test_placement_holds_out_whole_tickets_and_synthetic_contexts_by_hash():
    row = lambda source, cid, *tags: type("Row", (), {"source": source, "context_id": cid, "tags": list(tags)})()  # noqa: E731
    folds = [frozenset({"family:a", "urgency:u"}), frozenset({"family:b", "urgency:v"}), frozenset({"family:c"})]
    assert dp.placement(row("natural", "t", "family:a", "urgency:u", "department"), folds, 0) == "held"
    assert dp.placement(row("natural", "t", "family:a", "urgency:u", "priority"), folds, 1) == "train"
    # a ticket naming a held family and another one: neither held (it is not all unseen) nor trained on (its text)
    assert dp.placement(row("natural", "t", "family:a", "urgency:v", "department"), folds, 0) is None
    assert dp.placement(row("natural", "t", "family:a", "urgency:v", "priority"), folds, 1) is None
    assert dp.placement(row("natural", "t", "family:a", "family:c", "urgency:u", "department"), folds, 0) is None
    synthetic = [[dp.placement(row("triage", f"c{i}"), folds, f) for f in range(3)] for i in range(60)]
    assert all(sorted(p) == ["held", "train", "train"] for p in synthetic)  # each context held out exactly once
    assert {p.index("held") for p in synthetic} == {0, 1, 2}


def test_the_families_split_gives_rl_every_row_the_held_families_decide_and_the_warmup_none(pooled_data):
    _, natural, synthetic = pooled_data
    config = dp.PooledConfig(natural=str(natural), synthetic=str(synthetic), synthetic_rows=6, rl_split="families")
    sets, held = dp.datasets(config), dp.rl_families(config.seed)
    nat = lambda rows: [r for r in rows if r.source == "natural"]  # noqa: E731
    warm, rl = nat(sets["warmup"]), nat(sets["rl"])
    assert rl and warm and all(deciding_families(r.tags) & held for r in rl)
    assert not any(deciding_families(r.tags) & held for r in warm)
    everything = dp.datasets(dataclasses.replace(config, rl_split="tickets"))
    assert sorted(map(repr, warm + rl)) == sorted(map(repr, nat(everything["warmup"]) + nat(everything["rl"])))
    assert len(sets["rl"]) - len(rl) == 3  # the synthetic RL rows as before
    with pytest.raises(ValueError, match="--rl_split must be one of"):
        dp.PooledConfig(rl_split="contexts")
