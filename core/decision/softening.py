"""Softening: a decision model's logits divided by a temperature that grows as a state lies farther from
the states it was trained on.

Why: a readout trained on some ticket families is as confident on families nobody trained on, where it is
wrong far more often; one temperature for every state cannot fit both (the synthetic rows, whose templates
every split shares, need far less than unseen natural tickets). A state's ``nearness`` (mean cosine of its
standardised mean state to its ``NEAREST`` nearest reference states) tells them apart, so

    T = exp(a + b (nearness - SOFTEN_AT))

The same reference gives the state's *familiarity*: the share of the reference states farther from their centre
than it (standardised, in the body's own states; no word list), an out-of-distribution signal that tells support
tickets from other text where nearness does not (results/smollm2_decision/letter_softening/familiarity_probe.txt).

The pooled readout keeps these tensors in its head (``core.decision.pooled.PooledHead``); a letter arm keeps
them in its own file (``Softening``, read at one layer of the frozen base by ``StateTemperature``). Both
measure with the functions here.

    softening = Softening.of_states(layer=24, states=reference, ab=(0.3, -1.9))
    temperature = StateTemperature(decoder, tokenizer, softening)  # prefix ids -> T
"""

from pathlib import Path

import torch

from core.decision.prompt import header_tokens
from core.models.layers import RecentStates, first_layers, mean_states

NEAREST, SOFTEN_AT = 5, 0.8
"""A state's nearness is its mean cosine to this many reference states; b acts about this nearness."""
WARN_PERCENTILE = 5
"""A letter arm warns below the familiarity of all but this percent of its fit's val states (the pooled rule)."""
READ_STATES = 512
"""Mean states of the latest prefixes answered, kept so their familiarity reads no state twice."""


class SofteningError(ValueError):
    """A softening file that cannot be trusted, and why."""


def nearness_of(units: torch.Tensor, neighbours: torch.Tensor) -> torch.Tensor:
    """[N]: mean cosine of unit states [N, H] to their ``NEAREST`` nearest unit ``neighbours`` (1 without any:
    nothing to be far from)."""
    if not len(neighbours):
        return torch.ones(len(units))
    return (units @ neighbours.T).topk(min(NEAREST, len(neighbours)), dim=-1).values.mean(-1)


def temperature_of(near: torch.Tensor, ab: torch.Tensor) -> torch.Tensor:
    """T = exp(a + b (nearness - SOFTEN_AT)) per state."""
    return torch.exp(ab[0] + ab[1] * (near - SOFTEN_AT))


def distance_quantiles(z: torch.Tensor) -> torch.Tensor:
    """[101]: the squared distances (per dimension) of standardised reference states z [N, H] from their centre,
    at percentiles 0..100: what ``familiarity_of`` ranks a state among."""
    return torch.quantile(z.pow(2).mean(-1), torch.linspace(0, 1, 101))


def familiarity_of(z: torch.Tensor, familiar: torch.Tensor) -> torch.Tensor:
    """[N]: share of the reference states farther from their centre than each standardised state z [N, H]
    (1: typical, 0: beyond them all); ``familiar`` from ``distance_quantiles``."""
    d = z.pow(2).mean(-1, keepdim=True)
    return 1.0 - torch.searchsorted(familiar, d).squeeze(-1).float() / len(familiar)


class Softening(torch.nn.Module):
    """The reference states (standardised, unit length), their standardisation, the layer whose input they are,
    and (a, b): everything a letter arm needs to soften its answers; and ``familiar`` (the reference's distances,
    ``distance_quantiles``) with ``warn_below`` (the familiarity under which the arm warns): its familiarity signal."""

    def __init__(self, layer: int, hidden: int, neighbours: int):
        super().__init__()
        self.layer = layer
        self.register_buffer("state_mean", torch.zeros(hidden))
        self.register_buffer("state_scale", torch.ones(hidden))
        self.register_buffer("neighbours", torch.zeros(neighbours, hidden))
        self.register_buffer("ab", torch.zeros(2))
        self.register_buffer("familiar", torch.zeros(101))
        self.register_buffer("warn_below", torch.zeros(1))

    @classmethod
    def of_states(cls, layer: int, states: torch.Tensor, ab=(0.0, 0.0), val: torch.Tensor | None = None) -> "Softening":
        """A softening whose reference is ``states`` [N, H] (mean states at ``layer``), standardised by their own
        per-dimension mean and scale; it warns below the ``WARN_PERCENTILE``-th percentile of the ``val`` states'
        familiarity (never without them)."""
        soft = cls(layer, states.shape[1], len(states))
        with torch.no_grad():
            soft.state_mean.copy_(states.mean(0))
            soft.state_scale.copy_(states.std(0).clamp(min=1e-6))
            soft.neighbours.copy_(soft.unit_states(states))
            soft.ab.copy_(torch.as_tensor(ab, dtype=torch.float32))
            soft.familiar.copy_(distance_quantiles(soft.standardised(states)))
            if val is not None and len(val):
                soft.warn_below.fill_(float(torch.quantile(soft.familiarity(val), WARN_PERCENTILE / 100)))
        return soft

    def standardised(self, states: torch.Tensor) -> torch.Tensor:
        return (states - self.state_mean) / self.state_scale

    def unit_states(self, states: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(self.standardised(states), dim=-1)

    def familiarity(self, states: torch.Tensor) -> torch.Tensor:
        return familiarity_of(self.standardised(states), self.familiar)

    def nearness(self, states: torch.Tensor) -> torch.Tensor:
        return nearness_of(self.unit_states(states), self.neighbours)

    def temperature(self, states: torch.Tensor) -> torch.Tensor:
        return temperature_of(self.nearness(states), self.ab)

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file

        tensors = {k: t.detach().float().contiguous().clone() for k, t in self.state_dict().items()}
        save_file(tensors, str(path), metadata={"format": "pt", "layer": str(self.layer)})

    @classmethod
    def load(cls, path: str | Path, hidden: int) -> "Softening":
        """The file's tensors, each present with its shape and finite; its layer from the metadata."""
        from safetensors import SafetensorError, safe_open

        name = Path(path).name
        try:
            with safe_open(str(path), "pt") as f:
                tensors, layer = {k: f.get_tensor(k) for k in f.keys()}, int((f.metadata() or {}).get("layer", 0))
        except (OSError, ValueError, SafetensorError) as err:
            raise SofteningError(f"{name} cannot be read: {err}") from None
        soft = cls(layer, hidden, len(tensors.get("neighbours", ())))
        expected = {k: tuple(v.shape) for k, v in soft.state_dict().items()}
        if set(tensors) != set(expected) or layer < 1:
            raise SofteningError(f"{name} holds {sorted(tensors)} at layer {layer}, expected {sorted(expected)} at a layer >= 1")
        for k, shape in expected.items():
            if tuple(tensors[k].shape) != shape or not torch.isfinite(tensors[k]).all():
                raise SofteningError(f"{name}: {k} has shape {tuple(tensors[k].shape)} (expected {shape}) or non-finite values")
        soft.load_state_dict(tensors)
        return soft.eval()


class StateTemperature:
    """A prompt prefix's T: its state's mean input to ``softening.layer`` (the frozen base's first layers, header
    left out) measured against the reference states: read by its own pass over those layers, or (``of_hidden``) from
    states a caller's pass read on the way. The prefixes' states are kept a while for ``familiarity``."""

    def __init__(self, decoder, tokenizer, softening: Softening, *, bos: bool = False):
        self.lower, self.softening = first_layers(decoder, softening.layer), softening
        self.skip = header_tokens(tokenizer) + int(bos)
        self.read = RecentStates(READ_STATES)

    def states(self, prefixes: list[list[int]]) -> torch.Tensor:
        return mean_states(self.lower, prefixes, [self.skip] * len(prefixes))

    @property
    def layer(self) -> int:
        return self.softening.layer

    def __call__(self, prefix: list[int]) -> float:
        return self._temperature(prefix, self.states([prefix]))

    def of_hidden(self, hidden: torch.Tensor, prefix: list[int]) -> float:
        """T of ``prefix`` from its input states to ``layer`` [P, H], read by the caller's own pass (the Decider's
        prefill)."""
        return self._temperature(prefix, hidden[self.skip:].float().mean(0, keepdim=True))

    def _temperature(self, prefix: list[int], state: torch.Tensor) -> float:
        self.read.keep(prefix, state)
        with torch.no_grad():
            return float(self.softening.temperature(state)[0])

    def familiarity(self, prefix: list[int]) -> float:
        """The prefix's familiarity (``Softening.familiarity``); a prefix answered lately is not read again."""
        state = self.read.get(prefix)
        with torch.no_grad():
            return float(self.softening.familiarity(self.states([prefix]) if state is None else state)[0])
