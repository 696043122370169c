"""bench.option_scorer --quick: every key present, and the one-pass checks it reports hold."""

import json

from bench.option_scorer import main


def test_quick_bench_reports_keys_and_exact_one_pass(tmp_path):
    res = main(["--quick", "--model", "", "--json", str(tmp_path / "b.json")])
    assert json.loads((tmp_path / "b.json").read_text()).keys() >= {
        "speedup_64q", "max_abs_dp", "independence_max_dp", "options_255_ok"}
    assert res["max_abs_dp"] <= 1e-5 and res["independence_max_dp"] <= 1e-6 and res["options_255_ok"] is True
    assert res["64q"]["state_tokens"] >= 800 and res["speedup_64q"] > 0
