"""Every `python -m X` written in our docs, model cards and run summaries names a module that imports.

Modules move (core/eval.py became core/runs/eval.py); a command left behind in a card or a
summary.json still reads fine and fails only when someone copies it. Files come from git: tracked
ones plus untracked ones git does not ignore (new docs pages before their first commit).
"""

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = re.compile(r"python3?\s+-m\s+([A-Za-z_][\w.]*)")


def _documents() -> list[Path]:
    """Markdown anywhere (README, docs/, model cards) and every run's summary.json."""
    listed: set[str] = set()
    for extra in ((), ("--others", "--exclude-standard")):
        done = subprocess.run(["git", "ls-files", *extra], cwd=ROOT, capture_output=True, text=True, check=True)
        listed.update(done.stdout.splitlines())
    wanted = [p for p in listed if p.endswith(".md") or Path(p).name == "summary.json"]
    return [ROOT / p for p in sorted(wanted) if (ROOT / p).is_file()]


def _commands() -> dict[str, list[str]]:
    """Module name -> every 'file:line' that runs it."""
    found: dict[str, list[str]] = {}
    for doc in _documents():
        for number, line in enumerate(doc.read_text(errors="replace").splitlines(), 1):
            for module in COMMAND.findall(line):
                found.setdefault(module.rstrip("."), []).append(f"{doc.relative_to(ROOT)}:{number}")
    return found


def _import_error(module: str) -> str | None:
    """Why `python -m module` would fail to start, or None when it would import."""
    try:
        imported = importlib.import_module(module)
    except BaseException as error:  # SystemExit and friends too: a module must import quietly
        if isinstance(error, KeyboardInterrupt):
            raise
        return f"{type(error).__name__}: {error}"
    # `python -m package` runs package.__main__, so a package needs one
    if hasattr(imported, "__path__") and importlib.util.find_spec(module + ".__main__") is None:
        return "a package without __main__"
    return None


def test_documents_are_found():
    names = {p.name for p in _documents()}
    assert {"README.md", "summary.json"} <= names


def test_every_documented_module_imports():
    if str(ROOT) not in sys.path:  # `python -m` runs from the repository root
        sys.path.insert(0, str(ROOT))
    failures = []
    for module, places in sorted(_commands().items()):
        error = _import_error(module)
        if error:
            failures += [f"{place}: python -m {module}: {error}" for place in places]
    assert not failures, "\n".join(failures)
