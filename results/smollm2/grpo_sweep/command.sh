# The recorded learning-rate / group-size sweep for GRPO from checkpoints/clarify-smollm2-warmup.
# Each arm: same seed (so the same scenario order), 7 minutes of wall time on 2 CPUs, v2 reward.
# The winner's run goes on with --resume in the same output_dir (train/clarify_smollm2.sh).
export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# A planned arm "3e-4 8" was stopped in its first step once "3e-4 4" had collapsed (rewards 0.42, 0.00,
# 0.35, 0.49 on steps 2-5 against 0.64, 0.72, 0.77, 0.61 at 5e-5 on the same scenarios); "1e-4 4" and
# "5e-5 8" ran in its place.
ARMS=${ARMS:-"5e-5,4 3e-4,4 1e-4,4 5e-5,8"}
for arm in $ARMS; do
  IFS=, read lr g <<< "$arm"; set -- $lr $g
  .venv/bin/python -m train.clarify_grpo --config train/clarify_smollm2_grpo.yaml \
    --model checkpoints/clarify-smollm2-warmup --seed 0 --max_minutes 7 \
    --learning_rate $1 --num_generations $2 --per_device_train_batch_size $2 \
    --output_dir runs/smollm2-v2/sweep-lr$1-g$2
done
# grpo-probe is the same command as the "5e-5,4" arm with --max_minutes 12 (its first 4 steps are the
# arm's, reward for reward); the arm's 131 s a step were slowed by tests run beside it, the probe's are clean.
# The table (sweep.json / sweep.txt) and figure (sweep.png), run in this folder:
#   python -m train.clarify_curves grpo-probe/log_history.json sweep-lr5e-5-g4/log_history.json \
#     sweep-lr3e-4-g4/log_history.json sweep-lr1e-4-g4/log_history.json sweep-lr5e-5-g8/log_history.json \
#     --out sweep.png --table sweep.json --title "..." > sweep.txt
