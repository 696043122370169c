"""The layer below's zero-query head: it weighs every earlier token alike, its values are the readout it was given,
its output block writes them along the quiet directions; the top layer's inputs are read through the layers below."""

import pytest
import torch

from train.decision_graft import graft_lora
from train.decision_graft_query import quiet_directions, quietest_head, top_inputs, write_below
from train.split_body import SplitBody


def test_quiet_directions_are_the_least_varying_axes():
    g = torch.Generator().manual_seed(0)
    basis, _ = torch.linalg.qr(torch.randn(6, 6, generator=g))
    spread = torch.tensor([5.0, 4.0, 3.0, 2.0, 0.5, 0.1])
    residual = (torch.randn(4000, 6, generator=g) * spread) @ basis.T + 3.0
    E = quiet_directions(residual, 2)
    assert E.shape == (6, 2) and torch.allclose(E.T @ E, torch.eye(2), atol=1e-5)
    assert torch.allclose((E.T @ basis[:, [5, 4]]).abs(), torch.eye(2), atol=0.02)  # the 0.1 axis, then the 0.5 one


@pytest.fixture(scope="module")
def body():
    from peft import get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=96, intermediate_size=32, num_hidden_layers=3, num_attention_heads=3,
                         num_key_value_heads=1, head_dim=32, rope_theta=100000.0, attn_implementation="eager")
    model = get_peft_model(LlamaForCausalLM(config), graft_lora(2, 3, 32, below=1, below_rank=4))
    model.eval()
    return model


def test_the_top_layers_inputs_are_read_through_the_layers_below(body):
    from core.models.layers import first_layers

    decoder = body.get_decoder()
    ids = [[1, 5, 9, 3], [2, 7]]
    with torch.no_grad():
        expected = [first_layers(decoder, 2)(input_ids=torch.tensor([one])).last_hidden_state[0] for one in ids]
    for top in (1, 2):
        split = SplitBody.of(decoder, top)
        got = top_inputs(split, split.hidden(ids))
        assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(got, expected))


def test_the_zero_query_head_hands_each_token_the_readout_of_its_prefix_mean(body):
    attn = body.get_decoder().layers[1].self_attn
    H, T, h, dims = 96, 7, 2, [3, 8, 20, 31]
    g = torch.Generator().manual_seed(2)
    readout, directions = torch.randn(4, H, generator=g), torch.linalg.qr(torch.randn(H, 4, generator=g))[0]
    write_below(attn, h, readout, dims, directions, small=0.01, gain=50.0)
    x = torch.randn(1, T, H, generator=g)
    seen = []
    hook = attn.o_proj.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    cos, sin = body.get_decoder().rotary_emb(x, torch.arange(T)[None])
    with torch.no_grad():
        causal = torch.full((T, T), float("-inf")).triu(1)[None, None]
        _, weights = attn(x, position_embeddings=(cos, sin), attention_mask=causal)
    hook.remove()
    for t in range(T):
        assert torch.allclose(weights[0, h, t, : t + 1], torch.full((t + 1,), 1 / (t + 1)), atol=1e-6)
        handed = seen[0][0, t, h * 32 + torch.tensor(dims)]
        assert torch.allclose(handed, 0.01 * readout @ x[0, : t + 1].mean(0), atol=1e-5)
    o = attn.o_proj
    merged = o.base_layer.weight + o.lora_B["default"].weight @ o.lora_A["default"].weight * o.scaling["default"]
    block = merged[:, h * 32:(h + 1) * 32]
    assert torch.allclose(block[:, dims], directions * 50.0, atol=1e-4)
    assert block[:, [d for d in range(32) if d not in dims]].abs().max() < 1e-5  # the head's own output is gone


def test_the_replaced_head_is_the_one_that_adds_least():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=96, intermediate_size=32, num_hidden_layers=2, num_attention_heads=3,
                         num_key_value_heads=1, head_dim=32, attn_implementation="eager")
    model = LlamaForCausalLM(config)
    decoder = model.get_decoder()
    attn = decoder.layers[1].self_attn
    with torch.no_grad():
        attn.o_proj.weight[:, 32:64] *= 0.01
    split = SplitBody.of(decoder, 1)
    assert quietest_head(split, split.hidden([[1, 4, 6, 2, 9]]), attn) == 1
