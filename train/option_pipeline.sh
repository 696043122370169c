#!/usr/bin/env bash
# The option scorer from data to shipped folder, timed into RUNS/times.log:
#   data -> scorer (soft targets) + temperatures + confidence head on the frozen scorer -> eval -> ship.
# The body and tokenizer start from checkpoints/decision-rlcd as commit START holds it (the letter arm shipped when
# the scorer was; the cued ship, 959cbae, replaced that folder), extracted by the start stage; docs/decision_models.md.
# Usage: nice -n 10 bash train/option_pipeline.sh [SEED] [RUNS] [DATA]   (resumable: finished stages are skipped)
set -euo pipefail
SEED=${1:-0}
RUNS=${2:-runs/option}
DATA=${3:-runs/data/option}
SHIP=${SHIP:-checkpoints/option-scorer}
RESULTS=${RESULTS:-results/option_eval.json}
PY=${PY:-.venv/bin/python}
START=60edf50
export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$RUNS"
source "$(dirname "$0")/pipeline_stage.sh"
stage data "$DATA/manifest.json" $PY -m train.option_data --out "$DATA" --seed "$SEED"
mkdir -p "$RUNS/start"
stage start "$RUNS/start/checkpoints/decision-rlcd/decision.json" \
  bash -c "git archive $START checkpoints/decision-rlcd | tar -x -C '$RUNS/start'"
stage scorer "$RUNS/scorer/model" $PY -m train.option_train --data "$DATA" --out "$RUNS/scorer" --seed "$SEED" \
  --init "$RUNS/start/checkpoints/decision-rlcd" --tokenizer "$RUNS/start/checkpoints/decision-rlcd"
stage eval "$RUNS/eval.json" $PY -m train.option_eval --model "$RUNS/scorer/model" --data "$DATA" --json "$RUNS/eval.json"
cp "$RUNS/eval.json" "$RESULTS"
stage ship "$SHIP/README.md" $PY -m train.option_eval --model "$RUNS/scorer/model" --ship "$SHIP" \
  --results "$RESULTS" --times "$RUNS/times.log"
