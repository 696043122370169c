# GRPO from checkpoints/clarify-smollm2-warmup, seed 0, in two chunks (code of this commit).
export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# chunk 1 (steps 1-5): the sweep's "1e-4,4" arm (results/smollm2/grpo_sweep/command.sh), 7 minutes
.venv/bin/python -m train.clarify_grpo --config train/clarify_smollm2_grpo.yaml \
  --model checkpoints/clarify-smollm2-warmup --seed 0 --max_minutes 7 \
  --learning_rate 1e-4 --num_generations 4 --per_device_train_batch_size 4 \
  --output_dir runs/smollm2-v2/sweep-lr1e-4-g4
cp -r runs/smollm2-v2/sweep-lr1e-4-g4 runs/smollm2-v2/grpo
# chunk 2 (steps 6-50): resumed from its checkpoint-5 (optimizer, RNG and step), 55 minutes
/usr/bin/time -v .venv/bin/python -m train.clarify_grpo --config train/clarify_smollm2_grpo.yaml \
  --model checkpoints/clarify-smollm2-warmup --seed 0 --learning_rate 1e-4 --num_generations 4 \
  --per_device_train_batch_size 4 --output_dir runs/smollm2-v2/grpo --resume --max_minutes 55
# shipped: adapter_config.json, adapter_model.safetensors, training_info.json, log_history.json of
# runs/smollm2-v2/grpo; then
python -m train.clarify_curves checkpoints/clarify-smollm2-grpo/log_history.json \
  --out checkpoints/clarify-smollm2-grpo/training_curves.png --trend checkpoints/clarify-smollm2-grpo/reward_trend.json
