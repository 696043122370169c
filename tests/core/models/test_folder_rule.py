"""The one acceptance rule for a folder: Live play's check and ``python -m core.runs.eval``'s give
the same verdict, because both ask ``core.models.availability.check_folder``.

A folder holding ``tokenizer.json`` but no ``tokenizer_config.json`` is ready: transformers builds
the fast tokenizer from ``tokenizer.json`` alone and reads the chat template from
``chat_template.jinja``, so it loads and plays (eval used to refuse it while Live played it).
"""

import shutil

import pytest

from core.runs.eval import main as eval_main
from demo.live import handlers as live_handlers
from tests.fixtures.tiny_chat import build_tiny_chat


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_chat(tmp_path_factory.mktemp("rule") / "tiny")


def _without(tiny, tmp_path, *names):
    folder = tmp_path / "model"
    shutil.copytree(tiny, folder)
    for name in names:
        (folder / name).unlink()
    return folder


@pytest.mark.parametrize("drop, reason", [
    ((), None),                                                                     # the full layout
    (("tokenizer_config.json",), None),                           # tokenizer.json alone is a tokenizer
    (("tokenizer.json", "tokenizer_config.json"), "holds no tokenizer files"),     # no tokenizer files at all
    (("config.json",), "has no config.json"),                          # not a Hugging Face model folder
])
def test_live_play_and_eval_give_the_same_verdict(tiny, tmp_path, capsys, drop, reason):
    folder = _without(tiny, tmp_path, *drop)
    note = live_handlers.describe_model(None, None, str(folder))
    code = eval_main(["--policy", f"model:{folder}", "--scenarios", "generated:0-0:easy", "--max-new-tokens", "4",
                      "--out", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert note.startswith("✓ available" if reason is None else "✗ unavailable"), note
    assert code == (0 if reason is None else 2), err
    if reason is not None:  # both name the same missing file
        assert reason in note and reason in err


def test_a_gguf_file_is_accepted_by_the_same_rule_and_any_other_file_is_not(tmp_path):
    import importlib.util

    from core.models.availability import check_export, check_folder

    (tmp_path / "m.gguf").write_bytes(b"GGUF")  # only its name is read here; it loads (or fails) on use
    (tmp_path / "notes.txt").write_text("x")
    has_reader = importlib.util.find_spec("gguf") is not None
    found = check_folder(tmp_path / "m.gguf")
    assert found.ok is has_reader and (found.ok or "needs the gguf package" in found.message)
    assert check_export(tmp_path / "m.gguf", pipeline_ok=True).ok is has_reader  # the Decisions tab: the same
    assert "is a file, not a model folder" in check_folder(tmp_path / "notes.txt").message
