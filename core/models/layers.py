"""A decoder body running only some of its layers: the same modules, no weight copied.

Training caches the frozen lower layers of a real body (``train.split_body``); the pooled readout reads
a middle layer's states (``core.decision.pooled``, ``core.decision.softening``). They cut the body the
same way, batch rows the same way (``right_padded``) and average states the same way (``mean_states``), and
keep the mean states they read lately the same way (``RecentStates``). A run that continues cached keys and
values gets them through ``holding``: ``DynamicCache(ddp_cache_data=...)`` would copy every tensor first.
"""

import copy
import threading
from collections import OrderedDict
from typing import Sequence

import torch


def view(decoder, layers: Sequence, norm=None):
    """A shallow copy of a decoder body running only ``layers`` (same modules, no weight copied);
    ``norm=Identity`` leaves the output un-normalised, as the next layer expects it."""
    part = copy.copy(decoder)
    part._modules = dict(decoder._modules)
    part._modules["layers"] = torch.nn.ModuleList(layers)
    if norm is not None:
        part._modules["norm"] = norm
    return part


def first_layers(decoder, n: int):
    """The body's first ``n`` layers, un-normalised: its output is the input of layer ``n``."""
    if not 1 <= n <= len(decoder.layers):
        raise ValueError(f"a body of {len(decoder.layers)} layers has no first {n}")
    return view(decoder, decoder.layers[:n], torch.nn.Identity())


def mean_states(lower, ids: Sequence[list[int]], skip: Sequence[int], batch: int = 16) -> torch.Tensor:
    """[N, H]: each id sequence's mean output of ``lower`` (a body's first layers) over its positions from
    ``skip[i]`` on (no grad, right-padded batches)."""
    out = []
    with torch.no_grad():
        for s in range(0, len(ids), batch):
            x, mask = right_padded([torch.tensor(one) for one in ids[s:s + batch]], torch.long)
            hidden = lower(input_ids=x, attention_mask=mask, use_cache=False).last_hidden_state.float()
            keep = mask.clone().float()
            for i, k in enumerate(skip[s:s + batch]):
                keep[i, :k] = 0.0
            out.append((hidden * keep[..., None]).sum(1) / keep.sum(1, keepdim=True).clamp(min=1.0))
    return torch.cat(out) if out else torch.zeros(0, lower.config.hidden_size)


def holding(layers: Sequence[tuple[torch.Tensor, torch.Tensor]]):
    """A transformers DynamicCache over exactly these per-layer ``(keys, values)`` [batch, heads, positions, dim], not
    copies (the constructor concatenates each onto an empty tensor, materialising an ``expand`` too). The model's
    ``update`` concatenates new positions onto them and never writes into them."""
    from transformers import DynamicCache

    cache = DynamicCache(ddp_cache_data=[(k[:, :, :0], v[:, :, :0]) for k, v in layers])
    for layer, (k, v) in zip(cache.layers, layers, strict=True):
        layer.keys, layer.values = k, v
    return cache


def right_padded(rows: Sequence[torch.Tensor], dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ids [T_i] or states [T_i, H] stacked right-padded with zeros, and the mask [B, T]."""
    width = max(r.shape[0] for r in rows)
    x = torch.zeros((len(rows), width, *rows[0].shape[1:]), dtype=dtype)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, r in enumerate(rows):
        x[i, : r.shape[0]], mask[i, : r.shape[0]] = r, 1
    return x, mask


class RecentStates:
    """The mean states of the latest id sequences read (at most ``size``; the least recently read dropped), so a
    state answered a moment ago is not read again for its familiarity. Safe to share between request threads."""

    def __init__(self, size: int):
        self.size, self._lock, self._kept = size, threading.Lock(), OrderedDict()

    def keep(self, ids: Sequence[int], states: torch.Tensor) -> None:
        with self._lock:
            self._kept[tuple(ids)] = states
            self._kept.move_to_end(tuple(ids))  # read again: the latest, not its first read's place
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def get(self, ids: Sequence[int]) -> torch.Tensor | None:
        with self._lock:
            return self._kept.get(tuple(ids))
