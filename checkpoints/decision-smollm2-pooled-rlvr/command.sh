# How this head was made (all three pooled arms come from one run; ~2 min on 2 CPUs with the features read,
# ~7 min more the first time they are read). Data first, as train/decision_smollm2.sh builds it:
export PYTHONPATH=. HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/python -m train.decision_natural_data --out runs/data/natural --seed 0
.venv/bin/python -m train.decision_data --out runs/data/decision --seed 0
/usr/bin/time -v .venv/bin/python -m train.decision_pooled --out runs/smollm2-pooled --json runs/smollm2-pooled/eval.json
# then: cp runs/smollm2-pooled/<arm>/* checkpoints/decision-smollm2-pooled-<arm>/
# 2026-12-03: the shipped heads re-saved unchanged (pooled_head.safetensors keeps its sha256) beside the base's
# config.json and tokenizer, which `python -m core.decision.serve DIR` (transformers serve) reads; a run since
# then writes them itself (core.decision.pooled.save_pooled):
.venv/bin/python - <<'PY'
from pathlib import Path
from core.decision.pooled import load_head, read_card, save_pooled
from core.models.loader import shared_causal_lm
for arm in ("warmup", "rlcd", "rlvr"):
    folder = Path(f"checkpoints/decision-smollm2-pooled-{arm}")
    card = read_card(folder)
    loaded = shared_causal_lm(card.base_model)
    save_pooled(folder, load_head(folder, loaded.model.config.hidden_size), base=card.base_model, layer=card.layer,
                training=card.training, body_config=loaded.model.config, tokenizer=loaded.tokenizer)
PY
# 2026-12-04 (session 17): softened by a rule fixed before val was read (results/smollm2_decision/pooled_sweeps.md,
# "Held-out tickets, not rows, and a Brier fit"); 1:07 wall on 2 CPUs with the features kept. Its --arms are the
# heads as trained, restored from git (the first softening, since replaced, had overwritten them here):
for a in warmup rlcd rlvr; do mkdir -p runs/unsoftened/$a; for f in $(git ls-tree --name-only db56d77^ checkpoints/decision-smollm2-pooled-$a/); do
  git show db56d77^:$f > runs/unsoftened/$a/$(basename $f); done; done
.venv/bin/python -m train.decision_pooled_temperature --arms warmup=runs/unsoftened/warmup,rlcd=runs/unsoftened/rlcd,rlvr=runs/unsoftened/rlvr --out runs/smollm2-pooled-t2 --json runs/smollm2-pooled-t2/report.json
# then: cp runs/smollm2-pooled-t2/<arm>/* checkpoints/decision-smollm2-pooled-<arm>/
