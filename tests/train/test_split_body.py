"""The split body is exact: cached lower states, with or without a shared prefix run once, give the
whole body's states, and the clarify warmup's split loss is the whole model's loss, gradients included."""

import pytest
import torch

from tests.fixtures.tiny_adapter_arm import build_tiny_llama
from train.clarify_sft import SFTConfig, lora_config, proposal_weights, selected_loss, split_loss, weighted_loss
from core.clarify.kv_cache import shared_prefix
from train.split_body import SplitBody, cache_after_prefix

M = -100


@pytest.fixture(scope="module")
def adapted(tmp_path_factory):
    """A tiny random Llama with a random (non-zero) LoRA on its top two layers, as the warmup builds it."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(build_tiny_llama(tmp_path_factory.mktemp("base")))
    config = lora_config(4, 8, [2, 3])
    config.init_lora_weights = False
    return get_peft_model(model, config)


PREFIX = [5, 9, 11, 7, 3, 8, 20]
SEQS = [PREFIX + [30, 31, 32, 33, 34, 35], PREFIX + [40, 41, 42], PREFIX + [50, 51, 52, 53, 54, 55, 56, 57]]


@pytest.mark.parametrize("ids, expected", [
    (SEQS, len(PREFIX)),
    ([[1, 2, 3], [1, 2, 3, 4]], 2),     # one sequence is all prefix: each keeps a token of its own
    ([[1, 2], [3, 4]], 0),
    ([[7, 8, 9]], 2),
])
def test_shared_prefix(ids, expected):
    assert shared_prefix(ids) == expected


def whole_states(model, ids):
    with torch.no_grad():
        return model.get_decoder()(input_ids=torch.tensor([ids])).last_hidden_state[0]


def test_states_after_a_shared_prefix_equal_the_whole_body(adapted, tmp_path):
    split = SplitBody.of(adapted.get_decoder(), 2)
    prefix, tails = cache_after_prefix(split, SEQS, tmp_path, "t")
    assert prefix.shape[0] == len(PREFIX) and [t.shape[0] for t in tails] == [6, 3, 8]
    with torch.no_grad():
        out, mask = split.states_after(prefix, tails)
    for i, ids in enumerate(SEQS):
        n = len(ids) - len(PREFIX)
        assert mask[i].sum() == n
        assert torch.allclose(out[i, :n], whole_states(adapted, ids)[len(PREFIX):], atol=1e-5)
    assert cache_after_prefix(split, SEQS, tmp_path, "t")[1][2].equal(tails[2])  # read back from disk


def test_the_split_loss_and_its_gradient_are_the_whole_models(adapted, tmp_path):
    split = SplitBody.of(adapted.get_decoder(), 2)
    labels = [[M] * (len(PREFIX) + 2) + ids[len(PREFIX) + 2:] for ids in SEQS]
    weights = [proposal_weights(lab, 3.0) for lab in labels]
    width = max(map(len, SEQS))
    pad = lambda rows, v: torch.tensor([r + [v] * (width - len(r)) for r in rows])  # noqa: E731
    ids, lab, w = pad(SEQS, 0), pad(labels, M), pad(weights, 0.0)
    mask = pad([[1] * len(s) for s in SEQS], 0)
    params = [p for p in adapted.parameters() if p.requires_grad]

    whole = weighted_loss(adapted(input_ids=ids, attention_mask=mask).logits, lab, w)
    g_whole = torch.autograd.grad(whole, params)
    loss_of = split_loss(adapted, split, *cache_after_prefix(split, SEQS, tmp_path, "g"))
    part = loss_of([0, 1, 2], ids, lab, w, mask)
    g_part = torch.autograd.grad(part, params)
    assert part.item() == pytest.approx(whole.item(), abs=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g_whole, g_part))
    with pytest.raises(ValueError, match="trained token inside the shared"):
        loss_of([0], ids[:1], lab[:1], torch.ones_like(w[:1]), mask[:1])


def test_selected_loss_is_the_weighted_loss_of_the_head():
    torch.manual_seed(1)
    hidden, head = torch.randn(2, 6, 8), torch.nn.Linear(8, 11, bias=False)
    labels = torch.tensor([[M, M, 3, 4, 5, M], [M, 1, 2, M, 7, 8]])
    weights = torch.tensor([[0, 0, 1, 1, 3, 0], [0, 1, 1, 0, 3, 3]], dtype=torch.float32)
    assert selected_loss(hidden, head, labels, weights).item() == pytest.approx(
        weighted_loss(head(hidden), labels, weights).item(), abs=1e-6)


def test_top_layers_only_adapt_the_top_layers():
    config = lora_config(8, 16, [28, 29])
    assert config.layers_to_transform == [28, 29] and "down_proj" in config.target_modules
    assert lora_config(8, 16).target_modules == "all-linear"
    assert SFTConfig(top_layers=8).top_layers == 8
