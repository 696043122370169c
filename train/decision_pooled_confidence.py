"""A confidence head for the pooled readout, judged on rows whose answer is present and rows whose answer is missing.

Issue 26, item 3: the tiny option scorer's confidence head beats max p only because of its missing-answer rows.
Here the option scorer is the pooled readout over frozen SmolLM2 (``core.decision.pooled``: it scores each
option's own text against the state) and its confidence head is a logistic regression on eight scalars of one
question: the option scorer's logit statistics (``core.decision.option.model.logit_stats``: max logit,
logsumexp, max p, normalised entropy; not its ln K, which would tell a question without its answer by its
option count alone), the state's familiarity (``PooledHead.familiarity``), and the head's score of the top
option and of the mean option with the options *not* centred (how well the best option fits the state at all,
which centring hides; softened as the logits are), and the state's nearness to the training states
(``PooledHead.nearness``, for a softened head). It is fitted on the val rows only (natural val families
and synthetic val rows, each as asked and, for questions of three or more options without "None of the
above", again with the answer removed), L2 1e-3, full-batch L-BFGS: fixed settings, nothing chosen on test.

Reported on the natural test split (every row) and the synthetic test prefix, each as two sets: present
(the rows as asked) and missing (the same questions without their answer, so the top option is always wrong).
On present rows: AURC of the head vs max p, paired, 95% intervals over contexts. On missing rows every answer
is wrong, so AURC is 1 whatever the ranking; what matters is how confident an answer is: mean confidence (ideal
0) of the head vs max p. Then both sets together: AURC head vs max p.

    python -m train.decision_pooled_confidence --json results/decision_smollm2_pooled_confidence.json
"""

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core import calibration as cal
from core.decision.data.rows import NOTA
from core.decision.option.model import logit_stats
from core.decision.pooled import PooledHead, PooledReader, load_head, read_card
from core.stats import bootstrap_statistic, paired_statistic_difference
from train import decision_pooled as dp
from train.decision_run import parse_config, write_report


FEATURES = ("max_logit", "logsumexp", "max_p", "entropy", "familiarity", "top_uncentred", "mean_uncentred", "nearness")


@dataclass(frozen=True)
class ConfidenceConfig:
    arm: str = field(default="checkpoints/decision-smollm2-pooled-rlcd", metadata={"help": "the pooled readout scored"})
    out: str = field(default="runs/smollm2-pooled", metadata={"help": "the feature cache of train.decision_pooled"})
    natural: str = field(default="runs/data/natural", metadata={"help": "natural-ticket dataset (val, test)"})
    synthetic: str = field(default="runs/data/decision", metadata={"help": "synthetic dataset (val, test prefix)"})
    l2: float = field(default=1e-3, metadata={"help": "L2 penalty on the logistic weights"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    resamples: int = field(default=2000, metadata={"help": "bootstrap resamples (whole contexts)"})
    seed: int = field(default=0, metadata={"help": "bootstrap seed"})
    json: str = field(default="", metadata={"help": "write the report here"})


def without_answer(rows: list, t) -> tuple[list, tuple]:
    """The rows of three or more options and no NOTA, each with its answer's option removed (label -1)."""
    keep = [i for i, r in enumerate(rows) if len(r.options) >= 3 and NOTA not in r.options]
    states, options, mask = t[0][keep], t[1][keep].clone(), t[2][keep].clone()
    for j, i in enumerate(keep):
        label, k = int(t[3][i]), int(mask[j].sum())
        order = [c for c in range(k) if c != label]
        options[j, : k - 1], options[j, k - 1:], mask[j, k - 1:] = options[j, order], 0.0, False
    return [rows[i] for i in keep], (states, options, mask, torch.full((len(keep),), -1))


def confidence_stats(head: PooledHead, t) -> torch.Tensor:
    """[N, 8]: logit_stats of the head's logits (ln K left out), familiarity, the uncentred top and mean option score
    (softened as the logits are), and the state's nearness to the training states (1 for a head without them)."""
    states, options, mask = t[:3]
    with torch.no_grad():
        nearness = head.nearness(states)  # measured once: the logits, the raw scores and the feature share it
        temperature = head.temperature(states, nearness)
        logits = head(states, options, mask, temperature)
        raw = head.scores(head.state_z(states), options / head.option_scale) / temperature[:, None]
        top = raw.gather(-1, logits.argmax(-1, keepdim=True)).squeeze(-1)
        mean = (raw * mask).sum(-1) / mask.sum(-1)
        return torch.cat([logit_stats(logits, mask)[:, :4], head.familiarity(states)[:, None], top[:, None], mean[:, None],
                          nearness[:, None]], -1)


def correct_of(head: PooledHead, t) -> np.ndarray:
    with torch.no_grad():
        return (head(*t[:3]).argmax(-1) == t[3]).double().numpy()


class Logistic:
    """P(correct) = sigmoid(w . standardised features + b), fitted by L-BFGS on the penalised log loss."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, l2: float):
        self.mean, self.scale = x.mean(0), x.std(0) + 1e-6
        z = (x - self.mean) / self.scale
        self.w, self.b = torch.zeros(x.shape[1], requires_grad=True), torch.zeros(1, requires_grad=True)
        opt = torch.optim.LBFGS([self.w, self.b], max_iter=200, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z @ self.w + self.b, y) + l2 * self.w.pow(2).sum()
            loss.backward()
            return loss

        opt.step(closure)

    def __call__(self, x: torch.Tensor) -> np.ndarray:
        with torch.no_grad():
            return torch.sigmoid((x - self.mean) / self.scale @ self.w + self.b).double().numpy()


def report(conf_head: np.ndarray, max_p: np.ndarray, correct: np.ndarray, contexts: list, config) -> dict:
    """AURC and mean confidence of the head and of max p on these rows, the paired AURC difference."""
    kw = {"resamples": config.resamples, "seed": config.seed}
    aurc = {name: (lambda c: lambda idx: cal.selective_from(c[idx], correct[idx]).aurc)(c)
            for name, c in (("head", conf_head), ("max_p", max_p))}
    out = {"rows": len(correct), "accuracy": float(correct.mean())}
    for name, c in (("head", conf_head), ("max_p", max_p)):
        out[f"aurc_{name}"] = bootstrap_statistic(aurc[name], len(c), contexts, **kw).as_dict()
        out[f"mean_confidence_{name}"] = bootstrap_statistic(lambda idx, c=c: float(c[idx].mean()), len(c), contexts, **kw).as_dict()
        out[f"ece_{name}"] = cal.ece_from(c, correct)
    out["aurc_head_minus_max_p"] = paired_statistic_difference(aurc["head"], aurc["max_p"], len(correct), contexts, **kw).as_dict()
    return out


def main(config: ConfidenceConfig) -> dict:
    from core.models.loader import load_location

    torch.set_num_threads(config.threads)
    t0 = time.time()
    card = read_card(Path(config.arm))
    pooled = dp.PooledConfig(out=config.out, base=card.base_model, layer=card.layer, natural=config.natural,
                             synthetic=config.synthetic)
    sets = {k: v for k, v in dp.datasets(pooled).items() if k in ("val", "natural", "synthetic")}
    loaded = load_location(pooled.base)
    states, options = dp.features(PooledReader(loaded.model.get_decoder(), loaded.tokenizer, pooled.layer), sets,
                                  Path(config.out))
    hidden = loaded.model.get_decoder().config.hidden_size
    head = load_head(Path(config.arm), hidden)
    t = {k: dp.tensors(rows, states, options, hidden) for k, rows in sets.items()}
    parts = {}
    for k, rows in sets.items():
        parts[k, "present"] = (rows, t[k])
        parts[k, "missing"] = without_answer(rows, t[k])
    fit_x = torch.cat([confidence_stats(head, parts["val", s][1]) for s in ("present", "missing")])
    fit_y = torch.cat([torch.tensor(correct_of(head, parts["val", s][1])) for s in ("present", "missing")]).float()
    conf = Logistic(fit_x, fit_y, config.l2)
    out: dict = {"arm": config.arm, "fit_rows": {s: len(parts["val", s][0]) for s in ("present", "missing")},
                 "weights": dict(zip(FEATURES, conf.w.detach().tolist()))}
    for which in ("natural", "synthetic"):
        facts = {}
        for s in ("present", "missing"):
            rows, ts = parts[which, s]
            x = confidence_stats(head, ts)
            facts[s] = (conf(x), x[:, 2].double().numpy(), correct_of(head, ts), [r.context_id for r in rows])
        out[which] = {s: report(*facts[s], config) for s in facts}
        both = [np.concatenate([facts["present"][i], facts["missing"][i]]) for i in range(3)]
        out[which]["both"] = report(*both, facts["present"][3] + facts["missing"][3], config)
    out["wall_s"] = round(time.time() - t0, 1)
    write_report(config.json, out)
    return out


def table(out: dict) -> str:
    """Markdown: per set, AURC and mean confidence of the head and max p, the paired AURC difference."""
    cell = lambda v: f"{v['mean']:.3f} [{v['lo']:.3f}, {v['hi']:.3f}]"  # noqa: E731
    lines = ["| set | rows | accuracy | AURC head | AURC max p | head - max p | mean conf head | mean conf max p |",
             "|---|---|---|---|---|---|---|---|"]
    for which in ("natural", "synthetic"):
        for s, r in out[which].items():
            lines.append(f"| {which} {s} | {r['rows']} | {r['accuracy']:.3f} | {cell(r['aurc_head'])} | {cell(r['aurc_max_p'])} | "
                         f"{cell(r['aurc_head_minus_max_p'])} | {cell(r['mean_confidence_head'])} | {cell(r['mean_confidence_max_p'])} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(main(parse_config(ConfidenceConfig))))
