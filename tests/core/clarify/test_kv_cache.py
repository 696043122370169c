"""KV reuse across turns and episodes: the same tokens as without it, greedy and seeded-sampled,
on random tiny Qwen3 chat models; a template that is not prefix-preserving falls back cleanly."""

import logging

import pytest
import torch

from core.clarify.chat_policy import ChatPolicy, Dialog
from core.clarify.environment import ClarifyEnv
from core.clarify.kv_cache import MIN_SHARED, KVStore, prefix_copy, store_for
from core.clarify.scenarios import generate_scenario
from core.clarify.toolcalls import render_tool_call
from core.models.layers import holding
from core.records import Generation, ToolCall
from tests.fixtures.tiny_chat import build_tiny_chat
from train.clarify_tokenizer import CHAT_TEMPLATE

TURNS = 6


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_tiny_chat(tmp_path_factory.mktemp("kv") / "tiny", hidden=64, layers=2)
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def policies(tiny, temperature, **kw):
    model, tokenizer = tiny
    gen = Generation(temperature=temperature, max_new_tokens=12)
    return (ChatPolicy(model, tokenizer, generation=gen, kv=KVStore(), **kw),
            ChatPolicy(model, tokenizer, generation=gen, **kw))


def play_turns(reuse, plain, scenario, seed=0):
    """Six turns of one conversation; after each the sampled tokens plus a user message are
    appended (a random model's text is no tool call, so the environment is not stepped)."""
    dialog = reuse.start(ClarifyEnv(scenario, "v2"))
    ids, reused = list(dialog.ids), []
    filler = reuse.encode("<|im_end|>\n<|im_start|>user\nPlease go on.<|im_end|>\n<|im_start|>assistant\n")
    for turn in range(TURNS):
        [a] = reuse.sample([Dialog(prompt_ids=ids, text="")], seed=seed + turn)
        [b] = plain.sample([Dialog(prompt_ids=ids, text="")], seed=seed + turn)
        assert a == b, f"turn {turn + 1}: the tokens differ with KV reuse"
        reused.append(reuse.reused_tokens)
        ids = ids + a + filler
    return reused


@pytest.mark.parametrize("temperature", [0.0, 0.7])  # greedy; seeded sampling
def test_turns_are_the_same_tokens_with_and_without_reuse(tiny, temperature):
    reuse, plain = policies(tiny, temperature)
    reused = play_turns(reuse, plain, generate_scenario(3, "easy"))
    assert reused[0] == 0 and all(r > 0 for r in reused[1:])  # turn 1 cold, then the conversation so far
    assert reused == sorted(reused)


def test_second_episode_reuses_the_shared_system_prefix(tiny):
    reuse, plain = policies(tiny, 0.7)
    play_turns(reuse, plain, generate_scenario(3, "easy"))
    first = play_turns(reuse, plain, generate_scenario(4, "easy"), seed=100)[0]
    assert first >= MIN_SHARED  # system prompt and tools, not prefilled again
    assert any(pinned for _, pinned in reuse.kv.sizes())
    third = play_turns(reuse, plain, generate_scenario(5, "hard"), seed=200)[0]
    assert third >= MIN_SHARED


def test_a_template_that_rewrites_history_falls_back_and_logs(tiny, caplog):
    # the system block ends with a message count, so every rendering changes a token after the tools
    end_of_tools = "</tool_call>' + '<|im_end|>\\n' -}}{%- elif ns.first"
    assert end_of_tools in CHAT_TEMPLATE
    rewriting = CHAT_TEMPLATE.replace(end_of_tools, end_of_tools.replace(
        "' + '<|im_end|>", "\\nmessages: ' + (messages | length | string) + '<|im_end|>"))
    reuse, plain = policies(tiny, 0.7, chat_template=rewriting)
    env_a, env_b = (ClarifyEnv(generate_scenario(6, "medium"), "v2") for _ in range(2))
    dialog_a, dialog_b = reuse.start(env_a), plain.start(env_b)
    ask = reuse.encode(render_tool_call(ToolCall(name="ask_question", arguments={"question": "Which date?"})))
    with caplog.at_level(logging.INFO):
        for turn in range(3):
            assert reuse.sample([dialog_a], seed=turn) == plain.sample([dialog_b], seed=turn)
            if turn:  # the system prompt and tools are reused, nothing after the count
                assert MIN_SHARED <= reuse.reused_tokens < len(dialog_a.prompt_ids)
            # step both with the same scripted call: the transcript is re-tokenised each time
            reuse.advance(env_a, dialog_a, ask + [reuse.eos_id])
            plain.advance(env_b, dialog_b, ask + [plain.eos_id])
    assert not dialog_a.exact and dialog_a.ids == dialog_b.ids
    assert "not prefix-preserving" in caplog.text


def test_store_checks_and_evicts(tiny):
    from transformers import DynamicCache

    model, _ = tiny
    store = KVStore(capacity=2, pinned=1)
    with pytest.raises(ValueError, match="holds 0 tokens, not the 3 given"):
        store.give([1, 2, 3], DynamicCache(config=model.config))
    assert store.take(list(range(100))) == (None, 0)
    for start in range(3):
        ids = [start] + list(range(1, 40))
        with torch.no_grad():
            cache = model(torch.tensor([ids]), cache=DynamicCache(config=model.config)).cache
        store.give(ids, cache)
    assert store.sizes() == [(40, False), (40, False)]  # the oldest went
    cache, n = store.take([2] + list(range(1, 40)) + [7])
    assert n == 40 and cache.get_seq_length() == 40 and store.sizes() == [(40, False)]  # handed over whole
    assert store_for(model) is store_for(model)


def test_a_conversation_takes_its_own_cache_back_in_place_and_another_reads_a_pinned_copy(tiny):
    from transformers import DynamicCache

    model, _ = tiny
    ids = list(range(1, 41))

    def read(tokens):
        with torch.no_grad():
            return model(torch.tensor([tokens]), cache=DynamicCache(config=model.config)).cache

    store, cache = KVStore(), read(ids)
    store.give(ids, cache, "a")
    taken, n = store.take(ids[:35] + [7, 8, 9], "a")  # its transcript re-rendered the tail from token 35
    assert taken is cache and n == 35 and store.sizes() == []  # handed over, nothing copied or pinned
    fresh = read(ids[:35])  # the same positions read alone (causal: equal up to float rounding)
    for mine, theirs in zip(taken.layers, fresh.layers, strict=True):
        assert mine.keys.shape == theirs.keys.shape and torch.allclose(mine.keys, theirs.keys, atol=1e-5)
        assert mine.values.shape == theirs.values.shape and torch.allclose(mine.values, theirs.values, atol=1e-5)
    cache = read(ids)
    store.give(ids, cache, "a")
    copied, n = store.take(ids[:35] + [9] * 5, "b")  # another conversation: it may come back for its cache
    assert copied is not cache and n == 35 and cache.get_seq_length() == 40
    assert sorted(store.sizes()) == [(35, True), (40, False)]  # "a" keeps its cache; the shared prefix is pinned
    pinned = next(e for e in store._entries.values() if e.pinned).cache
    assert all(mine.keys.data_ptr() == theirs.keys.data_ptr() for mine, theirs in zip(copied.layers, pinned.layers))
    before = [layer.keys.clone() for layer in pinned.layers]
    with torch.no_grad():  # "b" reads on from the pinned tensors, the one copy made
        model(torch.tensor([[9] * 5]), cache=copied)
    assert copied.get_seq_length() == 40 and pinned.get_seq_length() == 35
    assert all(torch.equal(layer.keys, old) for layer, old in zip(pinned.layers, before))  # left as it was
    again, n = store.take(ids[:35] + [8] * 5, "c")  # a third conversation reads the same pinned tensors
    assert n == 35 and again.layers[0].keys.data_ptr() == pinned.layers[0].keys.data_ptr()
    assert sorted(store.sizes()) == [(35, True), (40, False)]


def test_a_cache_is_built_over_its_tensors_and_a_prefix_is_copied_once(tiny):
    from transformers import DynamicCache

    model, _ = tiny
    ids = list(range(1, 41))
    with torch.no_grad():
        whole = model(torch.tensor([ids]), cache=DynamicCache(config=model.config)).cache
    layers = [(layer.keys, layer.values) for layer in whole.layers]
    held = holding(layers)  # the same tensors: DynamicCache(ddp_cache_data=...) would have copied each
    assert all(a.keys is k and a.values is v for a, (k, v) in zip(held.layers, layers, strict=True))
    assert held.get_seq_length() == 40
    copy = prefix_copy(whole, 30)
    for mine, (k, v) in zip(copy.layers, layers, strict=True):
        assert mine.keys.untyped_storage().data_ptr() != k.untyped_storage().data_ptr()
        assert torch.equal(mine.keys, k[:, :, :30]) and torch.equal(mine.values, v[:, :, :30])
    with torch.no_grad():  # both read on as a cache built from scratch does
        fresh = model(torch.tensor([ids[:30]]), cache=DynamicCache(config=model.config)).cache
        a = model(torch.tensor([[7, 8]]), cache=copy).logits
        b = model(torch.tensor([[7, 8]]), cache=fresh).logits
    assert torch.allclose(a, b, atol=1e-5) and copy.get_seq_length() == 32


def test_turns_whose_sampled_text_is_replaced_reuse_in_place(tiny):
    reuse, plain = policies(tiny, 0.0)
    dialog = reuse.start(ClarifyEnv(generate_scenario(3, "easy"), "v2"))
    ids = list(dialog.ids)
    scripted = reuse.encode(render_tool_call(ToolCall(name="get_task_info", arguments={})))
    filler = reuse.encode("<|im_end|>\n<|im_start|>user\nPlease go on.<|im_end|>\n<|im_start|>assistant\n")
    reused = []
    for turn in range(4):
        [a] = reuse.sample([Dialog(prompt_ids=ids, text="", conversation=1)], seed=turn)
        [b] = plain.sample([Dialog(prompt_ids=ids, text="", conversation=1)], seed=turn)
        assert a == b, f"turn {turn + 1}: the tokens differ with KV reuse"
        reused.append(reuse.reused_tokens)
        ids = ids + a[:2] + scripted + filler  # as the bench's scripted calls: the sampled tail is not kept
    assert reused[0] == 0 and all(r >= len(ids) // 2 for r in reused[1:])
    assert all(not pinned for _, pinned in reuse.kv.sizes())  # one conversation: nothing was copied to pin


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_the_shipped_policy_plays_the_same_episodes_with_reuse(temperature):
    # a trained policy makes real multi-turn episodes: every turn after the first reuses the last
    import random
    from pathlib import Path

    from core.clarify.chat_policy import load_chat_policy

    folder = Path(__file__).resolve().parents[3] / "checkpoints" / "clarify-grpo"
    if not (folder / "model.safetensors").is_file():
        pytest.skip("checkpoints/clarify-grpo is not trained in this checkout")
    reuse = load_chat_policy(folder, Generation(temperature=temperature, max_new_tokens=120))
    plain = ChatPolicy(reuse.model, reuse.tokenizer, generation=reuse.generation)
    reused = []
    original = reuse.sample

    def counting(dialogs, seed, streamer=None):
        out = original(dialogs, seed, streamer)
        reused.append(reuse.reused_tokens)
        return out

    reuse.sample = counting
    for seed in range(3):
        envs = [ClarifyEnv(generate_scenario(seed, "medium"), "v2") for _ in range(2)]
        for policy, env in zip((reuse, plain), envs):
            policy.play(env, random.Random(seed))
        assert [t.raw for t in envs[0].turns] == [t.raw for t in envs[1].turns]
        assert len(envs[0].turns) > 2 and envs[0].score == envs[1].score
    assert sum(r > 0 for r in reused) >= len(reused) - 1  # all but the very first turn


def test_a_batch_layout_over_held_rows_reads_as_the_whole_rows(tiny):
    """Rows that continue cached tokens (different lengths held, different lengths to prefill, one
    with nothing held) give each real position the logits of that row read alone."""
    from transformers import DynamicCache

    from core.clarify.kv_cache import RowKV, batch_layout, row_caches

    model, _ = tiny
    rows = [list(range(5, 40)), list(range(7, 30)) + [3, 4], list(range(9, 22))]

    def read(ids):
        with torch.no_grad():
            out = model(torch.tensor([ids]), cache=DynamicCache(config=model.config), use_cache=True)
        return out.logits[0], RowKV(tuple(ids), [(layer.keys, layer.values) for layer in out.cache.layers])

    held = [read(rows[0][:30])[1], read(rows[1][:10])[1], None]
    layout = batch_layout(rows, held, pad_id=0)
    assert layout.held == [30, 10, 0] and layout.width == 30 and layout.cache.get_seq_length() == 30
    with torch.no_grad():
        logits = model(input_ids=layout.input_ids[:, 30:], attention_mask=layout.attention_mask,
                       position_ids=(layout.attention_mask.cumsum(-1) - 1).clamp(min=0)[:, 30:], cache=layout.cache).logits
    for i, (row, h) in enumerate(zip(rows, layout.held)):
        rest = len(row) - h
        assert torch.allclose(logits[i, -rest:], read(row)[0][h:], atol=1e-4), f"row {i}"
    kept = [[1, 2], [3], [4, 5, 6]]
    after = row_caches(layout, rows, kept, generated=1)  # a one-step generate fed no new token
    assert [kv.ids for kv in after] == [tuple(r) for r in rows]
    assert all(torch.allclose(kv.layers[0][0], read(r)[1].layers[0][0], atol=1e-5) for kv, r in zip(after, rows))


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_batched_episodes_are_the_same_with_each_rows_own_cache(temperature):
    """play_batch keeping each dialog's keys/values (and the shared system prompt read once) plays
    the episodes it plays prefilling everything every turn, on a policy that makes real episodes."""
    import random
    from pathlib import Path

    from core.clarify.chat_policy import load_chat_policy

    folder = Path(__file__).resolve().parents[3] / "checkpoints" / "clarify-warmup"
    policy = load_chat_policy(folder, Generation(temperature=temperature, max_new_tokens=120))
    played = {}
    for flag in (False, True):
        policy.batch_kv = flag
        envs = [ClarifyEnv(generate_scenario(s, d), "v2") for s in (1, 2) for d in ("easy", "hard")]
        dialogs = policy.play_batch(envs, random.Random(0))
        played[flag] = [e.turns for e in envs], [d.ids for d in dialogs]
        assert all(d.kv is None for d in dialogs)  # dropped when each episode ended
    assert played[True] == played[False]
    assert max(len(turns) for turns in played[True][0]) >= 4  # multi-turn: the caches were carried
