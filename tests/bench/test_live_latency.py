"""The live-latency bench's measurement on a tiny chat model (no timing is asserted): the turns it
times hold the earlier turns, reuse takes the previous prompt from the store, and the report keys."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import live_latency as bench  # noqa: E402
from tests.fixtures.tiny_chat import build_tiny_chat  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_tiny_chat(tmp_path_factory.mktemp("bench") / "tiny")
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def test_episode_times_turns_1_3_6_with_and_without_reuse(tiny):
    reuse, plain = (bench.episode(*tiny, flag, tokens=4) for flag in (True, False))
    prompts = [reuse[t]["prompt_tokens"] for t in bench.TURNS]
    assert prompts == sorted(prompts) and prompts[0] < prompts[-1]  # later turns read earlier ones
    assert [plain[t]["prompt_tokens"] for t in bench.TURNS] == prompts
    assert reuse[1]["reused_tokens"] == 0 and all(plain[t]["reused_tokens"] == 0 for t in bench.TURNS)
    assert reuse[3]["reused_tokens"] > prompts[0] and reuse[6]["reused_tokens"] > reuse[3]["reused_tokens"]
    assert reuse["second_episode_turn1"]["reused_tokens"] > 0  # the shared system prefix
    assert plain["second_episode_turn1"]["reused_tokens"] == 0


def test_report_keys_and_unknown_models(capsys, tiny):
    rows = []
    for name in ("0p6b_int8", "smollm2"):
        row = {"model": name, "params_m": 1.0, "load_s": 0.1, "new_tokens": 4, "peak_rss_gb": 0.5,
               "reuse": bench.episode(*tiny, True, tokens=2), "no_reuse": bench.episode(*tiny, False, tokens=2)}
        row["ttft_turn6_speedup"] = row["no_reuse"][6]["ttft_s"] / row["reuse"][6]["ttft_s"]
        row["first_reply_s"] = row["reuse"][1]["turn_s"]
        rows.append(row)
    result = bench.report(rows)
    assert result["headline_model"] == "0p6b_int8"
    assert {"ttft_turn6_speedup", "first_reply_s_0p6b_int8", "peak_rss_gb_smollm2"} <= set(result)
    with pytest.raises(SystemExit, match="unknown model"):
        bench.main(["--models", "0p6b_bf16"])


def test_the_sides_alternate_which_runs_first_and_the_least_time_is_kept():
    assert bench.episode_order(1) == [True, False] and bench.episode_order(2) == [True, False, False, True]
    assert bench.episode_order(3) == [True, False, False, True, True, False]
    runs = [{6: {"ttft_s": 2.0, "turn_s": 5.0, "tokens_per_s": 9.0, "prompt_tokens": 700}},
            {6: {"ttft_s": 1.5, "turn_s": 5.5, "tokens_per_s": 10.0, "prompt_tokens": 700}}]
    assert bench.best_of(runs) == {6: {"ttft_s": 1.5, "turn_s": 5.0, "tokens_per_s": 10.0, "prompt_tokens": 700}}


def test_measure_runs_both_sides_in_the_order_and_keeps_every_repeat(tiny, monkeypatch):
    monkeypatch.setattr(bench, "build", lambda name: (*tiny, 0.0, 1e6))
    row = bench.measure("smollm2", tokens=2, threads=1, repeats=2)
    assert row["order"] == ["reuse", "no_reuse", "no_reuse", "reuse"]
    assert len(row["repeats"]["reuse"]) == len(row["repeats"]["no_reuse"]) == 2
    assert row["reuse"][6]["ttft_s"] == min(r[6]["ttft_s"] for r in row["repeats"]["reuse"])
