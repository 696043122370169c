"""Shared fixtures: where the published reference facts live (skip cleanly when absent)."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_reference() -> Path | None:
    """The ``../shared/reference`` folder beside the checkout, or $CLARIFYLAB_SHARED/reference."""
    base = Path(os.environ.get("CLARIFYLAB_SHARED", ROOT.parent / "shared"))
    ref = base / "reference"
    return ref if ref.is_dir() else None


@pytest.fixture
def reference_dir() -> Path:
    ref = shared_reference()
    if ref is None:
        pytest.skip("../shared/reference is not present on this machine")
    return ref
