"""The Decisions latency bench times variants side by side: interleaved rounds, each after its warm-up."""

from bench.decisions_latency import interleaved, timed


def test_variants_are_interleaved_in_alternating_order_after_their_warm_up():
    calls = []
    runs = {name: (lambda name=name: calls.append(name)) for name in ("shipped", "unsoftened", "cyclic")}
    result = interleaved(runs, repeats=3)
    assert calls[:6] == ["shipped"] * 2 + ["unsoftened"] * 2 + ["cyclic"] * 2  # two warm-up calls each
    assert calls[6:] == ["shipped", "unsoftened", "cyclic", "cyclic", "unsoftened", "shipped",
                         "shipped", "unsoftened", "cyclic"]
    assert set(result) == set(runs) and all(r["n"] == 3 and r["min_ms"] <= r["median_ms"] <= r["p90_ms"]
                                            for r in result.values())


def test_timed_is_one_variant_interleaved():
    calls = []
    assert timed(lambda: calls.append(1), 4)["n"] == 4 and len(calls) == 6
