# How this head was made (session 31; 17 s on 2 CPUs with the features kept, about 15 min more to read them the
# first time). Data first, as train/decision_smollm2.sh builds it (the cued rows come from training seeds only):
export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/python -m train.decision_data --out runs/data/decision --seed 0
# The features this run kept had been read by the probe (results/cued_real_body/probes.md) through the same
# reader, checked equal (max |difference| 0.0); a fresh run reads them itself.
/usr/bin/time -v .venv/bin/python -m train.decision_pooled_cued --out runs/pooled-cued --json runs/pooled-cued/fit.json
cp runs/pooled-cued/head/* checkpoints/decision-smollm2-pooled-cued/
# shipped by results/cued_real_body/reader_rule.md: the agent on the first 100 held-out cued scenarios, read once
.venv/bin/python -m core.runs.eval --scenarios clarifylab-cued-v3 --rubric v3 --policy decision:checkpoints/decision-smollm2-pooled-cued \
  --limit 100 --out replays/clarifylab-cued-v3/decision-smollm2-pooled-cued --no-progress
