"""Letter readout: option logits from a causal-LM body and the 26 letter rows, differentiably.

The decision model's answer to a prompt is the final hidden state at the prompt's last real token
times the output-embedding rows of " A" .. " Z", in fp32. Letters beyond a question's option count
get the logit -1e4, so their probability is exactly 0 after a softmax. ``option_logits`` is what
both the Decider and the training loops call (it keeps autograd), so inference and training read
the same numbers:

    ids = letter_token_ids(tokenizer)                      # core.decision.prompt
    logits = option_logits(model, input_ids, attention_mask, ids, n_options)   # [batch, 26]
    loss = F.cross_entropy(logits, labels)                 # labels: option index per row
"""

from typing import Sequence

import torch

MASKED_LOGIT = -1e4
"""Logit of a letter beyond the option count: large and finite, so softmax gives exactly 0."""
N_LETTERS = 26


def body_of(model: torch.nn.Module) -> torch.nn.Module:
    """The transformer body (no LM head) of a CausalLM, or the model itself if it is a body."""
    return getattr(model, "base_model", model)


def letter_rows(model: torch.nn.Module, letters) -> torch.Tensor:
    """The [26, hidden] readout rows: given as rows, or taken (with grad) from the output embeddings.

    Args:
        letters: 26 token ids (list or LongTensor), or a float tensor of the rows themselves.
    """
    if isinstance(letters, torch.Tensor) and letters.is_floating_point():
        rows = letters
    else:
        head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        if head is None:
            raise ValueError("this model has no output embeddings; pass the 26 letter rows instead of ids")
        ids = torch.as_tensor(letters, dtype=torch.long, device=head.weight.device)
        rows = head.weight[ids]
    if rows.shape[0] != N_LETTERS:
        raise ValueError(f"expected {N_LETTERS} letter rows, got {tuple(rows.shape)}")
    return rows


def last_real_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's last real (mask 1) token; works for left and right padding."""
    pos = torch.arange(attention_mask.shape[-1], device=attention_mask.device)
    return (attention_mask.long() * pos).argmax(-1)


def mask_options(logits: torch.Tensor, n_options) -> torch.Tensor:
    """Set the logits of letters at index >= n_options (per row) to ``MASKED_LOGIT``."""
    n = torch.as_tensor(n_options, device=logits.device).reshape(-1, 1)
    keep = torch.arange(logits.shape[-1], device=logits.device).unsqueeze(0) < n
    return torch.where(keep, logits, torch.full_like(logits, MASKED_LOGIT))


def readout(hidden: torch.Tensor, rows: torch.Tensor, n_options, bias: torch.Tensor | None = None) -> torch.Tensor:
    """fp32 letter logits from final hidden states [batch, hidden] (plus an optional [26] bias),
    masked beyond each option count."""
    logits = hidden.float() @ rows.float().T
    return mask_options(logits if bias is None else logits + bias.float(), n_options)


def option_logits(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    letters,
    n_options: int | Sequence[int] | torch.Tensor,
) -> torch.Tensor:
    """Masked fp32 letter logits [batch, 26] for a batch of full prompts (keeps autograd).

    Padding may be on either side: position ids are counted over real tokens only, and the readout
    is taken at each row's last real token.

    Args:
        model: a CausalLM (rows taken from its output embeddings) or a body (pass rows).
        letters: the 26 letter token ids, or the [26, hidden] rows.
        n_options: option count, one for all rows or one per row (2..26).
    """
    rows = letter_rows(model, letters)
    attention_mask = attention_mask.to(input_ids.device)
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    out = body_of(model)(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
    )
    idx = last_real_index(attention_mask)
    hidden = out.last_hidden_state[torch.arange(input_ids.shape[0], device=input_ids.device), idx]
    return readout(hidden, rows, n_options)


def option_logprobs(model, input_ids, attention_mask, letters, n_options) -> torch.Tensor:
    """``log_softmax`` of ``option_logits``; masked letters get about -1e4 (probability 0)."""
    return torch.log_softmax(option_logits(model, input_ids, attention_mask, letters, n_options), dim=-1)
