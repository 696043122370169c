"""Importing every core module pulls in neither gradio nor trl (core sits below demo/ and train/)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_core_imports_no_ui_or_trainer():
    modules = sorted(p.stem for p in (ROOT / "core").glob("*.py") if p.stem != "__init__")
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module('core.' + m)\n"
        "bad = [m for m in ('gradio', 'trl') if m in sys.modules]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    # a fresh interpreter: this test process may already hold gradio from other tests
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
