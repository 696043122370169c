"""Synthetic decision data: triage tickets with a known posterior, order records, access policies.

Every source emits ``rows`` (the labelled ``DecisionRow``): ``triage`` (support tickets with a known
posterior), ``orders`` (order records as JSON states) and ``access`` (access-policy requests) and ``cued`` (cued clarify requests, one choice question per
required field), with
``nota`` (option shuffling and "none of the above") and ``drills`` (binding drills for the format
stage). ``dataset`` draws context-grouped partitions (``build_dataset``) and the calibration probe
(``probe_rows``); ``store`` reads and writes them with a hashed manifest. Build on disk with
``python -m train.decision_data --out runs/data/decision --seed 0``. Apart from these partitions,
``natural`` writes triage's questions over natural-language tickets from ``ticket_families`` (issue and
urgency paraphrase families, split-disjoint: the transfer test) and, in phrasebook v2, ``more_ticket_families``
(more training families; phrasebooks extra, fresh and wide too); ``python -m train.decision_natural_data``.
"""

from core.decision.data.dataset import PARTITIONS, DataSpec, build_dataset, build_partition, probe_rows
from core.decision.data.rows import NOTA, DecisionRow

__all__ = ["NOTA", "PARTITIONS", "DataSpec", "DecisionRow", "build_dataset", "build_partition", "probe_rows"]
