"""Measuring decision models: labelled sets, calibration reports, per-arm scores, familiarity.

Modules: ``evalsets`` (labelled evaluation sets: the upload format, the test split, the probe),
``reports`` (per-model calibration reports with context-clustered intervals, the temperature
reference, the probe), ``scores`` (per-arm test and probe scores and paired differences, for
``train.decision_eval``), ``familiarity`` (a state's unknown-word rate under a model's tokenizer).
"""

__all__ = ["evalsets", "familiarity", "reports", "scores"]
