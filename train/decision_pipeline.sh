#!/usr/bin/env bash
# Every decision arm from scratch, in order, with wall and CPU times appended to RUNS/times.log:
#   data -> tokenizer + random body -> warmup (format + warmup stages) -> RLCD, RLVR, oracle,
#   supervised continuation -> evaluation -> ship into checkpoints/.
# Usage: nice -n 10 bash train/decision_pipeline.sh [SEED] [RUNS] [DATA]   (resumable: finished stages are skipped)
# JOBS=2 trains the four arms two at a time (rlcd with rlvr, then oracle with continuation): each
# arm starts from the same warmup export, so the results are the same; only the wall time changes.
set -euo pipefail
SEED=${1:-0}
RUNS=${2:-runs/decision}
DATA=${3:-runs/data/decision}
PY=${PY:-.venv/bin/python}
JOBS=${JOBS:-1}
export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$RUNS"
source "$(dirname "$0")/pipeline_stage.sh"
stage data "$DATA/manifest.json" $PY -m train.decision_data --out "$DATA" --seed "$SEED"
stage base "$RUNS/base/decision.json" $PY -m train.decision_tokenizer --data "$DATA" --out "$RUNS/base" --seed "$SEED"
stage warmup "$RUNS/warmup/model" $PY -m train.decision_warmup --init "$RUNS/base" --out "$RUNS/warmup" --data "$DATA" --seed "$SEED"
pair() {  # two stages, side by side when JOBS=2; fails if either fails
  if [ "$JOBS" = 2 ]; then "$1" & local a=$!; "$2"; wait "$a"; else "$1"; "$2"; fi
}
rlcd() { stage rlcd "$RUNS/rlcd/model" $PY -m train.decision_rl --reward rlcd --init "$RUNS/warmup/model" --out "$RUNS/rlcd" --data "$DATA" --seed "$SEED"; }
rlvr() { stage rlvr "$RUNS/rlvr/model" $PY -m train.decision_rl --reward rlvr --init "$RUNS/warmup/model" --out "$RUNS/rlvr" --data "$DATA" --seed "$SEED"; }
oracle() { stage oracle "$RUNS/oracle/model" $PY -m train.decision_supervised --arm oracle --init "$RUNS/warmup/model" --out "$RUNS/oracle" --data "$DATA" --seed "$SEED"; }
continuation() { stage continuation "$RUNS/continuation/model" $PY -m train.decision_supervised --arm continuation --init "$RUNS/warmup/model" --out "$RUNS/continuation" --data "$DATA" --seed "$SEED"; }
pair rlcd rlvr
pair oracle continuation
stage eval "$RUNS/eval.json" $PY -m train.decision_eval --checkpoints "$RUNS" \
  --arms "warmup=$RUNS/warmup/model,rlcd=$RUNS/rlcd/model,rlvr=$RUNS/rlvr/model,oracle=$RUNS/oracle/model,continuation=$RUNS/continuation/model" \
  --data "$DATA" --json "$RUNS/eval.json" --plots "$RUNS/plots"
