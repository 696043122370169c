"""Pure pieces of the decision-model training arms: rewards, baselines, losses, schedule, stop rule.

Why r = c - p_a: with a sampled option a, its correctness c and its detached probability p_a,
E_a[(c - p_a) grad log p_a] = sum_a (c_a - p_a) grad p_a = 1/2 grad(-Brier), so REINFORCE with this
reward climbs a proper scoring rule and keeps the model calibrated, while r = c climbs p_y (expected
accuracy), which rewards certainty. ``expected_reinforce_surrogate`` computes that expectation
exactly, which is how the tests check the identity. Everything here is a function of tensors;
the loops that call these live in ``train/``.
"""

import math
from typing import Callable, Literal, Sequence

import torch

from core.decision.readout import readout

Reward = Literal["rlcd", "rlvr"]


def rlcd_reward(correct: torch.Tensor, p_sampled: torch.Tensor) -> torch.Tensor:
    """r = c - p_a, with p_a detached (the reward is a number, not a path for gradients)."""
    return correct.float() - p_sampled.detach().float()


def rlvr_reward(correct: torch.Tensor, p_sampled: torch.Tensor | None = None) -> torch.Tensor:
    """r = c: the outcome-only reward (``p_sampled`` is accepted and ignored, for one signature)."""
    return correct.float()


REWARDS: dict[str, Callable[..., torch.Tensor]] = {"rlcd": rlcd_reward, "rlvr": rlvr_reward}


def leave_one_out_baseline(rewards: torch.Tensor) -> torch.Tensor:
    """b_j = (sum_g r_g - r_j) / (G - 1): the mean reward of the OTHER samples of the same prompt.

    Args:
        rewards: [..., G] rewards of G >= 2 samples per prompt (last dimension).
    """
    g = rewards.shape[-1]
    if g < 2:
        raise ValueError(f"a leave-one-out baseline needs at least 2 samples per prompt, got {g}")
    return (rewards.sum(-1, keepdim=True) - rewards) / (g - 1)


def sample_options(probs: torch.Tensor, samples: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw ``samples`` option indices per row from ``probs`` [B, 26], with replacement: [B, G]."""
    return torch.multinomial(probs.detach().float(), samples, replacement=True, generator=generator)


def reinforce_loss(logprobs: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """-mean_{b,j} A_bj log p(a_bj): its gradient is the REINFORCE estimate (A is detached)."""
    taken = logprobs.gather(-1, actions)
    return -(advantages.detach() * taken).mean()


def nll_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of the labelled letter (masked letters have ~0 probability)."""
    return torch.nn.functional.cross_entropy(logits.float(), labels)


def brier(probs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Multi-class Brier score, differentiable: mean over rows of sum_k (p_k - 1[k = y])^2."""
    onehot = torch.nn.functional.one_hot(labels, probs.shape[-1]).to(probs.dtype)
    return ((probs - onehot) ** 2).sum(-1).mean()


def expected_reinforce_surrogate(logits: torch.Tensor, labels: torch.Tensor, reward: Reward) -> torch.Tensor:
    """A scalar whose gradient is the EXACT expected REINFORCE gradient (no baseline), per row mean.

    sum_a p_a * r_a * log p_a with p_a and r_a detached: its gradient is sum_a p_a r_a grad log p_a
    = E_{a ~ p}[r_a grad log p_a], enumerated over every option instead of sampled.
    """
    logp = torch.log_softmax(logits.float(), dim=-1)
    p = logp.exp().detach()
    correct = torch.nn.functional.one_hot(labels, logits.shape[-1]).float()
    r = REWARDS[reward](correct, p)
    return (p * r * logp).sum(-1).mean()


def cosine_lr_factor(step: int, total: int, warmup_frac: float = 0.05, floor: float = 0.1) -> float:
    """LR multiplier: linear warmup over ``warmup_frac`` of ``total``, then cosine to ``floor``.

    ``step`` counts from 0; the factor is 1.0 at the end of warmup and ``floor`` at ``total``.
    """
    if total < 1:
        raise ValueError(f"total steps must be >= 1, got {total}")
    warm = max(1, round(warmup_frac * total))
    if step < warm:
        return (step + 1) / warm
    progress = min(1.0, (step - warm) / max(1, total - warm))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def should_stop(step0_accuracy: float, history: Sequence[float], margin: float = 0.10, window: int = 3) -> bool:
    """The published stop rule: the last ``window`` evaluations are all > ``margin`` below step 0."""
    if len(history) < window:
        return False
    return all(acc < step0_accuracy - margin for acc in history[-window:])


class Judge:
    """The bandit's only window on the labels: c(prompt index, sampled option) in {0, 1}.

    Built from the labelled rows, it keeps the labels private; the RL loop receives label-free
    prompts and this callback, so it can learn only from the outcomes of options it sampled.
    """

    def __init__(self, rows: Sequence):
        self._labels = tuple(int(r.label) for r in rows)
        self.calls = 0
        """How many outcomes were revealed (one per sampled option)."""

    def __len__(self) -> int:
        return len(self._labels)

    def __call__(self, index: int, option: int) -> float:
        self.calls += 1
        return 1.0 if self._labels[index] == option else 0.0

    def outcomes(self, indices: Sequence[int], actions: torch.Tensor) -> torch.Tensor:
        """c for each sampled option: [B, G] floats, one callback per sample."""
        return torch.tensor([[self(i, int(a)) for a in row] for i, row in zip(indices, actions.tolist())],
                            dtype=torch.float32)


def lm_loss(hidden: torch.Tensor, embeddings: torch.Tensor, input_ids: torch.Tensor,
            attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token NLL over real tokens, with the output head tied to the input embeddings.

    The from-scratch format stage adds this to the letter NLL: one labelled letter per row is a
    sparse signal for a random body, while predicting every token of the state and options gives
    it dense practice at reading and copying (the published recipe started from a pretrained LM).
    """
    logits = hidden[:, :-1].float() @ embeddings.float().T
    target = input_ids[:, 1:].masked_fill(attention_mask[:, 1:] == 0, -100)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                                             ignore_index=-100)


def option_letter_loss(hidden: torch.Tensor, rows: torch.Tensor, option_index: torch.Tensor,
                       n_options: torch.Tensor) -> torch.Tensor:
    """Mean NLL of each option's own letter, read from the hidden state at the option's last token.

    Format stage only. A from-scratch body has to compose two steps to answer a choice question
    (find the option the state supports, then read the letter printed before it); trained on the
    final letter alone it sat at chance. Asking every option token for its own letter in readout
    space (a one-step, positional skill) gives the second step its own dense signal.

    Args:
        hidden: [N, H] hidden states at N option-end tokens.
        rows: the [26, H] letter rows.
        option_index: [N] each option's 0-based position (its letter).
        n_options: [N] its question's option count (letters beyond it are masked).
    """
    return torch.nn.functional.cross_entropy(readout(hidden, rows, n_options), option_index)


def option_flag_loss(hidden: torch.Tensor, probe: torch.Tensor, is_answer: torch.Tensor) -> torch.Tensor:
    """Mean binary NLL of "this option is the answer", a linear probe on each option-end hidden state.

    The first step's own signal (see ``option_letter_loss``): each option learns whether the state
    supports it. ``probe`` [H] is a training-only vector; it is never exported.
    """
    return torch.nn.functional.binary_cross_entropy_with_logits(hidden.float() @ probe.float(), is_answer.float())


def option_aux_loss(hidden: torch.Tensor, rows: torch.Tensor, probe: torch.Tensor,
                    marks: Sequence[Sequence[int]], labels: Sequence[int]) -> torch.Tensor:
    """``option_letter_loss`` + ``option_flag_loss`` over every option of every row of a batch.

    Args:
        hidden: [B, T, H] final hidden states of the batch.
        marks: per row, the token index of each option's last token (``option_ends``).
        labels: per row, the answer's option index.
    """
    row = [b for b, m in enumerate(marks) for _ in m]
    if not row:
        raise ValueError("option_aux_loss needs at least one option")
    h = hidden[torch.tensor(row), torch.tensor([p for m in marks for p in m])]
    index = torch.tensor([i for m in marks for i in range(len(m))])
    n_options = torch.tensor([len(marks[b]) for b in row])
    is_answer = torch.tensor([float(i == labels[b]) for b, i in zip(row, index.tolist())])
    return option_letter_loss(h, rows, index, n_options) + option_flag_loss(h, probe, is_answer)
