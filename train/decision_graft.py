"""Graft a fitted attention head into the top layer of SmolLM2: the letter readout LoRA alone did not learn.

Why (results/smollm2_decision/fit_probes.md): a LoRA trained on the letter memorises tickets, yet the frozen
body knows a ticket's department (a linear readout: 0.70 on unseen families), each option's own tokens name
the option and the letter before it (both linearly, 0.93-1.0). One attention head at the last layer can join
them: the last token's query meets each option's keys (which option fits the state), and the values copy that
option's letter. So the head is fitted on the cached input states of that layer (no body passes), then
written into its q/k/v/o as a LoRA over ONE query head, and exported as an adapter arm that
``train.decision_smollm2 --stage warmup --init ARM --top_layers 1`` continues.

On standardised layer inputs x~ (the layer's input norm applied), the head computes
    s_j = (U x~_last) . (V x~_j) / sqrt(r) + (c + lam * g) . x~_j      over every token j
    letter logits = beta * sum_j softmax(s)_j (P x~_j + p) + base letter logits + bias
g (the gate) and P (that option's letter) are linear probes fitted first; U and V start from the rank-r SVD of
a convex bilinear (L-BFGS). Two designs (``--keys``): *identity* (shipped since session 20) gates on each
option line's end, one token a line, and the bilinear scores which option of the pool's vocabulary that line
names; *option* (the arms shipped before) gates on every option token, the bilinear over option means, which
weights a line's tokens unevenly (results/smollm2_decision/graft/probes.md). ``--query below`` (tried in
session 21, not shipped: results/smollm2_decision/graft/query/rule.md) replaces the query with the mean of every
token, handed down by a zero-query head in the layer below (train/decision_graft_query.py). The write: head H's query is
replaced by [U x~; 1] in its slowest rotary dims (positions barely turn them), the same dims of its key
group by [V x~; (c + lam g) x~], 26 value dims of that group by the letter probe, and H's block of o_proj by
the letter directions through the final norm (the pseudo-inverse of the readout rows); the bias goes into
the rows along the mean final state. What the write does not carry (the group's other two heads see the
changed keys and values, the MLP reads the new output) the warmup that follows trains away.

    python -m train.decision_graft --out runs/smollm2-graft/graft
"""

import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from core.decision.batches import prompt_of, tokenize_prompts
from core.decision.prompt import LETTERS, letter_token_ids, render_prompt
from core.decision.readout import last_real_index
from train.decision_run import evaluate_probs, parse_config
from train.decision_smollm2 import BASE, SmolConfig, pool, probs_of
from train.decision_graft_query import top_inputs
from train.split_body import SplitBody, cache_states

OUTSIDE = -1
"""Token role of everything that is not an option's text (state, question, letters, the answer cue)."""
KEYS = ("identity", "option")
"""The two designs (``GraftConfig.keys``; the module docstring)."""
QUERIES = ("last", "below")
"""Where the head's query comes from (``GraftConfig.query``): the last token's own state, or the mean of every
token, which a zero-query head in the layer below writes into it (train/decision_graft_query.py)."""


@dataclass(frozen=True)
class GraftConfig:
    """Fit one head on the warmup pool's cached last-layer inputs and write it into the body."""

    out: str = field(default="runs/smollm2-graft/graft", metadata={"help": "run directory (the arm in OUT/model)"})
    base: str = field(default=BASE, metadata={"help": "the real base (packaged GGUF or a model folder)"})
    natural: str = field(default="runs/data/natural", metadata={"help": "natural-ticket dataset"})
    synthetic: str = field(default="runs/data/decision", metadata={"help": "synthetic dataset"})
    rows: int = field(default=3000, metadata={"help": "warmup-pool rows the head is fitted on"})
    natural_share: float = field(default=0.6, metadata={"help": "share of those rows from natural tickets"})
    val_rows: int = field(default=300, metadata={"help": "val rows (read after each stage)"})
    probe_rows: int = field(default=600, metadata={"help": "rows whose tokens fit the token probes"})
    rank: int = field(default=16, metadata={"help": "query/key dims of the head (its slowest rotary dims)"})
    head: int = field(default=5, metadata={"help": "the query head that is replaced"})
    l2: float = field(default=0.3, metadata={"help": "L2 of the convex bilinear"})
    keys: str = field(default="identity", metadata={
        "help": "option: every option token keyed by a bilinear over option means; identity: each line end keyed by "
                "which option of the pool's vocabulary its line holds"})
    query: str = field(default="last", metadata={
        "help": "last: the last token's state; below: the mean of every token, handed down by a zero-query head in "
                "the layer below (the graft then adapts the top two layers)"})
    below_rank: int = field(default=16, metadata={"help": "dims of that mean the layer below writes (--query below)"})
    lam: float = field(default=5.0, metadata={"help": "weight of the gate probe (option text / line end) in the keys"})
    beta: float = field(default=15.0, metadata={"help": "initial letter scale (logits per unit of letter score)"})
    steps: int = field(default=1600, metadata={"help": "AdamW steps fitting the head's own form"})
    lr: float = field(default=3e-4, metadata={"help": "its learning rate"})
    batch: int = field(default=64, metadata={"help": "rows per step"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    seed: int = field(default=0, metadata={"help": "row order and init seed"})


# ---- token roles and the layer's inputs


def token_roles(tokenizer, prompt) -> list[int]:
    """Each token's role in the published prompt: option i's line after its letter, line end included, is i; else ``OUTSIDE``."""
    text = render_prompt(prompt.state, prompt.question, list(prompt.options))
    start = text.index("\nOptions:\n") + len("\nOptions:\n")
    spans = []
    for i, option in enumerate(prompt.options):
        line = f"{LETTERS[i]}) {option.strip()}"
        spans.append((start + len(LETTERS[i]), start + len(line) + 1))
        start += len(line) + 1
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return [next((i for i, (a, b) in enumerate(spans) if a <= lo < b), OUTSIDE) for lo, _ in offsets]


@dataclass
class LayerInputs:
    """Standardised inputs of the last layer per row, each row's token roles, and the base's letter logits."""

    x: list[torch.Tensor]
    roles: list[torch.Tensor]
    base_logits: torch.Tensor
    n_options: torch.Tensor
    labels: torch.Tensor
    queries: torch.Tensor | None = None
    """[rows, q] the head's query inputs when they are not the last token's state (``--query below``)."""

    def query_rows(self) -> torch.Tensor:
        return self.queries if self.queries is not None else torch.stack([x[-1] for x in self.x])

    def batch(self, idx):
        xs = [self.x[i] for i in idx]
        width = max(len(x) for x in xs)
        X = torch.zeros(len(xs), width, xs[0].shape[-1])
        real = torch.zeros(len(xs), width, dtype=torch.bool)
        for b, x in enumerate(xs):
            X[b, : len(x)], real[b, : len(x)] = x, True
        last = self.queries[idx] if self.queries is not None else torch.stack([x[-1] for x in xs])
        return X, real, last, self.base_logits[idx], self.n_options[idx], self.labels[idx]


def standardiser(normed: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.cat(normed)
    return tokens.mean(0), tokens.std(0) + 1e-3


# ---- the three fits (pure: tensors in, tensors out)


def line_ends(roles: torch.Tensor) -> torch.Tensor:
    """True at each option line's last token (the newline ending it): one token a line."""
    after = torch.cat([roles[1:], torch.tensor([OUTSIDE])])
    return (roles != OUTSIDE) & (after != roles)


def fit_token_probes(x: list[torch.Tensor], roles: list[torch.Tensor], keys: str) -> dict:
    """g, the gate: is this token an option's text (keys "option") or an option line's end (keys "identity")
    (logistic); P, p: that option's letter as a one-hot (ridge)."""
    from sklearn.linear_model import LogisticRegression, Ridge

    X, r = torch.cat(x).numpy(), torch.cat(roles).numpy()
    target = torch.cat([line_ends(one) for one in roles]).numpy() if keys == "identity" else r != OUTSIDE
    g = LogisticRegression(C=0.01, max_iter=2000).fit(X, target)
    Y = torch.zeros(len(r), len(LETTERS))
    inside = torch.from_numpy(r != OUTSIDE)
    Y[inside, torch.from_numpy(r)[inside]] = 1
    letter = Ridge(alpha=10.0).fit(X, Y.numpy())
    return {"g": torch.tensor(g.coef_[0], dtype=torch.float32),
            "P": torch.tensor(letter.coef_, dtype=torch.float32), "p": torch.tensor(letter.intercept_, dtype=torch.float32)}


def option_means(x: torch.Tensor, roles: torch.Tensor) -> torch.Tensor:
    """[26, H] mean of each option's text tokens (zeros past the option count)."""
    out = torch.zeros(len(LETTERS), x.shape[-1])
    for i in range(int(roles.max()) + 1):
        out[i] = x[roles == i].mean(0)
    return out


def fit_bilinear(data: LayerInputs, l2: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Convex init: logit_i = x~_last^T M k_i + w . k_i over option means k_i, L2 on M and w, full-batch L-BFGS."""
    K = torch.stack([option_means(x, r) for x, r in zip(data.x, data.roles)])
    return convex_scores(data.query_rows(), K, data, l2)


def convex_scores(q: torch.Tensor, K: torch.Tensor, data: LayerInputs, l2: float) -> tuple[torch.Tensor, torch.Tensor]:
    """logit_i = q^T M K_i + w . K_i over each row's options (K: [rows, 26, k]), L2 on M and w, fitted to the
    rows' labels by full-batch L-BFGS: convex in (M, w)."""
    M = torch.zeros(q.shape[1], K.shape[-1], requires_grad=True)
    w = torch.zeros(K.shape[-1], requires_grad=True)
    beyond = torch.arange(len(LETTERS))[None] >= data.n_options[:, None]
    opt = torch.optim.LBFGS([M, w], lr=1, max_iter=100, history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        logits = (torch.einsum("bh,hk,bok->bo", q, M, K) + K @ w).masked_fill(beyond, -1e4)
        loss = torch.nn.functional.cross_entropy(logits, data.labels) + l2 * (M.square().sum() + w.square().sum()) / len(q)
        loss.backward()
        return loss

    opt.step(closure)
    return M.detach(), w.detach()


def fit_identity_bilinear(data: LayerInputs, options: list[list[str]], probe_rows: int, l2: float):
    """Convex init for line-end keys: k_i = D x~_end(i), a ridge readout of which option of the pool's vocabulary
    line i holds (fitted on the first ``probe_rows`` rows' line ends), then logit_i = x~_last^T W k_i + c . k_i by
    L-BFGS; returned as the bilinear over raw tokens, M = W D and w = D^T c (the intercept's terms are the same
    for every line, so the softmax over lines drops them).

    Why (results/smollm2_decision/graft/probes.md, session 20): one token a line leaves no weighting within a
    line to get wrong, and a line end names its option (a linear probe, 99.9% of val lines) though a bilinear
    over its raw state reads far less than one over the option's identity."""
    from sklearn.linear_model import Ridge

    vocab = sorted({o.strip() for row in options for o in row})
    index = {o: i for i, o in enumerate(vocab)}
    ends = [x[line_ends(r)] for x, r in zip(data.x, data.roles)]
    ids = [torch.tensor([index[o.strip()] for o in row]) for row in options]
    X, Y = torch.cat(ends[:probe_rows]), torch.nn.functional.one_hot(torch.cat(ids[:probe_rows]), len(vocab))
    ridge = Ridge(alpha=10.0).fit(X.numpy(), Y.float().numpy())
    D = torch.tensor(ridge.coef_, dtype=torch.float32)
    K = torch.zeros(len(ends), len(LETTERS), len(vocab))
    for b, e in enumerate(ends):
        K[b, : len(e)] = e @ D.T
    W, c = convex_scores(data.query_rows(), K, data, l2)
    return W @ D, D.T @ c


class Head(torch.nn.Module):
    """The graft's own form on standardised inputs (see the module docstring); probes frozen."""

    def __init__(self, M: torch.Tensor, w: torch.Tensor, probes: dict, rank: int, lam: float, beta: float):
        super().__init__()
        u, s, vt = torch.linalg.svd(M)
        scale = s[:rank].sqrt() * rank ** 0.25
        self.U = torch.nn.Parameter((u[:, :rank] * scale).T.contiguous())
        self.V = torch.nn.Parameter((vt[:rank].T * scale).T.contiguous())
        self.c = torch.nn.Parameter(w.clone())
        self.beta = torch.nn.Parameter(torch.tensor(float(beta)))
        self.bias = torch.nn.Parameter(torch.zeros(len(LETTERS)))
        self.rank, self.lam = rank, lam
        for k, v in probes.items():
            self.register_buffer(k, v)

    def scores(self, X, last):
        keys = self.c + self.lam * self.g
        return ((last @ self.U.T)[:, None] * (X @ self.V.T)).sum(-1) / math.sqrt(self.rank) + X @ keys

    def forward(self, X, real, last, base_logits, n_options):
        a = torch.softmax(self.scores(X, last).masked_fill(~real, -1e9), -1)
        letters = self.beta * (torch.einsum("bt,bth->bh", a, X) @ self.P.T + self.p) + base_logits + self.bias
        return letters.masked_fill(torch.arange(len(LETTERS))[None] >= n_options[:, None], -1e4)


def fit_head(head: Head, data: LayerInputs, steps: int, lr: float, batch: int, seed: int) -> Head:
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=0.0)
    rng = random.Random(seed)
    for _ in range(steps):
        X, real, last, base, n, y = data.batch(rng.sample(range(len(data.x)), min(batch, len(data.x))))
        loss = torch.nn.functional.cross_entropy(head(X, real, last, base, n), y)
        opt.zero_grad(); loss.backward(); opt.step()
    return head


# ---- the write


def slow_rotary_dims(head_dim: int, n: int) -> list[int]:
    """``n`` query/key dims whose rotary angle turns slowest with position (pairs i, i + head_dim / 2)."""
    half = head_dim // 2
    return [d for i in range(half - 1, -1, -1) for d in (i, i + half)][:n]


def graft_lora(layer: int, rank: int, head_dim: int, below: int | None = None, below_rank: int = 0):
    """The LoRA config the write fills: q (the head's own rows out, ours in), k, v (replace dims), o (one head's block);
    with ``below``, that layer's too (``train.decision_graft_query.write_below``)."""
    from peft import LoraConfig

    from train.decision_graft_query import below_ranks

    if head_dim < len(LETTERS) or head_dim < 2 * (rank + 1) or head_dim < below_rank:
        raise ValueError(f"a head of {head_dim} dims cannot hold 26 letter values, {rank + 1} query dims "
                         f"and {below_rank} handed-down dims")
    ranks = {"q_proj": head_dim + rank + 1, "k_proj": 2 * (rank + 1), "v_proj": 2 * len(LETTERS), "o_proj": head_dim}
    layers = [layer]
    if below is not None:
        top = {f"layers.{layer}.self_attn.{k}": v for k, v in ranks.items()}
        ranks = {**below_ranks(below, head_dim, below_rank), **top}
        layers = [below, layer]
    return LoraConfig(r=8, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                      layers_to_transform=layers, rank_pattern=ranks, alpha_pattern=ranks)


def query_map(head: Head, mu: torch.Tensor, sd: torch.Tensor, read: tuple | None = None):
    """The head's query as a map on the layer's normed input [r, H] and a constant [r]: U over the last token's
    standardised input, or with ``read`` = (R [k, H], its mean, its sd) over what the layer below wrote, R x
    standardised."""
    if read is None:
        return head.U / sd, -(head.U @ (mu / sd))
    R, mean, spread = read
    return (head.U / spread) @ R, -(head.U @ (mean / spread))


def write_head(attn, head: Head, h: int, query: tuple, mu: torch.Tensor, sd: torch.Tensor, last_mean: torch.Tensor,
               letter_dirs: torch.Tensor) -> None:
    """Fill the LoRA of one attention module so that query head ``h`` computes ``head`` (see the docstring).

    Args:
        query: ``query_map``'s (map, constant) of the head's query.
        last_mean: mean normed input at the last token (x . last_mean / |last_mean|^2 ~= 1 there: the constant).
        letter_dirs: [H, 26] residual directions that add one logit to each letter after the final norm.
    """
    hd = attn.head_dim
    g, r = h // attn.num_key_value_groups, head.rank
    dims = slow_rotary_dims(hd, r + 1)
    U, q0 = query  # the query's constant part becomes a key-only term
    V = head.V / sd
    keys = (head.c + head.lam * head.g + head.V.T @ q0 / math.sqrt(r)) / sd
    root = math.sqrt(math.sqrt(hd))  # q . k / sqrt(hd) == (U x~) . (V x~) / sqrt(r)
    lora = {name: (getattr(attn, name).lora_A["default"].weight, getattr(attn, name).lora_B["default"].weight)
            for name in ("q_proj", "k_proj", "v_proj", "o_proj")}
    base = {name: getattr(attn, name).base_layer.weight for name in lora}
    with torch.no_grad():
        for A, B in lora.values():
            A.zero_(); B.zero_()
        A, B = lora["q_proj"]
        A[:hd] = base["q_proj"][h * hd:(h + 1) * hd]
        B[h * hd:(h + 1) * hd, :hd] = -torch.eye(hd)
        A[hd:hd + r] = U * root / r ** 0.25
        A[hd + r] = last_mean / (last_mean @ last_mean) * root
        B[[h * hd + d for d in dims], list(range(hd, hd + r + 1))] = 1.0
        A, B = lora["k_proj"]
        for k, d in enumerate(dims):
            A[k], B[g * hd + d, k] = base["k_proj"][g * hd + d], -1.0
            A[r + 1 + k] = V[k] * root / r ** 0.25 if k < r else keys * root
            B[g * hd + d, r + 1 + k] = 1.0
        A, B = lora["v_proj"]
        n = len(LETTERS)
        for k in range(n):
            A[k], B[g * hd + k, k] = base["v_proj"][g * hd + k], -1.0
            A[n + k], B[g * hd + k, n + k] = head.P[k] / sd, 1.0
        A, B = lora["o_proj"]
        A[torch.arange(hd), h * hd + torch.arange(hd)] = 1.0
        block = torch.zeros(base["o_proj"].shape[0], hd)
        block[:, :n] = letter_dirs * head.beta
        B[:] = block - base["o_proj"][:, h * hd:(h + 1) * hd]


def letter_bias(head: Head, mu: torch.Tensor, sd: torch.Tensor) -> torch.Tensor:
    """The head's constant letter logits: its bias and the values' constant part (dropped from the write)."""
    return head.bias + head.beta * (head.p - head.P @ (mu / sd))


# ---- the run


def main(config: GraftConfig) -> dict:
    from peft import get_peft_model

    from core.decision.export.adapter import export_adapter_arm
    from core.models.loader import load_location

    if config.keys not in KEYS or config.query not in QUERIES:
        raise ValueError(f"--keys must be one of {KEYS} and --query one of {QUERIES}, "
                         f"got {config.keys!r}, {config.query!r}")
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    t0, log = time.time(), {}
    loaded = load_location(config.base)
    model, tok = loaded.model, loaded.tokenizer
    layer = len(model.get_decoder().layers) - 1
    below = layer - 1 if config.query == "below" else None
    top = 1 if below is None else 2
    smol = SmolConfig(base=config.base, natural=config.natural, synthetic=config.synthetic, rows=config.rows,
                      natural_share=config.natural_share, val_rows=config.val_rows, top_layers=top, seed=config.seed)
    rows = model.get_output_embeddings().weight[torch.tensor(letter_token_ids(tok))].detach().float().clone()
    peft = get_peft_model(model, graft_lora(layer, config.rank, model.config.head_dim, below, config.below_rank))
    peft.eval()  # every LoRA starts as no change (B = 0) until a write fills it
    decoder = peft.get_decoder()
    split = SplitBody.of(decoder, top)
    cache = Path(config.out).parent / "cache"
    cut = {}
    for which, tag, n in (("train", "warmup-pool", config.rows), ("val", "val", config.val_rows)):
        labelled = pool(smol, which, n)
        prompts = [prompt_of(r) for r in labelled]
        ids = tokenize_prompts(tok, prompts)
        cut[which] = (labelled, prompts, cache_states(split, ids, cache, tag))  # the files the runs' stages read
    roles = {which: [torch.tensor(token_roles(tok, p)) for p in cut[which][1]] for which in cut}
    options = [r.options for r in cut["train"][0]]
    if below is not None:
        from train.decision_graft_query import hand_down

        log["below"], directions = hand_down(split, cut["train"][2], roles["train"], options,
                                             torch.tensor([r.label for r in cut["train"][0]]), config)
    sets = {}
    for which, (labelled, prompts, states) in cut.items():
        with torch.no_grad():
            normed = [decoder.layers[layer].input_layernorm(s) for s in top_inputs(split, states)]
            finals = torch.cat([_last_states(split, states[s:s + 32]) for s in range(0, len(states), 32)])
        sets[which] = (labelled, prompts, states, normed, finals)
    labelled, prompts, _, normed, finals = sets["train"]
    mu, sd = standardiser(normed[: config.probe_rows])
    read = None
    if below is not None:
        from train.decision_graft_query import handed_down

        R = handed_down(decoder.layers[layer], directions)
        reads = torch.stack([x[-1] for x in normed]) @ R.T
        read = (R, reads.mean(0), reads.std(0) + 1e-6)

    def inputs(which, base_logits):
        labelled, _, _, normed, _ = sets[which]
        x = [(one - mu) / sd for one in normed]
        queries = None if read is None else (torch.stack([one[-1] for one in normed]) @ read[0].T - read[1]) / read[2]
        return LayerInputs(x, roles[which], base_logits, torch.tensor([len(r.options) for r in labelled]),
                           torch.tensor([r.label for r in labelled]), queries)

    with torch.no_grad():
        train = inputs("train", finals @ rows.T)
        val = inputs("val", sets["val"][4] @ rows.T)
    probes = fit_token_probes(train.x[: config.probe_rows], train.roles[: config.probe_rows], config.keys)
    if config.keys == "identity":
        M, w = fit_identity_bilinear(train, options, config.probe_rows, config.l2)
    else:
        M, w = fit_bilinear(train, config.l2)
    log["fits_s"] = round(time.time() - t0)
    head = fit_head(Head(M, w, probes, config.rank, config.lam, config.beta), train, config.steps, config.lr,
                    config.batch, config.seed)
    with torch.no_grad():
        X, real, last, base, n, _ = val.batch(list(range(len(val.x))))
        log["val_head_form"] = evaluate_probs(sets["val"][0], torch.softmax(head(X, real, last, base, n), -1).double().numpy())
    last_mean = torch.stack([x[-1] for x in normed]).mean(0)
    final_mean = finals.mean(0)
    rows = rows + torch.outer(letter_bias(head, mu, sd), final_mean / (final_mean @ final_mean))
    gamma = decoder.norm.weight.detach().float()
    final_rms = _final_rms(split, sets["val"][2][:64])
    letter_dirs = torch.linalg.pinv(gamma[None] * rows) * final_rms
    write_head(decoder.layers[layer].self_attn, head, config.head, query_map(head, mu, sd, read), mu, sd, last_mean,
               letter_dirs)
    log["val_written"] = evaluate_probs(sets["val"][0], probs_of(split, rows, sets["val"][2], sets["val"][1]))
    log.update(wall_s=round(time.time() - t0), final_rms=final_rms, config=vars(config))
    out = Path(config.out)
    export_adapter_arm(out / "model", peft, rows, tok, base=config.base, layers=list(range(layer + 1 - top, layer + 1)),
                       training={"arm": "graft", "recipe": "a fitted attention head written into the last layer",
                                 "keys": config.keys, "query": config.query, "head": config.head, "rank": config.rank,
                                 "seed": config.seed, "val_written": log["val_written"], "wall_s": log["wall_s"]})
    (out / "graft_log.json").write_text(json.dumps(log, indent=2, default=float) + "\n")
    return log


def _last_states(split: SplitBody, states) -> torch.Tensor:
    """The final normed state at each row's last token (no grad)."""
    out, mask = split.states(states)
    return out[torch.arange(out.shape[0]), last_real_index(mask)]


def _final_rms(split: SplitBody, states) -> float:
    """Median RMS of the last token's state before the final norm: the scale the norm divides by."""
    seen = []
    hook = split.upper.norm.register_forward_hook(lambda m, i, o: seen.append(i[0].detach()))
    with torch.no_grad():
        for s in range(0, len(states), 32):
            _, mask = split.states(states[s:s + 32])
            seen[-1] = seen[-1][torch.arange(mask.shape[0]), last_real_index(mask)]
    hook.remove()
    return float(torch.cat(seen).pow(2).mean(-1).sqrt().median())


if __name__ == "__main__":
    print(json.dumps(main(parse_config(GraftConfig)), indent=2, default=float))
