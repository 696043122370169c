"""The pooled readout's confidence head: questions without their answer, the head's features, its fit, the report."""

import json
import types

import numpy as np
import pytest
import torch

from core.decision.data.rows import NOTA
from core.decision.pooled import PooledHead
from tests.fixtures.tiny_adapter_arm import save_tiny_pooled
from train import decision_pooled_confidence as C


def _rows_and_tensors():
    options = [["a", "b", "c", "d"], ["x", "y"], ["p", "q", NOTA], ["r", "s", "t"]]
    rows = [types.SimpleNamespace(options=o, context_id=f"c{i}") for i, o in enumerate(options)]
    feats = torch.arange(4 * 4 * 2, dtype=torch.float32).reshape(4, 4, 2)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]], dtype=torch.bool)
    return rows, (torch.ones(4, 2), feats * mask[..., None], mask, torch.tensor([2, 0, 1, 0]))


def test_without_answer_drops_exactly_the_answer_of_eligible_questions():
    rows, t = _rows_and_tensors()
    kept, (states, options, mask, labels) = C.without_answer(rows, t)
    assert [r.context_id for r in kept] == ["c0", "c3"]  # two options: none left to choose; NOTA: its own answer
    assert mask.tolist() == [[True, True, True, False], [True, True, False, False]]
    assert torch.equal(options[0, :3], t[1][0, [0, 1, 3]]) and torch.equal(options[1, :2], t[1][3, [1, 2]])
    assert options[0, 3].abs().sum() == 0 and labels.tolist() == [-1, -1]
    assert torch.equal(t[1][0, 2], torch.tensor([4.0, 5.0]))  # the input is left as it was


def _random_head(hidden: int = 2) -> PooledHead:
    torch.manual_seed(0)
    head = PooledHead(hidden)
    with torch.no_grad():
        head.m.normal_(), head.w.normal_()
    return head


def test_confidence_stats_read_the_heads_logits():
    head, t = _random_head(), _rows_and_tensors()[1]
    x = C.confidence_stats(head, t)
    assert x.shape == (4, len(C.FEATURES))
    with torch.no_grad():
        p = torch.softmax(head(*t[:3]), -1)
    assert x[:, C.FEATURES.index("max_p")].tolist() == pytest.approx(p.max(-1).values.tolist(), abs=1e-6)
    assert C.correct_of(head, t).tolist() == (p.argmax(-1) == t[3]).double().tolist()


def test_confidence_stats_of_a_softened_head_read_its_nearness_and_soften_the_uncentred_scores():
    head, t = _random_head(), _rows_and_tensors()[1]
    plain = C.confidence_stats(head, t)
    assert plain[:, C.FEATURES.index("nearness")].tolist() == [1.0] * 4
    head.neighbours = head.unit_states(torch.randn(6, 2))
    head.softening.copy_(torch.tensor([0.7, 0.0]))  # T = e^0.7 for every state
    soft = C.confidence_stats(head, t)
    assert soft[:, C.FEATURES.index("nearness")].tolist() == pytest.approx(head.nearness(t[0]).tolist(), abs=1e-6)
    for name in ("top_uncentred", "mean_uncentred", "max_logit"):
        i = C.FEATURES.index(name)
        assert soft[:, i].tolist() == pytest.approx((plain[:, i] / np.exp(0.7)).tolist(), abs=1e-5)


def test_the_logistic_fit_ranks_by_the_informative_feature():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 3, generator=g)
    y = (x[:, 1] + 0.3 * torch.randn(400, generator=g) > 0).float()
    fit = C.Logistic(x, y, 1e-3)
    assert abs(fit.w[1].item()) > 5 * max(abs(fit.w[0].item()), abs(fit.w[2].item()))
    p = fit(x)
    assert np.mean((p > 0.5) == y.numpy().astype(bool)) > 0.85 and p[y.numpy() == 1].mean() > 0.8 > 0.2 > p[y.numpy() == 0].mean()


def test_the_report_pairs_head_and_max_p_on_the_same_rows():
    conf = np.array([0.9, 0.8, 0.2, 0.1])
    correct = np.array([1.0, 1.0, 0.0, 0.0])
    out = C.report(conf, conf[::-1].copy(), correct, ["a", "b", "c", "d"], C.ConfidenceConfig(resamples=50))
    assert out["aurc_head"]["mean"] < out["aurc_max_p"]["mean"]
    assert out["aurc_head_minus_max_p"]["mean"] == pytest.approx(out["aurc_head"]["mean"] - out["aurc_max_p"]["mean"])
    assert out["rows"] == 4 and out["accuracy"] == 0.5


def test_main_fits_on_val_and_reports_present_missing_and_both(pooled_data, tmp_path):
    base, natural, synthetic = pooled_data
    torch.manual_seed(0)
    head = PooledHead(32)
    with torch.no_grad():
        head.m.normal_(), head.w.normal_()
    arm = save_tiny_pooled(tmp_path / "arm", base, head)
    config = C.ConfidenceConfig(arm=str(arm), out=str(tmp_path / "cache"), natural=str(natural), synthetic=str(synthetic),
                                threads=1, resamples=20, json=str(tmp_path / "out.json"))
    out = C.main(config)
    assert set(out["natural"]) == {"present", "missing", "both"} and set(out["weights"]) == set(C.FEATURES)
    nat = out["natural"]
    assert nat["missing"]["accuracy"] == 0.0 and nat["missing"]["aurc_max_p"]["mean"] == 1.0
    assert nat["both"]["rows"] == nat["present"]["rows"] + nat["missing"]["rows"]
    assert json.loads((tmp_path / "out.json").read_text())["fit_rows"] == out["fit_rows"]
    assert "| natural present |" in C.table(out)
