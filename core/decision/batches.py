"""Decision rows as padded token batches, and batched option probabilities over a model.

Training and evaluation both turn (state, question, options) into the published prompt
(``core.decision.prompt.render_prompt``), tokenize it once, and read option logits with the same
differentiable readout (``core.decision.readout.option_logits``) the Decider uses, so the numbers a
loop optimises are the numbers the app shows.
"""

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from core.decision.prompt import LETTERS, render_prefix, render_prompt
from core.decision.readout import option_logits


@dataclass(frozen=True)
class Prompt:
    """What a model may see of a row: never its label."""

    state: str
    question: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class Batch:
    """Right-padded prompts: ids and mask [B, T], and each row's option count [B]."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    n_options: torch.Tensor


def prompt_of(row) -> Prompt:
    """The label-free view of a DecisionRow (or anything with state, question, options)."""
    return Prompt(row.state, row.question, tuple(row.options))


def tokenize_prompts(tokenizer, prompts: Sequence[Prompt]) -> list[list[int]]:
    """Token ids of each prompt's full published text (no special tokens)."""
    texts = [render_prompt(p.state, p.question, list(p.options)) for p in prompts]
    if not texts:
        return []
    return [list(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def collate(token_ids: Sequence[Sequence[int]], n_options: Sequence[int], pad_id: int) -> Batch:
    """Right-pad token id lists into one Batch."""
    if not token_ids:
        raise ValueError("cannot collate an empty batch")
    width = max(len(ids) for ids in token_ids)
    ids = torch.full((len(token_ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(token_ids), width), dtype=torch.long)
    for i, row in enumerate(token_ids):
        ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return Batch(ids, mask, torch.as_tensor(list(n_options), dtype=torch.long))


def batch_logits(body, rows: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Masked fp32 option logits [B, 26] for one batch (keeps autograd)."""
    return option_logits(body, batch.input_ids, batch.attention_mask, rows, batch.n_options)


def option_probs(body, rows: torch.Tensor, tokenizer, prompts: Sequence[Prompt], batch_size: int = 128) -> np.ndarray:
    """Probabilities [N, 26] of every prompt's options (zeros beyond each option count)."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = tokenize_prompts(tokenizer, prompts)
    order = np.argsort([len(x) for x in ids], kind="stable")  # similar lengths pad less
    out = np.zeros((len(prompts), 26), dtype=np.float64)
    was_training = body.training
    body.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            batch = collate([ids[i] for i in idx], [len(prompts[i].options) for i in idx], pad)
            out[idx] = torch.softmax(batch_logits(body, rows, batch), -1).double().numpy()
    body.train(was_training)
    return out






def body_hidden(body, batch: Batch) -> torch.Tensor:
    """Final hidden states [B, T, H] of a right-padded batch (positions count real tokens only)."""
    position_ids = (batch.attention_mask.cumsum(-1) - 1).clamp(min=0)
    out = body(input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=position_ids,
               use_cache=False)
    return out.last_hidden_state


def lookup_drill(options: Sequence[str], rng, passes: int) -> str:
    """Text that follows a training answer: every option named, then its letter, in shuffled orders.

    A language-model loss on it asks "which letter did this option have?" once per option and
    pass: dense practice at the option-to-letter lookup a choice answer needs (format stage only;
    the model is never shown this text at inference).
    """
    parts = []
    for _ in range(passes):
        order = list(range(len(options)))
        rng.shuffle(order)
        parts.append("".join(f" {options[i].strip()} {chr(65 + i)}" for i in order))
    return "\nCheck:" + ";".join(parts) if parts else ""


def option_ends(tokenizer, prompts: Sequence[Prompt]) -> list[list[int]]:
    """Index of each option's last token in each prompt's token ids (``tokenize_prompts`` order).

    The format stage reads the body's hidden state there for its per-option auxiliary losses
    (``core.decision.training.option_letter_loss`` and ``option_flag_loss``).
    """
    texts = [render_prompt(p.state, p.question, list(p.options)) for p in prompts]
    if not texts:
        return []
    offsets = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    out = []
    for p, spans in zip(prompts, offsets):
        ends = np.array([end for _, end in spans])
        char = len(render_prefix(p.state)) + len(f"Question: {p.question.strip()}\nOptions:\n")
        marks = []
        for i, option in enumerate(p.options):
            char += len(f"{LETTERS[i]}) {option.strip()}")
            marks.append(int(np.flatnonzero(ends <= char)[-1]))
            char += 1  # the newline after the option
        out.append(marks)
    return out
