"""option_logits: masking, padding side, agreement with the Decider, and gradients for training."""

import torch
from transformers import Qwen3ForCausalLM

from core.decision import Choice, Decider, letter_token_ids, option_logits, render_prompt
from core.decision.random_model import body_config
from core.decision.readout import MASKED_LOGIT, mask_options


def _causal_lm(tok, seed=3):
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(body_config(len(tok), hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8)).eval()


def _batch(tok, prompts, side):
    tok.padding_side = side
    enc = tok(prompts, add_special_tokens=False, padding=True, return_tensors="pt")
    tok.padding_side = "right"
    return enc["input_ids"], enc["attention_mask"]


PROMPTS = [render_prompt("short state", "Which?", ["a", "b"]),
           render_prompt("a much longer state with many more words in it", "Which one here?", ["x", "y", "z", "w"])]


def test_mask_options_sets_exact_value():
    out = mask_options(torch.zeros(2, 26), [2, 26])
    assert (out[0, 2:] == MASKED_LOGIT).all() and (out[0, :2] == 0).all() and (out[1] == 0).all()


def test_left_and_right_padding_agree_and_masked_probs_are_zero(letter_tok):
    model, ids = _causal_lm(letter_tok), letter_token_ids(letter_tok)
    with torch.no_grad():
        right = option_logits(model, *_batch(letter_tok, PROMPTS, "right"), ids, [2, 4])
        left = option_logits(model, *_batch(letter_tok, PROMPTS, "left"), ids, [2, 4])
    assert torch.allclose(right, left, atol=1e-5)
    probs = torch.softmax(right, -1)
    assert (probs[0, 2:] == 0).all() and (probs[1, 4:] == 0).all() and right.dtype == torch.float32


def test_matches_the_decider_reference_path(letter_tok):
    model, ids = _causal_lm(letter_tok), letter_token_ids(letter_tok)
    decider = Decider.from_causal_lm(model, letter_tok)
    ans = decider.decide("short state", [Choice("Which?", ["a", "b"])], path="reference")[0]
    with torch.no_grad():
        p = torch.softmax(option_logits(model, *_batch(letter_tok, PROMPTS[:1], "right"), ids, 2), -1)
    assert abs(p[0, 0].item() - ans.probs["a"]) < 1e-6


def test_gradients_reach_body_and_letter_rows(letter_tok):
    model, ids = _causal_lm(letter_tok), letter_token_ids(letter_tok)
    logits = option_logits(model, *_batch(letter_tok, PROMPTS, "right"), ids, torch.tensor([2, 4]))
    torch.nn.functional.cross_entropy(logits, torch.tensor([1, 3])).backward()
    head = model.get_output_embeddings().weight.grad
    assert head[ids[:4]].abs().sum() > 0 and head[ids[4:]].abs().sum() == 0  # masked letters get no gradient
    assert model.model.layers[0].self_attn.q_proj.weight.grad.abs().sum() > 0
