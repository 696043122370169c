#!/usr/bin/env bash
# The decision arms taught to read cued clarify requests, continued from the earlier shipped warmup
# (the from-scratch pipeline, train/decision_pipeline.sh, needs hours of a shared 2-core machine):
#   data   = train/decision_data.py with a cue-rich format partition (3,000 ticket + 3,000 cued contexts);
#            warmup, rl, val, test and probe are the default ones (test sha256 20ee94788f34)
#   start  = checkpoints/decision-warmup as commit START holds it: the from-scratch warmup this recipe continued,
#            before this recipe's own ship (959cbae) overwrote that folder with its result
#   base   = start + whole-word tokens for the clarify fields (train/decision_vocab.py)
#   format = F steps of the format stage's recipe (32 rows, lr 2e-3, per-option losses) on that partition
#   clear  = C steps on clear-cue questions only (labels without noise; DATA-clear), lr 1e-3
#   mixed  = M steps back on the cue-rich format partition (every cue kind), lr 5e-4, each cued question
#            fitting its known posterior (--soft_sources cued): the hedges are learnt without label noise
#   warmup = the published warmup stage on top (warmup partition, 100 steps of 64, lr 5e-4)
#   rlcd, rlvr = the bandit arms' own recipe from that warmup, side by side; oracle = labels revealed
#   eval   = warmup, rlcd, rlvr, oracle on the test split and the probe.
# Usage: nice -n 5 bash train/decision_cued_pipeline.sh [SEED] [RUNS] [DATA]   (resumable; times in RUNS/times.log)
set -euo pipefail
SEED=${1:-0}
RUNS=${2:-runs/decision-cued}
DATA=${3:-runs/data/decision-cued}
PY=${PY:-.venv/bin/python}
F=${F:-600}
C=${C:-150}
M=${M:-300}
START=8fbbdcd
export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$RUNS"
source "$(dirname "$0")/pipeline_stage.sh"
stage data "$DATA/manifest.json" $PY -m train.decision_data --out "$DATA" --seed "$SEED" --format 3000 --cued-format 3000
mkdir -p "$RUNS/start"
stage start "$RUNS/start/checkpoints/decision-warmup/decision.json" \
  bash -c "git archive $START checkpoints/decision-warmup | tar -x -C '$RUNS/start'"
stage base "$RUNS/base/decision.json" $PY -m train.decision_vocab --init "$RUNS/start/checkpoints/decision-warmup" \
  --out "$RUNS/base"
stage format "$RUNS/format/model" $PY -m train.decision_supervised --arm continuation --partition format \
  --init "$RUNS/base" --out "$RUNS/format" --data "$DATA" --steps "$F" --batch 32 --lr 2e-3 --option_aux 1.0 --seed "$SEED"
stage clear_data "$DATA-clear/manifest.json" $PY -m train.decision_data --out "$DATA-clear" --seed "$SEED" \
  --format 0 --cued-format 3000 --cued-kinds clear
stage clear "$RUNS/clear/model" $PY -m train.decision_supervised --arm continuation --partition format \
  --init "$RUNS/format/model" --out "$RUNS/clear" --data "$DATA-clear" --steps "$C" --batch 32 --lr 1e-3 --option_aux 1.0 --seed "$SEED"
stage mixed "$RUNS/mixed/model" $PY -m train.decision_supervised --arm continuation --partition format \
  --init "$RUNS/clear/model" --out "$RUNS/mixed" --data "$DATA" --steps "$M" --batch 32 --lr 5e-4 --option_aux 1.0 \
  --soft_sources cued --seed "$SEED"
stage warmup "$RUNS/warmup/model" $PY -m train.decision_supervised --arm continuation --partition warmup \
  --init "$RUNS/mixed/model" --out "$RUNS/warmup" --data "$DATA" --steps 100 --seed "$SEED"
stage rlcd "$RUNS/rlcd/model" $PY -m train.decision_rl --reward rlcd --init "$RUNS/warmup/model" --out "$RUNS/rlcd" \
  --data "$DATA" --seed "$SEED" &
RLCD=$!
stage rlvr "$RUNS/rlvr/model" $PY -m train.decision_rl --reward rlvr --init "$RUNS/warmup/model" --out "$RUNS/rlvr" \
  --data "$DATA" --seed "$SEED"
wait "$RLCD"
stage oracle "$RUNS/oracle/model" $PY -m train.decision_supervised --arm oracle --init "$RUNS/warmup/model" \
  --out "$RUNS/oracle" --data "$DATA" --seed "$SEED"
stage eval "$RUNS/eval.json" $PY -m train.decision_eval --checkpoints "$RUNS" \
  --arms "warmup=$RUNS/warmup/model,rlcd=$RUNS/rlcd/model,rlvr=$RUNS/rlvr/model,oracle=$RUNS/oracle/model" \
  --data "$DATA" --json "$RUNS/eval.json" --plots "$RUNS/plots"
