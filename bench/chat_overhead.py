"""Live-play streaming overhead: our streaming path against bare ``model.generate``, side by side.

For each model the same prompt (the first agent turn of a fixed scenario) is generated greedily
to exactly N new tokens, alternating our path (``core.live.streaming.stream_turn``: ChatPolicy.sample
in a worker thread, a per-token stop check, a queue, text decoded for display every 50 ms) and a bare
``model.generate`` call. Models: the shipped policy (checkpoints/clarify-grpo, else
clarify-warmup, else a random body of the warmup's default config, and the report says which),
and a random body of the Qwen3-0.6B shape in fp32 and int8. ``overhead_ratio`` is our time over
bare wall time for the shipped policy, the median over rounds of the ratio within a round (the
two runs of a round are adjacent, so machine load mostly cancels); the CPU-time ratio (all
threads counted) and the ratio of each path's fastest round are reported beside it; tokens/s and
time to first token are medians; goal <= 1.05. Time to first streamed
token is reported. The headline prints last.

    python bench/chat_overhead.py [--quick] [--json OUT] [--threads 1]
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from core.clarify.chat_policy import ChatPolicy  # noqa: E402
from core.clarify.environment import ClarifyEnv  # noqa: E402
from core.clarify.scenarios import generate_scenario  # noqa: E402
from core.live.streaming import GenerationSettings, stream_turn  # noqa: E402
from core.models.entries import SHIPPED_DIR, SHIPPED_POLICIES  # noqa: E402
from core.models.loader import quantize_int8  # noqa: E402
from core.records import at_least, output_file  # noqa: E402

GOAL = 1.05
QWEN3_06B = dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True)
"""The Qwen3-0.6B architecture (published config.json facts)."""
WARMUP_SHAPE = dict(hidden_size=192, intermediate_size=576, num_hidden_layers=4, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=48, vocab_size=4096, tie_word_embeddings=True)
"""The default shape of ``train/clarify_sft.py``, used when no shipped policy exists yet."""


def tokenizer_for_random_bodies():
    """A byte-level BPE chat tokenizer built here (the shipped one when present)."""
    for name in SHIPPED_POLICIES:
        if (SHIPPED_DIR / name / "tokenizer.json").is_file():
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(SHIPPED_DIR / name)
    from train.clarify_tokenizer import train_tokenizer

    from core.clarify.agent import TOOL_SCHEMAS, episode_messages
    texts = [json.dumps(TOOL_SCHEMAS), *(json.dumps(episode_messages(generate_scenario(s, "medium"), []))
                                         for s in range(50))]
    return train_tokenizer(texts, vocab_size=2048)


def random_body(shape: dict, tokenizer, seed: int = 0):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(**{**shape, "vocab_size": max(shape["vocab_size"], len(tokenizer))},
                         max_position_embeddings=4096, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    return Qwen3ForCausalLM(config).eval()


def shipped_policy(folder: Path | None = None):
    """(label, model, tokenizer) of ``folder``, else the best shipped policy, else a random
    warmup-shaped body."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    for path in [folder] if folder else [SHIPPED_DIR / name for name in SHIPPED_POLICIES]:
        if (path / "config.json").is_file():
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
            label = str(path.relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)
            return label, model, AutoTokenizer.from_pretrained(path)
    if folder:
        raise SystemExit(f"{folder} holds no config.json: not a model folder")
    tokenizer = tokenizer_for_random_bodies()
    return "random body of the warmup shape (no shipped policy yet)", random_body(WARMUP_SHAPE, tokenizer), tokenizer


def time_ours(policy: ChatPolicy, env: ClarifyEnv) -> tuple[float, float, float, int]:
    """(wall s, CPU s of all threads, wall s to the first streamed token, tokens) of one turn."""
    start, cpu, first, ids = time.perf_counter(), time.process_time(), None, []
    for _, ids in stream_turn(policy, env, threading.Event(), sample_seed=0):
        if first is None:
            first = time.perf_counter() - start
    return time.perf_counter() - start, time.process_time() - cpu, first or 0.0, len(ids)


def time_bare(policy: ChatPolicy, env: ClarifyEnv, tokens: int) -> tuple[float, float, int]:
    """(wall s, CPU s, tokens) of one bare generate call on the same prompt."""
    ids = policy.start(env).prompt_ids
    start, cpu = time.perf_counter(), time.process_time()
    with torch.no_grad():
        out = policy.model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                    max_new_tokens=tokens, do_sample=False, temperature=None, top_p=None, top_k=None,
                                    eos_token_id=policy.eos_id, pad_token_id=policy.pad_id)
    return time.perf_counter() - start, time.process_time() - cpu, out.shape[1] - len(ids)


def measure(label: str, model, tokenizer, tokens: int, rounds: int) -> dict:
    """Alternate our path and bare generate ``rounds`` times, after one warm-up of each."""
    model.generation_config.min_new_tokens = tokens  # both paths generate exactly ``tokens``
    settings = GenerationSettings(temperature=0.0, max_new_tokens=tokens)
    policy = ChatPolicy(model, tokenizer, name=label, generation=settings.generation())
    policy.closes_call = lambda tail: False  # bare generate has no call stop: ours would end a trained policy's turn
    env = ClarifyEnv(generate_scenario(10000, "medium"), "v1")  # at its first </tool_call>, ~10 tokens in
    time_ours(policy, env), time_bare(policy, env, tokens)
    ours, bare = [], []
    for r in range(rounds):
        pair = [("ours", lambda: time_ours(policy, env)), ("bare", lambda: time_bare(policy, env, tokens))]
        for name, run in (pair if r % 2 == 0 else pair[::-1]):
            (ours if name == "ours" else bare).append(run())
    n_ours, n_bare = ours[-1][-1], bare[-1][-1]
    if n_ours != n_bare:
        raise RuntimeError(f"{label}: our path made {n_ours} tokens, bare generate {n_bare}")
    return {"model": label, "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
            "prompt_tokens": len(policy.start(env).prompt_ids), "new_tokens": n_ours, "rounds": rounds,
            "ours_tokens_per_s": n_ours / statistics.median(o[0] for o in ours),
            "bare_tokens_per_s": n_bare / statistics.median(b[0] for b in bare),
            "overhead_ratio": statistics.median(o[0] / b[0] for o, b in zip(ours, bare)),
            "overhead_ratio_fastest": min(o[0] for o in ours) / min(b[0] for b in bare),
            "overhead_ratio_cpu": statistics.median(o[1] / b[1] for o, b in zip(ours, bare)),
            "ttft_s": statistics.median(o[2] for o in ours), "ttft_s_fastest": min(o[2] for o in ours)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer tokens and rounds (about a minute)")
    p.add_argument("--json", type=output_file, default=None, help="write the measurements as JSON here")
    p.add_argument("--threads", type=at_least(1), default=1, help="torch CPU threads (1 on a shared 2-core box)")
    p.add_argument("--skip-big", action="store_true", help="skip the Qwen3-0.6B-shaped body")
    p.add_argument("--policy", type=Path, default=None, help="measure this policy folder instead of the shipped one")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    label, model, tokenizer = shipped_policy(args.policy)
    rows.append(measure(label, model, tokenizer, 48 if args.quick else 120, 9 if args.quick else 25))
    if not args.skip_big:
        big = random_body(QWEN3_06B, tokenizer)
        rows.append(measure("random Qwen3-0.6B shape, fp32", big, tokenizer, 6 if args.quick else 24, 1 if args.quick else 3))
        big = quantize_int8(big)
        rows.append(measure("random Qwen3-0.6B shape, int8", big, tokenizer, 12 if args.quick else 48, 2 if args.quick else 3))
    print(f"{'model':<52} {'params M':>8} {'prompt':>6} {'new':>4} {'ours tok/s':>10} {'bare tok/s':>10} "
          f"{'ours/bare':>9} {'(CPU)':>6} {'TTFT s':>7}")
    for r in rows:
        print(f"{r['model']:<52} {r['params_m']:>8} {r['prompt_tokens']:>6} {r['new_tokens']:>4} "
              f"{r['ours_tokens_per_s']:>10.1f} {r['bare_tokens_per_s']:>10.1f} {r['overhead_ratio']:>9.3f} "
              f"{r['overhead_ratio_cpu']:>6.3f} "
              f"{r['ttft_s']:>7.3f}")
    head = rows[0]
    result = {"overhead_ratio": head["overhead_ratio"], "overhead_ratio_cpu": head["overhead_ratio_cpu"], "goal": GOAL, "shipped_policy": head["model"],
              "ttft_s": head["ttft_s"], "threads": args.threads, "quick": args.quick, "rows": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    verdict = "meets" if head["overhead_ratio"] <= GOAL else "misses"
    print(f"streaming overhead {head['overhead_ratio']:.3f}x bare generate for {head['model']} "
          f"(goal <= {GOAL}: {verdict}); first streamed token after {head['ttft_s'] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
