"""One packed pass vs one prompt per question for the option scorer, and its independence check.

On an ~800-token state with 8 and 64 four-option questions: the median wall time of the packed
pass and of one forward per question (state + that question), the largest |dp| between the two,
the largest |dp| of each question's answer with and without the other questions (random subsets),
and whether a 255-option question answers. One torch thread; the shipped model when present.

    python -m bench.option_scorer [--quick] [--json OUT] [--model checkpoints/option-scorer]
"""

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

from core.decision.option.model import OptionModel
from core.decision.option.scorer import OptionScorer
from core.decision.random_model import random_body
from core.records import output_file  # noqa: E402

WORDS = ("ticket customer charged twice invoice refund server disk deploy login phishing key export "
         "dashboard urgent week minor team blocked revenue account device statement fee").split()


def scorer_for(model: str) -> tuple[OptionScorer, str]:
    if model and Path(model).is_dir():
        return OptionScorer.load(model), model
    tok = AutoTokenizer.from_pretrained("checkpoints/decision-rlcd")
    body = random_body(len(tok), seed=0, hidden=128, layers=4, heads=4, kv_heads=2, head_dim=32, intermediate=384)
    return OptionScorer(OptionModel(body), tok), "random init, shipped shape (no model at --model)"


def state_of(scorer: OptionScorer, tokens: int, rng: random.Random) -> str:
    words = []
    while len(scorer.tokenizer(" ".join(words))["input_ids"]) < tokens:
        words += [rng.choice(WORDS) for _ in range(20)]
    return " ".join(words)


def questions(n: int, rng: random.Random) -> dict:
    return {f"q{i}": {"type": "choice", "instructions": f"Question {i}: which {rng.choice(WORDS)} fits?",
                      "criteria": {f"k{j}": " ".join(rng.sample(WORDS, 3)) for j in range(4)}} for i in range(n)}


def median_s(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def max_dp(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for p, q in zip(a, b) for x, y in zip(p, q))


def run(quick: bool, model: str) -> dict:
    torch.set_num_threads(1)
    rng = random.Random(0)
    scorer, used = scorer_for(model)
    state = state_of(scorer, 800, rng)
    reps = 1 if quick else 5
    out: dict = {"model": used, "threads": 1, "reps": reps}
    for n in (8, 64):
        enc = scorer.prepare(state, questions(n, rng))
        packed = median_s(lambda: scorer.outputs(enc, "packed"), reps)
        single = median_s(lambda: scorer.outputs(enc, "per_question"), reps)
        p1 = scorer.probabilities(enc, scorer.outputs(enc, "packed"))
        p2 = scorer.probabilities(enc, scorer.outputs(enc, "per_question"))
        out[f"{n}q"] = {"state_tokens": len(enc.state), "input_tokens": enc.n_tokens, "packed_ms": packed * 1e3,
                        "per_question_ms": single * 1e3, "speedup": single / packed, "max_abs_dp": max_dp(p1, p2)}
    out["speedup_64q"] = out["64q"]["speedup"]
    out["max_abs_dp"] = max(out["8q"]["max_abs_dp"], out["64q"]["max_abs_dp"])
    pool = questions(12, rng)
    alone = {k: scorer.probabilities(e := scorer.prepare(state, {k: v}), scorer.outputs(e))[0] for k, v in pool.items()}
    worst = 0.0
    for _ in range(2 if quick else 6):
        names = rng.sample(list(pool), rng.randint(2, len(pool)))
        enc = scorer.prepare(state, {k: pool[k] for k in names})
        worst = max(worst, max_dp(scorer.probabilities(enc, scorer.outputs(enc)), [alone[k] for k in names]))
    out["independence_max_dp"] = worst
    big = {"big": {"type": "choice", "instructions": "Which one?", "criteria": {f"o{i}": f"option {i}" for i in range(255)}}}
    probs = scorer.score(state[:400], big)["answers"]["big"]["probabilities"]
    out["options_255_ok"] = len(probs) == 255 and abs(sum(probs.values()) - 1) < 1e-6
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, fewer independence draws")
    ap.add_argument("--json", type=output_file, default=None, help="write the results here")
    ap.add_argument("--model", default="checkpoints/option-scorer", help="option-scorer directory")
    args = ap.parse_args(argv)
    res = run(args.quick, args.model)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    for n in ("8q", "64q"):
        r = res[n]
        print(f"{n}: packed {r['packed_ms']:.1f} ms, per question {r['per_question_ms']:.1f} ms ({r['speedup']:.2f}x), "
              f"max |dp| {r['max_abs_dp']:.1e}")
    print(f"independence max |dp| {res['independence_max_dp']:.1e}; 255 options ok: {res['options_255_ok']}")
    print(f"speedup_64q {res['speedup_64q']:.2f}x, max_abs_dp {res['max_abs_dp']:.1e} ({res['model']})")
    return res


if __name__ == "__main__":
    main()
