"""A decoder body running only some of its layers: the same modules, no weight copied.

Training caches the frozen lower layers of a real body (``train.split_body``); the pooled readout reads
a middle layer's states (``core.decision.pooled``). Both cut the body the same way.
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
