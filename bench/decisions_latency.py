"""End-to-end latency of one 3-question Ask on the Decisions tab (goal: under 300 ms on this CPU).

Times ``demo.decisions.handlers.ask`` on the support-ticket example (a choice, a score and a yes/no
question): builder parsing, state parsing, the token-limit check, the Decider call, the plotly
figure and the table, exactly what a click runs. The model is a shipped export
(``checkpoints/decision-rlcd`` by default); when it is absent the bench says so and uses a random
body of the shipped shape instead. Also reported: the model call alone, the same request with two
models side by side, (unless --quick) the ``/score`` endpoint over HTTP via ``gradio_client``, and the
same Ask on the real-body arms when they are installed (goal: under 1 s on 2 CPUs):
``checkpoints/decision-smollm2-rlcd`` (a LoRA letter readout over SmolLM2-135M-Instruct; also with its softening
off, and reading every choice in each cyclic order of its options, side by side) and
``checkpoints/decision-smollm2-pooled-rlcd`` (a head over the same frozen body's mean states).

    python bench/decisions_latency.py --quick --json runs/decisions_latency.json
"""

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from core.decision.export.published import export_decision  # noqa: E402
from core.decision.random_model import letter_tokenizer, random_body, random_rows  # noqa: E402
from core.records import at_least, output_file  # noqa: E402
from demo.decisions import builder  # noqa: E402
from demo.decisions import handlers as h  # noqa: E402

GOAL_MS = 300.0
REAL_GOAL_MS = 1000.0
"""The real body's goal (issue 26): a 3-question request in under a second on 2 CPUs."""
SHIPPED_SHAPE = dict(hidden=128, layers=4, heads=4, kv_heads=2, head_dim=32, intermediate=384)
"""The shape train/decision_tokenizer.py gives the shipped decision models (stand-in only)."""


def models_folder(model: Path, workdir: Path) -> tuple[str, list[str], str]:
    """(models dir, two model keys, description): the shipped export(s), or random stand-ins."""
    if (model / "decision.json").is_file():
        other = next((p for p in sorted(model.parent.glob("decision-*")) if p != model and (p / "decision.json").is_file()), model)
        return str(model.parent), [model.name, other.name], f"shipped export {model}"
    tok = letter_tokenizer()
    for seed, name in enumerate(("stand-in-a", "stand-in-b")):
        body = random_body(len(tok), seed=seed, **SHIPPED_SHAPE)
        export_decision(workdir / name, body, random_rows(SHIPPED_SHAPE["hidden"], seed=seed + 100), tok,
                        base_model="random", training={"note": "latency stand-in"})
    return str(workdir), ["stand-in-a", "stand-in-b"], (f"{model} not found: random body of the shipped shape "
                                                        f"{SHIPPED_SHAPE} (train and ship the models to measure them)")


def timed(fn, repeats: int) -> dict:
    """Median, p90 and min wall milliseconds of ``fn()`` after two warm-up calls."""
    return interleaved({"fn": fn}, repeats)["fn"]


def interleaved(runs: dict, repeats: int) -> dict[str, dict]:
    """``timed`` for variants side by side: two warm-up calls each, then ``repeats`` rounds calling each once, in an
    order that alternates, so no variant always runs first or in a block of its own while the machine's load moves."""
    for fn in runs.values():
        fn(), fn()
    ms = {name: [] for name in runs}
    for r in range(repeats):
        for name in list(runs) if r % 2 == 0 else list(runs)[::-1]:
            start = time.perf_counter()
            runs[name]()
            ms[name].append(1000 * (time.perf_counter() - start))
    return {name: {"median_ms": statistics.median(v), "p90_ms": sorted(v)[int(0.9 * (len(v) - 1))], "min_ms": min(v),
                   "n": repeats} for name, v in ms.items()}


def http_score(models_dir: str, key: str, state: str, questions: dict, repeats: int) -> dict:
    """The /score endpoint through a launched app and gradio_client."""
    import app
    from gradio_client import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    blocks = app.build(decision_models=models_dir)
    _, url, _ = blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    try:
        client = Client(url, verbose=False)
        return timed(lambda: client.predict(key, state, questions, api_name="/score"), repeats)
    finally:
        blocks.close()


def real_body(folder: Path, state: str, n, fields, repeats: int, threads: int, variants: dict | None = None) -> dict:
    """The Ask on an arm over the real base, after one untimed call that loads the base; with ``variants`` (name ->
    the Decider settings ``varied`` sets), each of those Asks too, interleaved with it: name -> its timing."""
    torch.set_num_threads(threads)
    real_dir, real = str(folder.parent), folder.name
    out = h.ask(real_dir, real, "", state, n, *fields)
    assert out[-1], f"the Ask on {real} failed: {[u['value'] for u in out[:4 + h.MAX_QUESTIONS] if u['visible']]}"
    ask = lambda: h.ask(real_dir, real, "", state, n, *fields)  # noqa: E731
    runs = {"as shipped": ask,
            **{name: (lambda s=settings: varied(folder, ask, **s)) for name, settings in (variants or {}).items()}}
    return {name: {**t, "model": real, "threads": threads, "goal_ms": REAL_GOAL_MS}
            for name, t in interleaved(runs, repeats).items()}


def varied(folder: Path, run, **settings) -> dict:
    """``run()`` with the cached letter arm's Decider attributes set to ``settings`` (its softening off:
    ``temperature=None``; every choice order read: ``choice_orders="cyclic"``), then restored."""
    decider = h.CACHE.decider(next(e for e in h.lists.decision_entries(str(folder.parent)) if e.key == folder.name))
    kept = {name: getattr(decider, name) for name in settings}
    for name, value in settings.items():
        setattr(decider, name, value)
    try:
        return run()
    finally:
        for name, value in kept.items():
            setattr(decider, name, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "checkpoints" / "decision-rlcd")
    parser.add_argument("--real-model", type=Path, default=ROOT / "checkpoints" / "decision-smollm2-rlcd",
                        help="the real-body arm timed beside it (skipped when absent)")
    parser.add_argument("--pooled-model", type=Path, default=ROOT / "checkpoints" / "decision-smollm2-pooled-rlcd",
                        help="the pooled readout over the same real body, timed too (skipped when absent)")
    parser.add_argument("--real-threads", type=at_least(1), default=2, help="torch threads for the real body (2 CPUs)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no HTTP measurement")
    parser.add_argument("--threads", type=at_least(1), default=1)
    parser.add_argument("--json", type=output_file, default=None, help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    repeats = 10 if args.quick else 40
    with tempfile.TemporaryDirectory() as tmp:
        models_dir, keys, described = models_folder(args.model, Path(tmp))
        state, n, *rest = h.load_example("Support ticket")
        fields = rest[h.MAX_QUESTIONS:]
        out = h.ask(models_dir, keys[0], "", state, n, *fields)
        assert out[-1], f"the Ask failed: {[u['value'] for u in out[:4 + h.MAX_QUESTIONS] if u['visible']]}"
        decider = h.CACHE.decider(next(e for e in h.lists.decision_entries(models_dir) if e.key == keys[0]))
        questions = builder.build_questions(h.rows_of(n, fields)).questions
        results = {
            "model": described, "threads": args.threads, "questions": int(n), "goal_ms": GOAL_MS,
            "handler_one_model": timed(lambda: h.ask(models_dir, keys[0], "", state, n, *fields), repeats),
            "model_call_only": timed(lambda: decider.score(state, questions), repeats),
            "handler_two_models": timed(lambda: h.ask(models_dir, keys[0], keys[1], state, n, *fields), repeats),
        }
        if not args.quick:
            results["http_score"] = http_score(models_dir, keys[0], state, questions, repeats)
        for key, folder, card in (("real_body_handler", args.real_model, "decision.json"),
                                  ("real_body_pooled_handler", args.pooled_model, "pooled.json")):
            if (folder / card).is_file():  # the letter arm beside what its softening and every choice order cost
                variants = ({"real_body_unsoftened_handler": {"temperature": None},
                             "real_body_cyclic_handler": {"choice_orders": "cyclic"}} if key == "real_body_handler" else {})
                timings = real_body(folder, state, n, fields, max(5, repeats // 2), args.real_threads, variants)
                results.update({key if name == "as shipped" else name: t for name, t in timings.items()})
                torch.set_num_threads(args.threads)
    for name in ("model_call_only", "handler_two_models", "http_score", "real_body_handler",
                 "real_body_unsoftened_handler", "real_body_cyclic_handler", "real_body_pooled_handler"):
        if name in results:
            r = results[name]
            print(f"{name:>20}: median {r['median_ms']:.1f} ms, p90 {r['p90_ms']:.1f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    head = results["handler_one_model"]
    print(f"model: {described}")
    verdict = "meets" if head["median_ms"] < GOAL_MS else "MISSES"
    print(f"HEADLINE 3-question Ask through the handler: median {head['median_ms']:.1f} ms "
          f"(p90 {head['p90_ms']:.1f} ms), {verdict} the {GOAL_MS:.0f} ms goal")


if __name__ == "__main__":
    main()
