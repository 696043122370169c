"""The training arms' pure pieces: the Brier-gradient identity, the leave-one-out baseline, rewards,
the REINFORCE loss, the schedule and the stop rule."""

import math

import pytest
import torch

from core.decision.training import (
    brier, cosine_lr_factor, expected_reinforce_surrogate, leave_one_out_baseline, option_aux_loss,
    option_flag_loss, option_letter_loss, reinforce_loss,
    rlcd_reward, rlvr_reward, sample_options, should_stop,
)


def _tiny_policy(seed: int):
    """A small differentiable map from features to 26 letter logits, masked beyond 4 options."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(5, 6, generator=g, dtype=torch.float64)
    w = torch.randn(6, 26, generator=g, dtype=torch.float64).requires_grad_()
    mask = torch.full((26,), -1e4, dtype=torch.float64)
    mask[:4] = 0.0
    labels = torch.tensor([0, 3, 1, 2, 2])
    return x, w, mask, labels


def _grad(loss: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    (g,) = torch.autograd.grad(loss, w, retain_graph=True)
    return g


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_times_expected_rlcd_gradient_is_minus_brier_gradient(seed):
    x, w, mask, labels = _tiny_policy(seed)
    logits = x @ w + mask
    reinforce = 2 * _grad(expected_reinforce_surrogate(logits, labels, "rlcd"), w)
    minus_brier = _grad(-brier(torch.softmax(logits, -1), labels), w)
    assert torch.allclose(reinforce, minus_brier, atol=1e-6, rtol=0)
    assert reinforce.abs().max() > 1e-3  # the identity is not 0 == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expected_rlvr_gradient_is_gradient_of_p_label(seed):
    x, w, mask, labels = _tiny_policy(seed)
    logits = x @ w + mask
    reinforce = _grad(expected_reinforce_surrogate(logits, labels, "rlvr"), w)
    p_label = torch.softmax(logits, -1).gather(-1, labels[:, None]).mean()
    assert torch.allclose(reinforce, _grad(p_label, w), atol=1e-6, rtol=0)


def test_rlcd_and_rlvr_gradients_differ():
    # the two rewards must not collapse to one objective (else the identity tests prove nothing)
    x, w, mask, labels = _tiny_policy(0)
    logits = x @ w + mask
    a = _grad(expected_reinforce_surrogate(logits, labels, "rlcd"), w)
    b = _grad(expected_reinforce_surrogate(logits, labels, "rlvr"), w)
    assert (a - b).abs().max() > 1e-3


def test_sampled_reinforce_matches_expectation_on_average():
    # many sampled actions with the leave-one-out baseline estimate the exact expected gradient
    x, w, mask, labels = _tiny_policy(3)
    logits = x @ w + mask
    logp = torch.log_softmax(logits, -1)
    gen = torch.Generator().manual_seed(0)
    actions = sample_options(logp.exp(), 20000, gen)
    correct = (actions == labels[:, None]).double()
    r = rlcd_reward(correct, logp.exp().gather(-1, actions))
    adv = r - leave_one_out_baseline(r)
    # reinforce_loss averages over samples, the surrogate sums over options per row: same scale
    sampled = _grad(reinforce_loss(logp, actions, adv), w)
    exact = _grad(-expected_reinforce_surrogate(logits, labels, "rlcd"), w)
    # the leave-one-out advantage is (G / (G - 1)) * (r - mean r): unbiased for the gradient
    assert torch.allclose(sampled, exact, atol=1e-2)


LOO_CASES = [
    # (rewards of G samples, hand-computed baselines)
    ([1.0, 0.0, 0.0, 0.0], [0.0, 1 / 3, 1 / 3, 1 / 3]),  # one success among four
    ([1.0, 1.0, 0.0, 0.0], [1 / 3, 1 / 3, 2 / 3, 2 / 3]),  # two successes
    ([0.7, -0.2, 0.4, -0.5], [-0.1, 0.2, 0.0, 0.3]),  # RLCD-style signed rewards: (0.4 - r_j) / 3
    ([0.5, 0.5], [0.5, 0.5]),  # G = 2: the other sample's reward
    ([2.0, 4.0, 9.0], [6.5, 5.5, 3.0]),  # G = 3
]


@pytest.mark.parametrize("rewards, expected", LOO_CASES)
def test_leave_one_out_baseline_values(rewards, expected):
    got = leave_one_out_baseline(torch.tensor([rewards], dtype=torch.float64))
    assert torch.allclose(got, torch.tensor([expected], dtype=torch.float64), atol=1e-12)


def test_leave_one_out_baseline_is_per_prompt():
    # two prompts in one batch never share a baseline
    got = leave_one_out_baseline(torch.tensor([[1.0, 0.0], [0.0, 0.0]]))
    assert got.tolist() == [[0.0, 1.0], [0.0, 0.0]]


def test_leave_one_out_needs_two_samples():
    with pytest.raises(ValueError, match="at least 2"):
        leave_one_out_baseline(torch.tensor([[1.0]]))


REWARD_CASES = [
    # (correct, p of the sampled option, rlcd reward, rlvr reward)
    (1.0, 0.9, 0.1, 1.0),  # confident and right: small RLCD reward
    (1.0, 0.2, 0.8, 1.0),  # unsure and right: large RLCD reward
    (0.0, 0.7, -0.7, 0.0),  # confident and wrong: RLCD punishes, RLVR shrugs
    (0.0, 0.0, 0.0, 0.0),
]


@pytest.mark.parametrize("c, p, want_rlcd, want_rlvr", REWARD_CASES)
def test_rewards(c, p, want_rlcd, want_rlvr):
    p_t = torch.tensor([p], requires_grad=True)
    r = rlcd_reward(torch.tensor([c]), p_t)
    assert r.item() == pytest.approx(want_rlcd)
    assert not r.requires_grad  # p_a is detached
    assert rlvr_reward(torch.tensor([c]), p_t).item() == want_rlvr


def test_reinforce_loss_hand_value():
    logp = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    actions = torch.tensor([[0, 1]])
    adv = torch.tensor([[1.0, -2.0]])
    # -(1 * log .5 + -2 * log .25) / 2
    assert reinforce_loss(logp, actions, adv).item() == pytest.approx(-(math.log(0.5) - 2 * math.log(0.25)) / 2)


SCHEDULE_CASES = [
    # (step, total, expected factor)
    (0, 100, 1 / 5),  # 5 warmup steps: linear from 1/5
    (4, 100, 1.0),  # end of warmup
    (5, 100, 1.0),  # cosine starts at the peak
    (100, 100, 0.1),  # floor at the end
    (55, 105, 0.55),  # half-way through the cosine (5 warmup steps): (1 + 0.1) / 2
]


@pytest.mark.parametrize("step, total, expected", SCHEDULE_CASES)
def test_cosine_lr_factor(step, total, expected):
    assert cosine_lr_factor(step, total) == pytest.approx(expected, abs=1e-9)


STOP_CASES = [
    # (step-0 accuracy, history, stop?)
    (0.8, [0.6, 0.6], False),  # fewer than three evaluations
    (0.8, [0.69, 0.69, 0.69], True),  # all three more than 0.10 below
    (0.8, [0.69, 0.71, 0.69], False),  # one within the margin
    (0.8, [0.5, 0.69, 0.69, 0.69], True),  # only the last three count
    (0.8, [0.69, 0.69, 0.69, 0.75], False),
    (0.8, [0.71, 0.71, 0.71], False),  # 0.09 below: within the margin
]


@pytest.mark.parametrize("step0, history, stop", STOP_CASES)
def test_stop_rule(step0, history, stop):
    assert should_stop(step0, history) is stop


def test_option_letter_loss_is_the_nll_of_each_option_letter():
    rows = torch.eye(26, 4)  # letter i reads feature i (A..D), the others read nothing
    hidden = torch.tensor([[5.0, 0, 0, 0], [0, 0, 5.0, 0]])
    index, n = torch.tensor([0, 2]), torch.tensor([2, 3])
    want = -(torch.log_softmax(torch.tensor([5.0, 0.0]), 0)[0] + torch.log_softmax(torch.tensor([0.0, 0, 5]), 0)[2]) / 2
    assert option_letter_loss(hidden, rows, index, n).item() == pytest.approx(want.item(), abs=1e-6)


def test_option_flag_loss_is_binary_nll_of_the_probe():
    hidden = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    probe = torch.tensor([2.0, -1.0])
    want = (math.log1p(math.exp(-2.0)) + math.log1p(math.exp(-2.0))) / 2  # logits 2 (answer), -2 (not)
    assert option_flag_loss(hidden, probe, torch.tensor([1.0, 0.0])).item() == pytest.approx(want, abs=1e-6)


def test_option_aux_loss_gathers_every_option_of_every_row():
    g = torch.Generator().manual_seed(0)
    hidden, rows, probe = torch.randn(2, 6, 4, generator=g), torch.randn(26, 4, generator=g), torch.randn(4, generator=g)
    marks, labels = [[1, 3], [0, 2, 5]], [1, 0]
    h = torch.stack([hidden[0, 1], hidden[0, 3], hidden[1, 0], hidden[1, 2], hidden[1, 5]])
    want = (option_letter_loss(h, rows, torch.tensor([0, 1, 0, 1, 2]), torch.tensor([2, 2, 3, 3, 3]))
            + option_flag_loss(h, probe, torch.tensor([0.0, 1, 1, 0, 0])))
    assert option_aux_loss(hidden, rows, probe, marks, labels).item() == pytest.approx(want.item(), abs=1e-6)
    with pytest.raises(ValueError, match="at least one option"):
        option_aux_loss(hidden, rows, probe, [[], []], labels)
