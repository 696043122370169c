"""A small cost model that picks the fastest Decider path for a request's shape.

Predicted time = per-layer call overhead x forward calls + linear-layer FLOPs x seconds/FLOP +
attention FLOPs x seconds/FLOP, with token and (query, key) pair counts exact for each path:
  reference: Q calls over P + L_q tokens each (causal, ~(P + L_q)^2 / 2 pairs);
  shared:    one prefill (P tokens) + one call per chunk of B right-padded suffixes of width W
             (B * W tokens, B * W * (P + W) pairs: the mask is dense);
  packed:    one call per token chunk; the first carries the prefix too (T x (P + T) pairs).
The three coefficients were fitted by least squares on bench/decide_latency.py timings on the
2-core dev CPU (fp32, one thread); refit with ``python -m bench.decide_latency --fit``.
"""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """What the cost depends on: prefix length, suffix lengths, and the body's config."""

    prefix: int
    suffixes: list[int]
    config: object


def _dims(cfg) -> tuple[int, float, float]:
    """(layers, linear FLOPs per token per layer, attention FLOPs per pair per layer)."""
    h, nh, nkv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or h // nh
    params = h * nh * hd * 2 + 2 * h * nkv * hd + 3 * h * cfg.intermediate_size
    return cfg.num_hidden_layers, 2.0 * params, 4.0 * nh * hd


@dataclass(frozen=True)
class CostModel:
    """Seconds = layers * (call_s * calls) + lin_s * linear FLOPs + att_s * attention FLOPs."""

    call_s: float = 2.0e-4
    """Python and kernel-launch overhead per layer per forward call."""
    lin_s: float = 1.0e-10
    """Seconds per linear-layer FLOP."""
    att_s: float = 2.0e-10
    """Seconds per attention FLOP (masked attention runs below GEMM speed)."""

    def terms(self, shape: Shape, path: str, limits) -> tuple[float, float, float]:
        """(calls, linear FLOPs, attention FLOPs) of ``path`` for ``shape``."""
        layers, per_tok, per_pair = _dims(shape.config)
        p, ls = shape.prefix, shape.suffixes
        if path == "reference":
            calls, toks, pairs = len(ls), sum(p + n for n in ls), sum((p + n) ** 2 / 2 for n in ls)
        elif path == "shared":
            calls, toks, pairs = 1, p, p * p / 2
            for i in range(0, len(ls), limits.question_chunk):
                chunk = ls[i:i + limits.question_chunk]
                b, w = len(chunk), max(chunk)
                calls, toks, pairs = calls + 1, toks + b * w, pairs + b * w * (p + w)
        elif path == "packed":
            calls, toks, pairs, first = 0, p, 0.0, True
            for t in _chunk_totals(ls, limits.packed_chunk_tokens):
                q = t + (p if first else 0)
                calls, toks, pairs, first = calls + 1, toks + t, pairs + q * (p + t), False
        else:
            raise ValueError(f"unknown path {path!r}")
        return layers * calls, layers * per_tok * toks, layers * per_pair * pairs

    def predict(self, shape: Shape, path: str, limits) -> float:
        calls, lin, att = self.terms(shape, path, limits)
        return self.call_s * calls + self.lin_s * lin + self.att_s * att

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


def fit(rows: list[tuple[float, float, float, float]]) -> CostModel:
    """Least-squares (non-negative by clipping) fit of (calls, lin, att, seconds) rows."""
    import numpy as np

    a = np.array([r[:3] for r in rows], dtype=np.float64)
    y = np.array([r[3] for r in rows], dtype=np.float64)
    scale = a.max(axis=0)
    scale[scale == 0] = 1.0
    coef, *_ = np.linalg.lstsq(a / scale, y, rcond=None)
    coef = np.clip(coef / scale, 1e-15, math.inf)
    return CostModel(float(coef[0]), float(coef[1]), float(coef[2]))
