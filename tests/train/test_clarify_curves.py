"""Training-curve plots from a log history."""

import pytest

from train.clarify_curves import plot, series

HISTORY = [
    {"step": 1, "reward": 0.1, "kl": 0.0, "completions/mean_length": 40, "frac_reward_zero_std": 0.5,
     "rewards/rubric_reward/mean": 0.2},
    {"step": 2, "loss": 0.3},  # an entry without the metrics is skipped
    {"step": 3, "reward": 0.4, "kl": 0.01, "completions/mean_length": 44, "frac_reward_zero_std": 0.25},
]


def test_series_skips_entries_without_the_key():
    assert series(HISTORY, "reward") == ([1, 3], [0.1, 0.4])
    assert series(HISTORY, "absent") == ([], [])


def test_plot_writes_a_png(tmp_path):
    out = tmp_path / "curves.png"
    plot(HISTORY, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_refuses_a_history_without_metrics(tmp_path):
    with pytest.raises(ValueError, match="none of"):
        plot([{"step": 1, "loss": 0.2}], tmp_path / "x.png")


def test_reward_trend_is_the_least_squares_slope_with_an_interval():
    from train.clarify_curves import reward_trend

    history = [{"step": s, "reward": 0.5 + 0.002 * s} for s in range(1, 31)] + [{"step": 30, "train_runtime": 1.0}]
    trend = reward_trend(history)
    slope = trend["slope_per_100_steps"]
    assert trend["steps"] == 30 and (trend["first_step"], trend["last_step"]) == (1, 30)
    assert abs(slope["mean"] - 0.2) < 1e-12 and abs(slope["lo"] - 0.2) < 1e-9 and abs(slope["hi"] - 0.2) < 1e-9
    assert abs(trend["first_third"]["mean"] - (0.5 + 0.002 * 5.5)) < 1e-12  # steps 1-10
    assert abs(trend["last_third"]["mean"] - (0.5 + 0.002 * 25.5)) < 1e-12  # steps 21-30
    noisy = [{"step": s, "reward": (0.9 if s % 2 else 0.1)} for s in range(1, 41)]
    interval = reward_trend(noisy)["slope_per_100_steps"]
    assert interval["lo"] < 0 < interval["hi"]  # alternating rewards: no trend beyond the noise
    with pytest.raises(ValueError, match="at least 6"):
        reward_trend(history[:5])


def test_sweep_table_pairs_each_arm_with_the_first_on_shared_steps(tmp_path):
    from train.clarify_curves import sweep_table

    base = [{"step": s, "reward": r, "step_time": 10.0, "grad_norm": 0.1} for s, r in zip((1, 2, 3, 4), (0.5, 0.6, 0.7, 0.8))]
    fast = [{"step": s, "reward": r, "step_time": 20.0} for s, r in zip((1, 2, 3), (0.5, 0.2, 0.3))]
    rows = sweep_table({"a": base, "b": fast})
    assert [r["run"] for r in rows] == ["a", "b"] and "minus_a" not in rows[0]
    assert rows[0]["mean_reward_after_step_1"] == 0.7 and rows[0]["step_time_s"] == 10.0 and rows[1]["grad_norm"] is None
    diff = rows[1]["minus_a"]
    assert diff["steps"] == [2, 3] and abs(diff["mean"] - (-0.4)) < 1e-12  # (0.2-0.6 + 0.3-0.7) / 2
    plot({"a": base, "b": fast}, tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").stat().st_size > 1000
