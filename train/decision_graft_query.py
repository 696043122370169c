"""The layer below hands the grafted head its query: a head with a zero query attends evenly to every token.

Why (results/smollm2_decision/graft/query/): the identity bilinear the top head approximates reads departments
0.63 on val with the last token's own state as its query, ~0.71 with the mean of every token; the top head's
query can only come from the last token. A head whose query is zero weighs every token before it alike, so at
the last token it hands over the prompt's mean, which replaces the top head's query. Its values are a rank-r
readout of the layer's standardised inputs (the part of that mean the bilinear uses), kept small in the value dims
its group's other heads also read, and its output block writes them into the r least-varying directions of the
residual stream, where the top head's query reads them back. The rest of the body sees a change ten times those
directions' own spread; the warmup that follows trains the two layers on from there.

Tried once (session 21, results/smollm2_decision/graft/query/rule.md): natural departments rose on val, the arm
grew more confident and RLCD did not calm it; nothing shipped.

    python -m train.decision_graft --query below --out runs/smollm2-query/graft
"""

import torch

from core.decision.prompt import LETTERS
from train.split_body import SplitBody


def quiet_directions(residual: torch.Tensor, n: int) -> torch.Tensor:
    """[H, n] orthonormal directions along which the residual states [N, H] vary least (their covariance's
    smallest eigenvectors, least first)."""
    centred = residual - residual.mean(0)
    _, vectors = torch.linalg.eigh(centred.T @ centred / len(residual))
    return vectors[:, :n].contiguous()


def top_inputs(split: SplitBody, states: list[torch.Tensor], chunk: int = 32) -> list[torch.Tensor]:
    """Each row's input [T_i, H] of the body's top layer, from its cached states at the cut (no grad): the
    cache itself when the cut is the top layer, else through the adapted layers below it."""
    if len(split.upper.layers) == 1:
        return list(states)
    seen, out = [], []
    hook = split.upper.layers[-1].register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(args[0] if args else kwargs["hidden_states"]), with_kwargs=True)
    try:
        with torch.no_grad():
            for s in range(0, len(states), chunk):
                part = states[s:s + chunk]
                split.states(part)
                batch = seen.pop()
                out.extend(batch[i, : len(x)].clone() for i, x in enumerate(part))
    finally:
        hook.remove()
    return out


def quietest_head(split: SplitBody, states: list[torch.Tensor], attn) -> int:
    """The query head of ``attn`` (a layer of ``split``'s upper half) whose output block adds least to the
    residual over the rows' real tokens: the one the zero-query head replaces."""
    hd, n = attn.head_dim, attn.config.num_attention_heads
    seen = []
    hook = attn.o_proj.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    try:
        with torch.no_grad():
            _, mask = split.states(states)
    finally:
        hook.remove()
    z = seen[0][mask.bool()].reshape(-1, n, hd)
    weight = _base(attn.o_proj).reshape(-1, n, hd)
    return int(min(range(n), key=lambda h: float((z[:, h] @ weight[:, h].T).norm(dim=-1).mean())))


def quiet_value_dims(attn, inputs: torch.Tensor, h: int, n: int) -> list[int]:
    """``n`` value dims of head ``h``'s key group whose loss the group's other heads feel least: their spread
    over ``inputs`` (normed, [N, H]) times the norm of the other heads' output columns reading them."""
    hd, group = attn.head_dim, attn.num_key_value_groups
    g = h // group
    values = inputs @ _base(attn.v_proj)[g * hd:(g + 1) * hd].T
    others = [o for o in range(g * group, (g + 1) * group) if o != h]
    o = _base(attn.o_proj)
    reach = sum((o[:, k * hd:(k + 1) * hd] ** 2).sum(0) for k in others) if others else torch.ones(hd)
    return sorted(range(hd), key=lambda d: float(values[:, d].std() * reach[d].sqrt()))[:n]


def write_below(attn, h: int, readout: torch.Tensor, dims: list[int], directions: torch.Tensor, small: float,
                gain: float) -> None:
    """Fill the LoRA of the layer below's attention so that query head ``h`` has a zero query (every token
    weighed alike), its group's value dims ``dims`` hold ``small * readout @ x`` (readout: [r, H] on the normed
    input) and its output block writes them as ``gain * directions`` [H, r] (its own old output removed)."""
    hd, r = attn.head_dim, len(dims)
    g = h // attn.num_key_value_groups
    lora = {name: (getattr(attn, name).lora_A["default"].weight, getattr(attn, name).lora_B["default"].weight)
            for name in ("q_proj", "k_proj", "v_proj", "o_proj")}
    with torch.no_grad():
        for A, B in lora.values():
            A.zero_(); B.zero_()
        A, B = lora["q_proj"]
        A[:hd] = _base(attn.q_proj)[h * hd:(h + 1) * hd]
        B[h * hd:(h + 1) * hd, :hd] = -torch.eye(hd)
        A, B = lora["v_proj"]
        for k, d in enumerate(dims):
            A[k], B[g * hd + d, k] = _base(attn.v_proj)[g * hd + d], -1.0
            A[r + k], B[g * hd + d, r + k] = readout[k] * small, 1.0
        A, B = lora["o_proj"]
        A[torch.arange(hd), h * hd + torch.arange(hd)] = 1.0
        block = torch.zeros(_base(attn.o_proj).shape[0], hd)
        block[:, dims] = directions * gain
        B[:] = block - _base(attn.o_proj)[:, h * hd:(h + 1) * hd]


def hand_down(split: SplitBody, states: list[torch.Tensor], roles: list[torch.Tensor], options: list[list[str]],
              labels: torch.Tensor, config) -> tuple[dict, torch.Tensor]:
    """Write the zero-query head into the layer below the top (``split``'s upper half, two layers, LoRA at zero).

    Its readout: the identity bilinear fitted with the mean of every token's standardised input below as its query
    (train.decision_graft.fit_identity_bilinear, its line-end keys read on ``config.probe_rows`` rows); the
    ``config.below_rank`` directions of that mean the bilinear weighs most (its SVD). Scales: the values stay a
    tenth of the spread of the value dims they replace; the residual write spreads ten times as far as the quiet
    directions do by themselves. Returns what was chosen (head, dims, scales) and the directions [H, r]."""
    from train.decision_graft import LayerInputs, fit_identity_bilinear, standardiser

    below, top = split.upper.layers[0], split.upper.layers[-1]
    attn, r, n = below.self_attn, config.below_rank, config.probe_rows
    with torch.no_grad():
        residual = top_inputs(split, states)
        normed_top = [top.input_layernorm(x) for x in residual]
        normed_below = [below.input_layernorm(x) for x in states]
    mu, sd = standardiser(normed_top[:n])
    mu_b, sd_b = standardiser(normed_below[:n])
    x = [(one - mu) / sd for one in normed_top]
    means = torch.stack([((one - mu_b) / sd_b).mean(0) for one in normed_below])
    n_options = torch.tensor([len(o) for o in options])
    data = LayerInputs(x, roles, torch.zeros(len(x), len(LETTERS)), n_options, labels, means)
    M, _ = fit_identity_bilinear(data, options, n, config.l2)
    u, _, _ = torch.linalg.svd(M)
    readout = u[:, :r].T / sd_b  # on the normed input; its constant part is the same for every row
    h = quietest_head(split, states[:64], attn)
    tokens, quiet_rows = torch.cat(normed_below[:200]), torch.cat(residual[:200])
    dims = quiet_value_dims(attn, tokens, h, r)
    directions = quiet_directions(quiet_rows, r)
    g, hd = h // attn.num_key_value_groups, attn.head_dim
    replaced = tokens @ _base(attn.v_proj)[[g * hd + d for d in dims]].T
    small = float(0.1 * replaced.std(0).mean() / (tokens @ readout.T).std(0).mean())
    handed = torch.stack([(one @ readout.T).mean(0) for one in normed_below])
    spread = float((quiet_rows @ directions).std(0).mean())
    gain = float(10 * spread / (small * handed.std(0).mean()))
    write_below(attn, h, readout, dims, directions, small, gain)
    return {"head": h, "dims": dims, "small": small, "gain": gain, "quiet_spread": spread}, directions


def handed_down(top, directions: torch.Tensor) -> torch.Tensor:
    """[r, H]: what the top layer's query reads on its normed input to get the written directions back (the
    residual over its RMS: the norm's gains undone)."""
    return (directions / top.input_layernorm.weight.detach().float()[:, None]).T


def below_ranks(layer: int, head_dim: int, rank: int) -> dict[str, int]:
    """The LoRA ranks ``write_below`` fills in ``layer`` (keys as peft's rank_pattern matches them)."""
    return {f"layers.{layer}.self_attn.q_proj": head_dim, f"layers.{layer}.self_attn.k_proj": 1,
            f"layers.{layer}.self_attn.v_proj": 2 * rank, f"layers.{layer}.self_attn.o_proj": head_dim}


def _base(linear) -> torch.Tensor:
    return getattr(linear, "base_layer", linear).weight
