"""The Decider latency bench's timing loop: every path is timed several times, whatever the budget."""

import torch

from bench.decide_latency import MIN_REPEATS, PATHS, time_paths


class Recorder:
    """Answers at once and remembers the order paths were called in."""

    def __init__(self):
        self.order = []

    def probabilities(self, request, path):
        self.order.append(path)
        return torch.zeros(2)


def test_each_path_is_timed_at_least_min_repeats_times_even_with_no_budget():
    recorder = Recorder()
    timed, calls = time_paths(recorder, None, budget_s=0.0)
    assert calls == dict.fromkeys(PATHS, MIN_REPEATS) and set(timed) == set(PATHS)
    assert recorder.order[:len(PATHS)] == list(PATHS) and recorder.order[len(PATHS):2 * len(PATHS)] == list(PATHS)[::-1]


def test_a_budget_buys_more_rounds_up_to_seven():
    timed, calls = time_paths(Recorder(), None, budget_s=10.0)
    assert calls == dict.fromkeys(PATHS, 7)
