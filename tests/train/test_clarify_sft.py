"""The warmup's loss weighting and its copy metric: exact values on hand-built rows."""

import random

import pytest
import torch

from core.clarify.chat_policy import ChatPolicy
from core.clarify.scenarios import generate_scenario
from train.clarify_demos import DemoStyle, play_demo
from train.clarify_sft import (SFTConfig, build_model, copy_accuracy, copy_positions, demo_episodes,
                               proposal_weights, teacher_forced, token_weights, weighted_loss)
from tests.train.conftest import TINY

M = -100


@pytest.mark.parametrize("labels, weight, expected", [
    ([M, M, 5, 6, M, M, 7, 8, 9], 3.0, [0, 0, 1, 1, 0, 0, 3, 3, 3]),
    ([M, 5, 6, M, 7, M, M], 2.0, [0, 1, 1, 0, 2, 0, 0]),   # trailing masked tokens are skipped
    ([5, 6, 7], 4.0, [4, 4, 4]),                         # one run: it is the proposal
    ([M, M], 3.0, [0, 0]),
])
def test_proposal_weights(labels, weight, expected):
    assert proposal_weights(labels, weight) == expected


def test_weighted_loss_with_unit_weights_is_the_models_own_loss():
    torch.manual_seed(0)
    model = build_model(SFTConfig(**TINY), 600)
    ids = torch.randint(0, 600, (2, 12))
    labels = ids.clone()
    labels[:, :5] = M
    labels[1, 9:] = M
    weights = (labels != M).float()
    out = model(input_ids=ids, labels=labels)
    assert weighted_loss(out.logits, labels, weights).item() == pytest.approx(out.loss.item(), abs=1e-6)


def test_weighted_loss_is_the_weighted_mean_of_token_losses():
    logits = torch.zeros(1, 4, 3)
    logits[0, 0, 1] = 2.0      # predicts label 1 at position 1: low loss
    labels = torch.tensor([[M, 1, 2, 0]])
    weights = torch.tensor([[0.0, 1.0, 3.0, 0.0]])
    nll = torch.nn.functional.cross_entropy(logits[0, :2], labels[0, 1:3], reduction="none")
    expected = (nll[0] * 1 + nll[1] * 3) / 4
    assert weighted_loss(logits, labels, weights).item() == pytest.approx(expected.item(), abs=1e-7)


def test_copy_positions_are_the_revealed_values_in_the_plan(tiny_tokenizer):
    policy = ChatPolicy(None, tiny_tokenizer)
    episode = play_demo(generate_scenario(3, "easy"), "v2", DemoStyle(), random.Random(0))
    ids, labels = teacher_forced(policy, episode)
    positions = copy_positions(policy, episode, labels)
    copied = tiny_tokenizer.decode([labels[i] for i in positions])
    assert positions and min(positions) > max(i for i, w in enumerate(proposal_weights(labels, 1.0)) if w == 0)
    for field in episode.fields_revealed:
        assert str(episode.scenario.hidden_profile[field]) in copied


def test_token_weights_single_out_the_copied_values(tiny_tokenizer):
    policy = ChatPolicy(None, tiny_tokenizer)
    episode = play_demo(generate_scenario(5, "hard"), "v2", DemoStyle(), random.Random(1))
    _, labels = teacher_forced(policy, episode)
    weights = token_weights(policy, episode, labels, SFTConfig(plan_weight=3.0, copy_weight=20.0))
    copies = copy_positions(policy, episode, labels)
    assert [i for i, w in enumerate(weights) if w == 20.0] == copies
    plan = proposal_weights(labels, 3.0)
    assert all(w == plan[i] for i, w in enumerate(weights) if i not in copies)
    # unset, copied values weigh what the rest of the proposal weighs (the shipped run's recipe)
    assert token_weights(policy, episode, labels, SFTConfig(plan_weight=3.0)) == plan


class Oracle(torch.nn.Module):
    """Test double: logits that put all mass on the true next token (optionally wrong at one spot)."""

    def __init__(self, ids, wrong_at=None):
        super().__init__()
        self.ids, self.wrong_at = ids, wrong_at

    def forward(self, input_ids):
        logits = torch.zeros(1, len(self.ids), 1000)
        for i, t in enumerate(self.ids[1:]):
            logits[0, i, t if i + 1 != self.wrong_at else t + 1] = 1.0
        return type("Out", (), {"logits": logits})()


def test_copy_accuracy_counts_only_copy_positions():
    ids = [1, 2, 3, 4, 5]
    assert copy_accuracy(Oracle(ids), [(ids, ids, [2, 4])]) == 1.0
    assert copy_accuracy(Oracle(ids, wrong_at=4), [(ids, ids, [2, 4])]) == 0.5
    assert copy_accuracy(Oracle(ids, wrong_at=3), [(ids, ids, [2, 4])]) == 1.0


def test_held_back_demos_never_share_a_scenario_with_training_demos():
    cfg = SFTConfig(demos=300, val_demos=40)
    train, held = demo_episodes(cfg, random.Random(0))
    assert len(train) == 300 and len(held) == 40
    assert not {e.scenario.id for e in train} & {e.scenario.id for e in held}
    assert all(e.questions_asked >= len(e.scenario.required_keys) for e in held)  # full-strength style


def test_a_split_lora_warmup_in_chunks_ends_where_one_run_ends(tmp_path, tiny_checkpoint):
    """A LoRA on the top layer over cached lower states, run whole and run in one-step chunks
    (each resumed from out/train_state.pt): the same adapter, every chunk's wall time recorded."""
    import json

    from safetensors.torch import load_file

    from train.clarify_sft import main

    common = dict(base=str(tiny_checkpoint), top_layers=1, lora_rank=2, lora_alpha=4, demos=12, val_demos=2,
                  batch_size=4, lr=1e-2, eval_every=2, log_every=1, cache=str(tmp_path / "cache"))
    main(SFTConfig(out=str(tmp_path / "whole"), **common))
    chunks = 0
    while not (tmp_path / "parts" / "training_log.json").is_file():
        main(SFTConfig(out=str(tmp_path / "parts"), max_minutes=1e-9, resume=chunks > 0, **common))
        chunks += 1
    assert chunks == 3  # one step a chunk; the last step ends the run
    whole, parts = (load_file(tmp_path / d / "adapter_model.safetensors") for d in ("whole", "parts"))
    assert whole.keys() == parts.keys() and all(torch.allclose(whole[k], parts[k], atol=1e-6) for k in whole)
    assert any(v.abs().max() > 0 for k, v in whole.items() if "lora_B" in k)  # it trained
    log = json.loads((tmp_path / "parts" / "training_log.json").read_text())
    assert len(log["chunk_train_wall_s"]) == 3 and [e["step"] for e in log["log_history"]] == [1, 2, 3]
    config = json.loads((tmp_path / "whole" / "adapter_config.json").read_text())
    assert config["layers_to_transform"] == [1] and config["base_model_name_or_path"] == str(tiny_checkpoint)


def test_a_detour_is_not_trained_and_the_rest_weighs_as_before(tiny_tokenizer):
    from train.clarify_demos import detour_turns
    from train.clarify_sft import turn_spans

    policy = ChatPolicy(None, tiny_tokenizer)
    s = generate_scenario(7, "easy")
    episode = play_demo(s, "v2", DemoStyle(p_detour=1.0), random.Random(0))
    _, labels = teacher_forced(policy, episode)
    spans, wasted = turn_spans(labels), detour_turns(episode)
    assert len(spans) == len(episode.turns) and wasted
    weights = token_weights(policy, episode, labels, SFTConfig(plan_weight=3.0))
    plain = proposal_weights(labels, 3.0)
    for k, span in enumerate(spans):
        assert [weights[i] for i in span] == ([0.0] * len(span) if k in wasted else [plain[i] for i in span])
