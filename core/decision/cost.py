"""A small cost model that picks the fastest Decider path for a request's shape.

Predicted time = per-layer call overhead x forward calls + linear-layer FLOPs x s/FLOP + causal
(unmasked, fast-kernel) attention FLOPs x s/FLOP + masked attention FLOPs x s/FLOP + K/V elements
copied (cache concatenation and GQA head repeat, per batch row) x s/element, with token, (query,
key) pair and key counts exact for each path:
  reference: Q calls over P + L_q tokens each (causal kernel, (P + L_q)^2 / 2 pairs);
  shared:    causal prefill of P tokens + one call per chunk of B right-padded suffixes of width W
             (B * W tokens, B * W * (P + W) masked pairs: the mask is dense);
  packed:    one call per token chunk of T suffix tokens; the first carries the prefix too
             ((P + T)^2 masked pairs), later ones T * (P + T).
The defaults were fitted by least squares (``python -m bench.decide_latency --quick --fit``, CPU
time, fp32, one thread, hidden 256 x 6 layers) on the 2-core dev machine; only their ratios matter
for the choice, and a wrong pick between (b) and (c) costs little since both share the state.
"""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """What the cost depends on: prefix length, suffix lengths, and the body's config."""

    prefix: int
    suffixes: list[int]
    config: object


def _dims(cfg) -> tuple[int, float, float, float]:
    """Per layer: (layers, linear FLOPs per token, attention FLOPs per pair, K/V elements copied per key)."""
    h, nh, nkv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or h // nh
    params = h * nh * hd * 2 + 2 * h * nkv * hd + 3 * h * cfg.intermediate_size
    return cfg.num_hidden_layers, 2.0 * params, 4.0 * nh * hd, 2.0 * (nkv + nh) * hd


@dataclass(frozen=True)
class CostModel:
    """Seconds = call_s * layer-calls + lin_s * linear FLOPs + causal_s * causal attention FLOPs
    + masked_s * masked attention FLOPs."""

    call_s: float = 1.2e-3
    """Python and kernel-launch overhead per layer per forward call."""
    lin_s: float = 8.5e-12
    """Seconds per linear-layer FLOP."""
    causal_s: float = 2.5e-11
    """Seconds per FLOP of unmasked causal attention (sdpa's fast path)."""
    masked_s: float = 1.6e-11
    """Seconds per FLOP of attention under an explicit mask (slower kernels on CPU)."""
    copy_s: float = 1.0e-9
    """Seconds per key/value element copied (memory-bound)."""

    def terms(self, shape: Shape, path: str, limits) -> tuple[float, ...]:
        """(layer-calls, linear FLOPs, causal attention FLOPs, masked attention FLOPs, K/V copies)."""
        layers, per_tok, per_pair, per_key = _dims(shape.config)
        p, ls = shape.prefix, shape.suffixes
        masked = 0.0
        if path == "reference":
            calls, toks, causal = len(ls), sum(p + n for n in ls), sum((p + n) ** 2 / 2 for n in ls)
            keys = toks
        elif path == "shared":
            calls, toks, causal, keys = 1, p, p * p / 2, p
            for i in range(0, len(ls), limits.question_chunk):
                chunk = ls[i:i + limits.question_chunk]
                b, w = len(chunk), max(chunk)
                calls, toks, masked, keys = calls + 1, toks + b * w, masked + b * w * (p + w), keys + b * (p + w)
        elif path == "packed":
            calls, toks, causal, keys, first = 0, p, 0.0, 0, True
            for t in _chunk_totals(ls, limits.packed_chunk_tokens):
                q = t + (p if first else 0)
                calls, toks, masked, keys, first = calls + 1, toks + t, masked + q * (p + t), keys + p + t, False
        else:
            raise ValueError(f"unknown path {path!r}")
        return (layers * calls, layers * per_tok * toks, layers * per_pair * causal, layers * per_pair * masked,
                layers * per_key * keys)

    def predict(self, shape: Shape, path: str, limits) -> float:
        """Predicted seconds of ``path`` for ``shape``."""
        coef = (self.call_s, self.lin_s, self.causal_s, self.masked_s, self.copy_s)
        return sum(c * t for c, t in zip(coef, self.terms(shape, path, limits)))

    def choose(self, shape: Shape, limits) -> str:
        """The fastest predicted path; one question always takes the reference (same work, one call)."""
        if len(shape.suffixes) == 1:
            return "reference"
        return min(("reference", "shared", "packed"), key=lambda path: self.predict(shape, path, limits))


def _chunk_totals(lengths: list[int], budget: int) -> list[int]:
    """Token totals of the packed path's chunks (same grouping as the Decider's)."""
    out, cur = [], 0
    for n in lengths:
        if cur and cur + n > budget:
            out.append(cur)
            cur = 0
        cur += n
    return out + [cur] if cur or not out else out


def fit(rows: list[tuple[float, ...]]) -> CostModel:
    """Least-squares fit (clipped to positive) of rows (layer-calls, lin, causal, masked, copies, seconds)."""
    import numpy as np

    a = np.array([r[:-1] for r in rows], dtype=np.float64)
    y = np.array([r[-1] for r in rows], dtype=np.float64)
    scale = a.max(axis=0)
    scale[scale == 0] = 1.0
    coef, *_ = np.linalg.lstsq(a / scale, y, rcond=None)
    coef = np.clip(coef / scale, 1e-15, math.inf)
    return CostModel(*(float(c) for c in coef))
