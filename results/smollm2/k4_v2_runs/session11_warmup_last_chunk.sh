#!/bin/bash
# Session 11: after the GRPO adapter's run, the warmup's last chunk (the first try refused: flags in another order).
cd /work/main
while kill -0 7451 2>/dev/null; do sleep 20; done
export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
date; start=$(date +%s)
.venv/bin/python -m core.runs.eval --samples 4 --temperature 0.7 --batch-samples --no-progress --policy model:checkpoints/clarify-smollm2-warmup --scenarios clarifylab-heldout --rubric v2 --batch-scenarios 4 --out replays/clarifylab-heldout-v2/clarify-smollm2-warmup --resume
echo "warmup rc=$? wall=$(( $(date +%s) - start ))s"; date
