export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
/usr/bin/time -v .venv/bin/python -m core.runs.eval --samples 1 --temperature 0.7 --batch-samples --no-progress --policy model:checkpoints/clarify-smollm2-warmup --scenarios clarifylab-heldout --rubric v2 --batch-scenarios 16 --out results/smollm2/warmup_v2_k1
