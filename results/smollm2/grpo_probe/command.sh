export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
/usr/bin/time -v .venv/bin/python -m train.clarify_grpo --config train/clarify_smollm2_grpo.yaml --model checkpoints/clarify-smollm2-warmup --seed 0 --output_dir runs/smollm2-v2/grpo-probe --max_minutes 12
