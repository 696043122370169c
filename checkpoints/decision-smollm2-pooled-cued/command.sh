# How this head was made (session 34; 4.4 min on 2 CPUs, reading the features included). Layer 20 replaced session
# 31's layer 24 under results/cued_real_body/layer_rule.md (val NLL 0.9661 against 0.9867, then the agent on
# held-out scenarios 101-300). Data first, as train/decision_smollm2.sh builds it (cued rows from training seeds only):
export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/python -m train.decision_data --out runs/data/decision --seed 0
/usr/bin/time -v .venv/bin/python -m train.decision_pooled_cued --layer 20 --out runs/pooled-cued-20 \
  --json runs/pooled-cued-20/fit.json
cp runs/pooled-cued-20/head/* runs/pooled-cued-20/fit.json checkpoints/decision-smollm2-pooled-cued/
# the agent on all 300 held-out cued scenarios (the rule reads 101-300), then the first 100 as every ask-or-act replay
.venv/bin/python -m core.runs.eval --scenarios clarifylab-cued-v3 --rubric v3 --policy decision:checkpoints/decision-smollm2-pooled-cued \
  --out results/cued_real_body/all300/decision-smollm2-pooled-cued --no-progress
.venv/bin/python -m core.runs.eval --scenarios clarifylab-cued-v3 --rubric v3 --policy decision:checkpoints/decision-smollm2-pooled-cued \
  --limit 100 --out replays/clarifylab-cued-v3/decision-smollm2-pooled-cued --no-progress
.venv/bin/python results/cued_real_body/layer_agent.py.txt > results/cued_real_body/layer_agent.txt
