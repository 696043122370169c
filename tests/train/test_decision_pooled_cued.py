"""The ask-or-act agent's reader on a tiny random Llama: options read in context, the penalty chosen by val NLL,
a folder that loads (hash-checked) and answers as the fit read it."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from core.decision.data.rows import DecisionRow
from core.decision.pooled import load_pooled, read_card
from core.decision.questions import Choice
from train import decision_pooled_cued as dc
from train.decision_pooled import probs_26


@pytest.fixture(scope="module")
def cued_data(tmp_path_factory):
    from tests.fixtures.tiny_adapter_arm import build_tiny_llama

    root = tmp_path_factory.mktemp("cued")
    subprocess.run([sys.executable, "-m", "train.decision_data", "--out", str(root / "synthetic"), "--format", "2",
                    "--warmup", "2", "--rl", "2", "--val", "2", "--test", "2", "--cued-format", "0", "--cued-warmup", "6",
                    "--cued-rl", "4", "--probe-per-kind", "1"], check=True, capture_output=True)
    return build_tiny_llama(root / "base"), root / "synthetic"


def test_fit_chooses_the_penalty_by_val_nll_and_the_folder_answers_as_fitted(cued_data, tmp_path):
    base, synthetic = cued_data
    config = dc.CuedReaderConfig(out=str(tmp_path / "run"), base=str(base), synthetic=str(synthetic), train_rows=12,
                                 val_rows=8, layer=2, l2_grid="0.001,10", steps=5, threads=1)
    report = dc.main(config)
    nll = {f["l2"]: f["val_nll"] for f in report["fits"]}
    assert report["chosen_l2"] == min(nll, key=nll.get) and set(nll) == {0.001, 10.0}
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [(r["l2"], r["step"]) for r in log] == [(0.001, 0), (0.001, 5), (10.0, 0), (10.0, 5)]
    card = read_card(tmp_path / "run" / "head")
    assert card.options_read == "in_context" and card.training["l2"] == report["chosen_l2"]
    decider = load_pooled(tmp_path / "run" / "head")
    assert not decider.head.m.any()  # M = 0: the in-context option states alone decide
    rows = dc.cued_rows(config)["val"]
    kept = {p.name.rsplit("-", 1)[0]: p for p in (tmp_path / "run").glob("*.pt")}
    assert set(kept) == {"states", "options-in-context"}  # read once; a rerun reuses them
    states, options = torch.load(kept["states"]), torch.load(kept["options-in-context"])
    want = probs_26(decider.head, dc.context_tensors(rows, states, options, decider.head.w.shape[0]))
    same_state = [i for i, r in enumerate(rows) if r.state == rows[0].state]
    got = decider.decide(rows[0].state, [Choice(rows[i].question, tuple(rows[i].options)) for i in same_state])
    for i, answer in zip(same_state, got):
        assert list(answer.probs.values()) == pytest.approx(list(want[i, : len(rows[i].options)]), abs=1e-5)


def _row(context, kind, posterior, label, probs):
    options = [f"v{i}" for i in range(len(posterior))]
    row = DecisionRow(context_id=context, source="cued", state="s", question="q", options=options, kind="choice",
                      label=label, posterior=posterior, tags=[f"cue_{kind}", "f"])
    return row, probs + [0.0] * (26 - len(probs))


def test_by_cue_counts_modes_max_p_and_the_hidden_values_probability():
    rows, probs = zip(*[_row("a", "clear", [0, 1, 0], 1, [0.2, 0.7, 0.1]),
                        _row("b", "clear", [1, 0, 0], 0, [0.3, 0.6, 0.1]),
                        _row("c", "two", [0.5, 0.5, 0], 1, [0.4, 0.35, 0.25])])
    out = dc.by_cue(np.array(probs), list(rows))
    assert out["clear"] == {"rows": 2, "map_is_a_mode": 0.5, "max_p": 0.65, "true_max_p": 1.0, "p_hidden": 0.5}
    assert out["two"] == {"rows": 1, "map_is_a_mode": 1.0, "max_p": 0.4, "true_max_p": 0.5, "p_hidden": 0.35}


def test_rows_of_one_request_in_both_parts_are_refused(monkeypatch):
    row, _ = _row("same", "none", [0.5, 0.5], 0, [0.5, 0.5])
    monkeypatch.setattr(dc, "read_partition", lambda data, part: [row])
    with pytest.raises(ValueError, match="1 requests are in both"):
        dc.cued_rows(dc.CuedReaderConfig())
