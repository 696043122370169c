"""Dependencies point one way: core/ sits below demo/ and train/, and demo/ below nothing but core/.

Two checks: every module's own import statements (read with ``ast``, lazy imports inside functions
included), and a fresh interpreter importing every core module without gradio or trl appearing.
openenv-core imports gradio when it loads, so ``core.clarify.serve`` and ``core.clarify.remote``
import it only inside the functions that serve or connect: the second check keeps them to that.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {
    "core": ("demo", "train", "bench", "app", "gradio", "gradio_client", "trl"),
    "demo": ("train", "bench", "app"),
}


def modules(package: str) -> list[str]:
    """Dotted names of every module under ``package/``, subpackages included."""
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def imported(path: Path) -> set[str]:
    """Top-level package names that a file imports, wherever the statement stands."""
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def test_every_subpackage_is_walked():
    names = modules("core")
    assert {"core.clarify.environment", "core.runs.eval", "core.live.session", "core.decision.data.rows"} <= set(names)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_module_imports_a_layer_above(package):
    bad = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        hits = imported(path) & set(FORBIDDEN[package])
        if hits:
            bad[str(path.relative_to(ROOT))] = sorted(hits)
    assert not bad, f"{package}/ must not import {FORBIDDEN[package]}: {bad}"


def test_core_imports_no_ui_or_trainer():
    code = (
        "import importlib, sys\n"
        f"for m in {modules('core')!r}: importlib.import_module(m)\n"
        "bad = [m for m in ('gradio', 'trl', 'demo', 'train') if m in sys.modules]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    # a fresh interpreter: this test process may already hold gradio from other tests
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
