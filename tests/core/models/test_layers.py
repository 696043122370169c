"""A body cut to its first layers, and rows batched right-padded: exact."""

import pytest
import torch
from transformers import Qwen3ForCausalLM

from core.decision.prompt import encode
from core.decision.random_model import body_config, letter_tokenizer
from core.models.layers import RecentStates, first_layers, right_padded


def test_first_layers_output_is_the_next_layers_input():
    letter_tok = letter_tokenizer()
    torch.manual_seed(5)
    lm = Qwen3ForCausalLM(body_config(len(letter_tok), hidden=32, layers=3, heads=4, kv_heads=2, head_dim=8)).eval()
    ids = torch.tensor([encode(letter_tok, "User: Context:\nhello there")])
    full = lm.model(input_ids=ids, output_hidden_states=True).hidden_states
    for n in (1, 2):  # hidden_states[3], the last, is after the final norm
        part = first_layers(lm.model, n)(input_ids=ids).last_hidden_state
        assert torch.allclose(part, full[n], atol=1e-5)
    assert len(lm.model.layers) == 3  # the body itself is untouched
    with pytest.raises(ValueError, match="no first 4"):
        first_layers(lm.model, 4)


def test_right_padded_stacks_ids_and_states_with_their_mask():
    x, mask = right_padded([torch.tensor([5, 6, 7]), torch.tensor([8])], torch.long)
    assert x.tolist() == [[5, 6, 7], [8, 0, 0]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    states = [torch.ones(2, 4), torch.full((3, 4), 2.0)]
    x, mask = right_padded(states, torch.float32)
    assert x.shape == (2, 3, 4) and mask.tolist() == [[1, 1, 0], [1, 1, 1]]
    assert x[0, 2].abs().sum() == 0 and torch.equal(x[1], states[1])


def test_recent_states_keep_the_latest_reads_and_drop_the_least_recent():
    kept, a, b, c = RecentStates(2), torch.zeros(1, 3), torch.ones(1, 3), torch.full((1, 3), 2.0)
    kept.keep([1, 2], a)
    kept.keep([3], b)
    kept.keep([1, 2], a)  # read again: now the latest, so [3] is the one to go
    kept.keep([4], c)
    assert kept.get([3]) is None and kept.get((1, 2)) is a and kept.get([4]) is c
    assert kept.get([5]) is None
