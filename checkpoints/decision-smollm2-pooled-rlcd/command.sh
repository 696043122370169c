# How this head was made (all three pooled arms come from one run; ~2 min on 2 CPUs with the features read,
# ~7 min more the first time they are read). Data first, as train/decision_smollm2.sh builds it:
export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/python -m train.decision_natural_data --out runs/data/natural --seed 0
.venv/bin/python -m train.decision_data --out runs/data/decision --seed 0
/usr/bin/time -v .venv/bin/python -m train.decision_pooled --out runs/smollm2-pooled --json runs/smollm2-pooled/eval.json
# then: cp runs/smollm2-pooled/<arm>/* checkpoints/decision-smollm2-pooled-<arm>/
