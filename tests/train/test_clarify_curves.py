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
