#!/usr/bin/env bash
# The SmolLM2 decision arms from the packaged base, in order, timed (RUNS/times.log), resumable:
#   data -> binding (easy drills only: the letter binding, which the base lacks) -> warmup (LoRA SFT on
#   natural + synthetic + drills, from the binding adapter) -> RLCD, RLVR (bandit REINFORCE from the warmup)
#   -> evaluation (natural held-out tickets, synthetic test prefix, probe; results/decision_smollm2_eval.json) -> ship.
# Usage: bash train/decision_smollm2.sh [SEED] [RUNS]
# A stage that stops at its --max_minutes chunk leaves no model/; rerunning the script resumes it.
set -euo pipefail
SEED=${1:-0}
RUNS=${2:-runs/smollm2-decision}
PY=${PY:-.venv/bin/python}
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$RUNS"
source "$(dirname "$0")/pipeline_stage.sh"
COMMON="--top_layers 6 --rank 16 --alpha 32 --batch 32 --threads 2 --seed $SEED"
stage synthetic runs/data/decision/manifest.json $PY -m train.decision_data --out runs/data/decision --seed "$SEED"
stage natural runs/data/natural/manifest.json $PY -m train.decision_natural_data --out runs/data/natural --seed "$SEED"
stage binding "$RUNS/binding/model" $PY -m train.decision_smollm2 --stage warmup --out "$RUNS/binding" \
  --rows 1500 --natural_share 0 --drill_share 1.0 --drill_easy_share 1.0 --val_rows 100 --steps 160 --lr 5e-4 \
  --eval_every 80 $COMMON
stage warmup "$RUNS/warmup/model" $PY -m train.decision_smollm2 --stage warmup --init "$RUNS/binding/model" \
  --out "$RUNS/warmup" --rows 3000 --natural_share 0.6 --drill_share 0.2 --val_rows 300 --steps "${WARMUP_STEPS:-500}" \
  --lr 5e-4 --eval_every 50 $COMMON
for arm in rlcd rlvr; do
  stage "$arm" "$RUNS/$arm/model" $PY -m train.decision_smollm2 --stage "$arm" --init "$RUNS/warmup/model" \
    --out "$RUNS/$arm" --rows 900 --steps 100 --lr 3e-4 --eval_every 25 $COMMON
done
stage eval "$RUNS/eval.json" $PY -m train.decision_smollm2_eval \
  --arms "warmup=$RUNS/warmup/model,rlcd=$RUNS/rlcd/model,rlvr=$RUNS/rlvr/model" \
  --synthetic_rows 450 --probe_rows 300 --cache "$RUNS/cache" --json "$RUNS/eval.json"
