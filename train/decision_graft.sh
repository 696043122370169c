#!/usr/bin/env bash
# The SmolLM2 letter arms through a grafted head, in order, timed (RUNS/times.log), resumable:
#   data -> graft (a head fitted on the last layer's cached inputs, written into it: train/decision_graft.py)
#   -> warmup (LoRA SFT of that layer from the graft) -> RLCD, RLVR (bandit REINFORCE from the warmup)
#   -> evaluation (natural held-out tickets, synthetic test prefix, probe) -> ship.
# Usage: bash train/decision_graft.sh [SEED] [RUNS] [KEYS]
#   KEYS identity (the shipped arms since session 20: each option line's end keyed by which option it names) or
#   option (the arms shipped before: every option token keyed by a bilinear over option means; with RL_STEPS=400).
#   QUERY=below: the head's query replaced by the mean of every token, handed down by a zero-query head in the layer
#   below (train/decision_graft_query.py); every stage then adapts the top two layers.
#   TRAIN_TOP=1 (with QUERY=below): warmup and RL train the top layer only; the one below keeps the graft's write.
#   UNTIL=rlvr: stop before the evaluation reads the test split (when a rule decides first on val).
#   PHRASEBOOK=v2 NATURAL=runs/data/natural-v2: train on the natural tickets of phrasebook v2 (24 more training
#   families; val and test the same files as v1's).
#   RL_PHRASEBOOK=extra RL_NATURAL=runs/data/natural-extra: the RL stages read tickets of other training families
#   than the warmup's (default: the warmup's), so RL prices the arm where it has not learnt the families;
#   RL_PHRASEBOOK=fresh RL_NATURAL=runs/data/natural-fresh: their urgency families new too (session 27's second run).
set -euo pipefail
SEED=${1:-0}
RUNS=${2:-runs/smollm2-graft}
KEYS=${3:-identity}
RL_STEPS=${RL_STEPS:-800}
QUERY=${QUERY:-last}
TOP=$([ "$QUERY" = below ] && echo 2 || echo 1)
NATURAL=${NATURAL:-runs/data/natural}
PHRASEBOOK=${PHRASEBOOK:-v1}
RL_NATURAL=${RL_NATURAL:-$NATURAL}
RL_PHRASEBOOK=${RL_PHRASEBOOK:-$PHRASEBOOK}
PY=${PY:-.venv/bin/python}
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$RUNS"
source "$(dirname "$0")/pipeline_stage.sh"
COMMON="--top_layers $TOP --train_top ${TRAIN_TOP:-0} --natural_share 0.6 --drill_share 0 --val_rows 300 --batch 32 --threads 2 --seed $SEED"
stage synthetic runs/data/decision/manifest.json $PY -m train.decision_data --out runs/data/decision --seed "$SEED"
stage natural "$NATURAL/manifest.json" $PY -m train.decision_natural_data --out "$NATURAL" --seed "$SEED" \
  --phrasebook "$PHRASEBOOK"
if [ "$RL_NATURAL" != "$NATURAL" ]; then
  stage rl_natural "$RL_NATURAL/manifest.json" $PY -m train.decision_natural_data --out "$RL_NATURAL" --seed "$SEED" \
    --phrasebook "$RL_PHRASEBOOK"
fi
stage graft "$RUNS/graft/model" $PY -m train.decision_graft --out "$RUNS/graft" --seed "$SEED" --keys "$KEYS" --query "$QUERY" \
  --natural "$NATURAL"
stage warmup "$RUNS/warmup/model" $PY -m train.decision_smollm2 --stage warmup --init "$RUNS/graft/model" \
  --out "$RUNS/warmup" --rows 3000 --steps 300 --lr 1e-4 --eval_every 25 $COMMON --natural "$NATURAL"
for arm in rlcd rlvr; do
  stage "$arm" "$RUNS/$arm/model" $PY -m train.decision_smollm2 --stage "$arm" --init "$RUNS/warmup/model" \
    --out "$RUNS/$arm" --rows 900 --steps "$RL_STEPS" --lr 3e-5 --eval_every 50 $COMMON --val_rows 1000 \
    --natural "$RL_NATURAL"
done
if [ "${UNTIL:-eval}" = rlvr ]; then echo "stopped before the evaluation (UNTIL=rlvr)"; exit 0; fi
stage eval "$RUNS/eval.json" $PY -m train.decision_smollm2_eval \
  --arms "warmup=$RUNS/warmup/model,rlcd=$RUNS/rlcd/model,rlvr=$RUNS/rlvr/model" \
  --natural "$NATURAL" --synthetic_rows 600 --probe_rows 2000 --cache "$RUNS/cache" --json "$RUNS/eval.json"
