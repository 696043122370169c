"""A decoder body running only some of its layers: the same modules, no weight copied.

Training caches the frozen lower layers of a real body (``train.split_body``); the pooled readout reads
a middle layer's states (``core.decision.pooled``). Both cut the body the same way, and batch rows the
same way (``right_padded``).
"""

import copy
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


def right_padded(rows: Sequence[torch.Tensor], dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ids [T_i] or states [T_i, H] stacked right-padded with zeros, and the mask [B, T]."""
    width = max(r.shape[0] for r in rows)
    x = torch.zeros((len(rows), width, *rows[0].shape[1:]), dtype=dtype)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, r in enumerate(rows):
        x[i, : r.shape[0]], mask[i, : r.shape[0]] = r, 1
    return x, mask
