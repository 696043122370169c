#!/usr/bin/env bash
# The decision arms taught to read cued clarify requests, by continued training of the shipped arms
# (the from-scratch pipeline, train/decision_pipeline.sh, needs about 29 min of a whole core; on a
# shared, loaded machine it projected past two hours). Same tokenizer and shapes, so each checkpoint
# keeps its size; the data are train/decision_data.py's, whose warmup and rl partitions now hold cued rows:
#   warmup' = checkpoints/decision-warmup + W more steps of the warmup stage's NLL on the warmup partition
#   rlcd', rlvr' = the bandit arms' own recipe from warmup', R steps each, side by side
#   evaluation of warmup', rlcd', rlvr' and the unchanged oracle on the unchanged test split and probe.
# Usage: nice -n 10 bash train/decision_cued_pipeline.sh [SEED] [RUNS] [DATA]   (resumable; times in RUNS/times.log)
set -euo pipefail
SEED=${1:-0}
RUNS=${2:-runs/decision-cued}
DATA=${3:-runs/data/decision}
PY=${PY:-.venv/bin/python}
W=${W:-80}
R=${R:-80}
export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$RUNS"
source "$(dirname "$0")/pipeline_stage.sh"
stage data "$DATA/manifest.json" $PY -m train.decision_data --out "$DATA" --seed "$SEED"
stage warmup "$RUNS/warmup/model" $PY -m train.decision_supervised --arm continuation --partition warmup \
  --init checkpoints/decision-warmup --out "$RUNS/warmup" --data "$DATA" --steps "$W" --seed "$SEED"
stage rlcd "$RUNS/rlcd/model" $PY -m train.decision_rl --reward rlcd --init "$RUNS/warmup/model" --out "$RUNS/rlcd" \
  --data "$DATA" --steps "$R" --seed "$SEED" &
RLCD=$!
stage rlvr "$RUNS/rlvr/model" $PY -m train.decision_rl --reward rlvr --init "$RUNS/warmup/model" --out "$RUNS/rlvr" \
  --data "$DATA" --steps "$R" --seed "$SEED"
wait "$RLCD"
stage eval "$RUNS/eval.json" $PY -m train.decision_eval --checkpoints "$RUNS" \
  --arms "warmup=$RUNS/warmup/model,rlcd=$RUNS/rlcd/model,rlvr=$RUNS/rlvr/model,oracle=checkpoints/decision-oracle" \
  --data "$DATA" --json "$RUNS/eval.json" --plots "$RUNS/plots"
