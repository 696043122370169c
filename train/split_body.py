"""A decoder body cut in two: the frozen lower layers run once per sequence (no grad, cached), the
adapted top layers run at every step.

LoRA on the top K of a real body's layers only leaves everything below unchanged, so each training
sequence's hidden state at the cut is a constant: computed once, a pass then costs K layers, not all.
On 2 CPUs this is what lets thousands of SmolLM2 sequences fit an hour (the decision arms' letter
readout, the clarify warmup's demonstrations). Exactness is tested: top(cache(x)) == whole(x).
"""

import copy
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
from transformers import DynamicCache

from core.clarify.kv_cache import shared_prefix
from core.models.layers import right_padded, view
from core.decision.readout import last_real_index, readout

BODY_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every Linear layer of a Llama or Qwen3 decoder layer: what "all-linear" selects there."""


@dataclass
class SplitBody:
    """The lower (frozen, cached) and upper (adapted) halves of one decoder body."""

    lower: torch.nn.Module
    upper: torch.nn.Module
    first_adapted: int

    @classmethod
    def of(cls, decoder, top_layers: int) -> "SplitBody":
        n = len(decoder.layers)
        cut = n - top_layers
        return cls(view(decoder, decoder.layers[:cut], torch.nn.Identity()), view(decoder, decoder.layers[cut:]), cut)

    def hidden(self, ids: Sequence[list[int]]) -> list[torch.Tensor]:
        """The lower half's output [T_i, H] for each sequence (no grad): what the cache holds. One
        right-padded forward; causal attention keeps each sequence's real positions unaffected."""
        x, mask = right_padded([torch.tensor(one) for one in ids], torch.long)
        with torch.no_grad():
            out = self.lower(input_ids=x, attention_mask=mask, use_cache=False).last_hidden_state
        return [out[i, : len(one)].clone() for i, one in enumerate(ids)]

    def states(self, cached: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """The body's final (normed) states [B, T, H] from cached lower states, right-padded here,
        and the padding mask [B, T] (keeps autograd through the upper half)."""
        x, mask = right_padded(cached, torch.float32)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self.upper(inputs_embeds=x, attention_mask=mask, position_ids=positions, use_cache=False).last_hidden_state
        return out, mask

    def prefix(self, ids: list[int]) -> tuple[torch.Tensor, DynamicCache]:
        """The lower half's states [P, H] and keys/values of a prefix every sequence shares (no grad)."""
        cache = DynamicCache()
        with torch.no_grad():
            out = self.lower(input_ids=torch.tensor([ids]), cache=cache, use_cache=True).last_hidden_state
        return out[0], cache

    def hidden_after(self, prefix: tuple[torch.Tensor, DynamicCache], tails: Sequence[list[int]]) -> list[torch.Tensor]:
        """``hidden`` of the tails only, each read after the shared prefix (its cache is not changed)."""
        p = prefix[0].shape[0]
        x, mask = right_padded([torch.tensor(t) for t in tails], torch.long)
        with torch.no_grad():
            cache = copy.deepcopy(prefix[1])
            cache.batch_repeat_interleave(len(tails))
            out = self.lower(input_ids=x, **after_prefix(cache, p, mask)).last_hidden_state
        return [out[i, : len(t)].clone() for i, t in enumerate(tails)]

    def states_after(self, prefix: torch.Tensor, tails: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``states`` of the tails, the shared prefix's lower states [P, H] run once through the upper
        half (with grad) and its keys/values repeated for each row: the prefix costs one row, not B."""
        cache = DynamicCache()
        self.upper(inputs_embeds=prefix[None], cache=cache, use_cache=True)
        for slot in cache.layers[: self.first_adapted]:  # the mask reads the length of slot 0: unused slots
            slot.update(cache.layers[self.first_adapted].keys, cache.layers[self.first_adapted].values)  # report P
        cache.batch_repeat_interleave(len(tails))
        x, mask = right_padded(tails, torch.float32)
        out = self.upper(inputs_embeds=x, **after_prefix(cache, prefix.shape[0], mask)).last_hidden_state
        return out, mask

    def logits(self, cached: Sequence[torch.Tensor], n_options: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Masked letter logits [B, 26] at each sequence's last real position (the decision readout)."""
        out, mask = self.states(cached)
        last = out[torch.arange(len(cached)), last_real_index(mask)]
        return readout(last, rows, n_options)


def cache_states(split: SplitBody, ids: list[list[int]], path: Path, tag: str, chunk: int = 8) -> list[torch.Tensor]:
    """Lower-half states of every sequence, computed once and kept under ``path`` (keyed by the ids)."""
    return stored(_cache_file(path, tag, (split.first_adapted, ids)),
                  lambda: _in_chunks(ids, chunk, split.hidden, f"cache {tag}"))


def after_prefix(cache, p: int, mask: torch.Tensor) -> dict:
    """Forward arguments for right-padded rows that continue a cached prefix of ``p`` positions."""
    full = torch.cat([torch.ones(mask.shape[0], p, dtype=mask.dtype), mask], dim=1)
    positions = p + torch.arange(mask.shape[1]).expand(mask.shape[0], -1)
    return {"attention_mask": full, "position_ids": positions, "cache": cache, "use_cache": True}


def cache_after_prefix(split: SplitBody, ids: list[list[int]], path: Path, tag: str, chunk: int = 8):
    """``cache_states`` for sequences that share a long prefix (the clarify demos' system prompt):
    (prefix states [P, H], each sequence's tail states [T_i - P, H]), the prefix run once."""
    p = shared_prefix(ids)

    def build():
        prefix = split.prefix(ids[0][:p])
        tails = _in_chunks([one[p:] for one in ids], chunk, lambda part: split.hidden_after(prefix, part),
                           f"cache {tag} after a {p}-token prefix")
        return prefix[0], tails
    return stored(_cache_file(path, tag, ("after-prefix", split.first_adapted, ids)), build)


def _cache_file(path: Path, tag: str, key) -> Path:
    return path / f"cache-{tag}-{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}.pt"


def stored(file: Path, build):
    """What ``file`` holds, or ``build()``'s result, saved there first."""
    if file.is_file():
        return torch.load(file)
    value = build()
    file.parent.mkdir(parents=True, exist_ok=True)
    torch.save(value, file)
    return value


def _in_chunks(ids: list[list[int]], chunk: int, read, label: str) -> list[torch.Tensor]:
    """``read`` over chunks of similar-length sequences (they pad less), back in the given order."""
    t0, states = time.time(), [None] * len(ids)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), chunk):
        part = order[start : start + chunk]
        for i, h in zip(part, read([ids[i] for i in part])):
            states[i] = h
        if start % (25 * chunk) == 0:
            print(f"{label}: {start}/{len(ids)} sequences, {time.time() - t0:.0f} s", flush=True)
    return states
