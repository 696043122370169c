#!/bin/bash
# Session 11: finish the warmup's K=4 run on our 150 (v2), then the GRPO adapter's, in chunks.
cd /work/main
export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
common="--samples 4 --temperature 0.7 --batch-samples --no-progress --scenarios clarifylab-heldout --rubric v2 --batch-scenarios 4"
date; start=$(date +%s)
.venv/bin/python -m core.runs.eval $common --policy model:checkpoints/clarify-smollm2-warmup --out replays/clarifylab-heldout-v2/clarify-smollm2-warmup --resume
echo "warmup rc=$? wall=$(( $(date +%s) - start ))s"; date
start=$(date +%s)
.venv/bin/python -m core.runs.eval $common --policy model:checkpoints/clarify-smollm2-grpo --out replays/clarifylab-heldout-v2/clarify-smollm2-grpo --max-minutes 55
rc=$?; echo "grpo chunk1 rc=$rc wall=$(( $(date +%s) - start ))s"; date
if [ $rc = 3 ]; then
  start=$(date +%s)
  .venv/bin/python -m core.runs.eval $common --policy model:checkpoints/clarify-smollm2-grpo --out replays/clarifylab-heldout-v2/clarify-smollm2-grpo --resume --max-minutes 55
  echo "grpo chunk2 rc=$? wall=$(( $(date +%s) - start ))s"; date
fi
