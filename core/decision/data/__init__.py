"""Synthetic decision data: triage tickets with a known posterior, order records, access policies.

``build_dataset`` draws context-grouped partitions; ``probe_rows`` draws the calibration probe;
``store`` reads and writes them with a hashed manifest. Build on disk with
``python -m train.decision_data --out runs/data/decision --seed 0``.
"""

from core.decision.data.dataset import PARTITIONS, DataSpec, build_dataset, build_partition, probe_rows
from core.decision.data.rows import NOTA, DecisionRow

__all__ = ["NOTA", "PARTITIONS", "DataSpec", "DecisionRow", "build_dataset", "build_partition", "probe_rows"]
