"""The path cost model: exact work counts, the choice it makes, and the least-squares refit."""

import pytest

from core.decision.cost import CostModel, Shape, _chunk_totals, _dims, fit
from core.decision.decider import Limits, _token_chunks
from core.decision.random_model import body_config

CFG = body_config(1000, hidden=256, layers=6, heads=4, kv_heads=2, head_dim=64, intermediate=768)
LIM = Limits(question_chunk=4, packed_chunk_tokens=100)


def test_work_counts_per_path():
    layers, per_tok, _, _ = _dims(CFG)
    shape = Shape(800, [40] * 10, CFG)
    m = CostModel()
    calls, lin, *_ = m.terms(shape, "reference", LIM)
    assert calls == 6 * 10 and lin == pytest.approx(layers * per_tok * 10 * 840)
    calls, lin, *_ = m.terms(shape, "shared", LIM)
    assert calls == 6 * (1 + 3) and lin == pytest.approx(layers * per_tok * (800 + 400))  # chunks of 4, 4, 2
    calls, lin, *_ = m.terms(shape, "packed", LIM)
    assert calls == 6 * 5 and lin == pytest.approx(layers * per_tok * (800 + 400))  # 100-token chunks: 2 x 40 each


def test_chunk_totals_match_the_deciders_grouping():
    lengths = [40, 70, 30, 200, 10, 10, 95]
    assert _chunk_totals(lengths, 100) == [sum(map(len, c)) for c in _token_chunks([[0] * n for n in lengths], 100)]


@pytest.mark.parametrize("prefix, questions, expected", [
    (800, 1, {"reference"}),  # one question: same work, one call fewer
    (800, 64, {"shared", "packed"}),  # the headline shape: sharing pays
    (200, 2, {"shared", "packed"}),  # even two questions on a short state share
])
def test_choice(prefix, questions, expected):
    assert CostModel().choose(Shape(prefix, [40] * questions, CFG), Limits()) in expected


def test_fit_recovers_known_coefficients():
    truth = CostModel(call_s=1e-3, lin_s=3e-11, causal_s=2e-11, masked_s=5e-11, copy_s=1e-9)
    rows = []
    for p, q in [(200, 2), (800, 8), (1500, 4), (800, 64), (400, 16), (100, 1), (1200, 32)]:
        shape = Shape(p, [30 + 5 * (i % 7) for i in range(q)], CFG)
        for path in ("reference", "shared", "packed"):
            rows.append((*truth.terms(shape, path, LIM), truth.predict(shape, path, LIM)))
    got = fit(rows)
    for name in ("call_s", "lin_s", "causal_s", "masked_s", "copy_s"):
        assert getattr(got, name) == pytest.approx(getattr(truth, name), rel=1e-4)
