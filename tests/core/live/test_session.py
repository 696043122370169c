"""Live play core: scenario picking, the three modes, bad model output, Stop, saving a run."""

import copy
import json
import threading
import time
from contextlib import contextmanager

import pytest

from core.clarify.policies import revealing_question
from core.clarify.scenarios import generate_scenario, load_cued, load_scenarios
from core.live.session import (MAX_ANSWER_CHARS, LiveError, agent_move, answer_question, messages, pick_scenario,
                               save_run, start)
from core.live.streaming import GenerationSettings
from core.live.turns import model_turns
from core.models.cache import ModelCache
from core.models.entries import local_entry
from core.runs.episode_log import read_episodes
from core.runs.replays import discover_runs, load_run
from tests.fixtures.tiny_chat import build_tiny_chat
from tests.fixtures.waiting import wait_for_threads_to_end


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = build_tiny_chat(tmp_path_factory.mktemp("live") / "tiny")
    return ModelCache().get(local_entry(path))


class ScriptedLM:
    """A stand-in for a causal LM: ``generate`` streams the next scripted text token by token
    through the real tokenizer, honouring max_new_tokens and the end-of-message id."""

    def __init__(self, tokenizer, texts):
        self.tokenizer, self.texts, self.prompts = tokenizer, list(texts), []

    def generate(self, input_ids, streamer, max_new_tokens, eos_token_id, **kwargs):
        import torch

        self.prompts.append(self.tokenizer.decode(input_ids[0]))
        streamer.put(input_ids[0])
        ids = self.tokenizer(self.texts.pop(0), add_special_tokens=False)["input_ids"] + [eos_token_id]
        out = []
        for tid in ids[:max_new_tokens]:
            streamer.put(torch.tensor([tid]))
            out.append(tid)
        streamer.end()
        return torch.cat([input_ids, torch.tensor([out])], dim=1)


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def play(session, lm, tokenizer, stop=None):
    *_, last = model_turns(session, lm, tokenizer, stop or threading.Event(), min_interval=0)
    return last


SCENARIO = generate_scenario(0, "easy")


@pytest.mark.parametrize("source, family, difficulty, seed, index, expect", [
    ("generated", "any", "easy", 0, 0, SCENARIO.id),                # "any" keeps the seed
    ("generated", "meeting_scheduling", "hard", 0, 0, "meeting_scheduling_hard"),  # family searched for
    ("heldout", "any", "easy", 0, 4, load_scenarios("clarifyrl-heldout", 5)[4].id),  # by index
    ("cued", "any", "medium", 70000, 0, load_cued()[1].id),         # the cued held-out set's scenario
    ("cued", "meeting_scheduling", "hard", 0, 0, "meeting_scheduling_hard"),
])
def test_pick_scenario(source, family, difficulty, seed, index, expect):
    assert pick_scenario(source, family, difficulty, seed, index).id.endswith(expect)


@pytest.mark.parametrize("args, message", [
    (("heldout", "any", "easy", 0, 300), "held-out index"),
    (("generated", "cooking", "easy", 0, 0), "unknown family"),
    (("cued", "cooking", "easy", 0, 0), "unknown family"),
    (("uploaded", "any", "easy", 0, 0), "unknown scenario source 'uploaded'"),
])
def test_pick_scenario_rejects(args, message):
    with pytest.raises(LiveError, match=message):
        pick_scenario(*args)


@pytest.mark.parametrize("source, rubric", [("cued", "v1"), ("cued", "v2"), ("generated", "v3")])
def test_a_cued_scenario_is_scored_with_v3_and_only_it(source, rubric):
    scenario = pick_scenario(source, "any", "easy", 0)
    with pytest.raises(LiveError, match=f"rubric {rubric} with an? (un)?cued scenario"):
        start("agent", scenario, rubric)
    assert start("agent", pick_scenario("cued", "any", "easy", 0), "v3").env.rubric == "v3"


def test_agent_mode_full_episode_scores_and_saves_a_run(tmp_path):
    session = start("agent", SCENARIO, "v1")
    profile = SCENARIO.hidden_profile
    for field in profile:
        before, asked = session, session.env.questions_asked
        session = agent_move(session, "ask_question", revealing_question(field, tuple(profile), "v1"))
        assert before.env.questions_asked == asked  # the input session is never mutated
    assert session.budget()["questions_left"] == SCENARIO.max_questions - len(profile)
    plan = {**profile, **{k: "unknown" for k in SCENARIO.required_keys if k not in profile}}
    session = agent_move(session, "propose_plan", json.dumps(plan))
    assert session.done and session.env.termination == "plan"
    assert session.episodes[-1].score == session.env.score > 0.8
    log = save_run(session, tmp_path)
    assert log == tmp_path / session.run_name / "episodes.jsonl"
    assert read_episodes(log).episodes[0].policy == "human"
    assert json.loads((log.parent / "summary.json").read_text())["n"] == 1
    assert session.run_name not in {run.name for run in discover_runs(tmp_path)}  # listed to no other page
    assert session.owned_runs == (session.run_name,)  # only this page's Replays tab lists it
    assert load_run(tmp_path, session.run_name, owned=True).table["run"].tolist() == [session.run_name]
    with pytest.raises(LiveError, match="has ended"):
        agent_move(session, "ask_question", "more?")


@pytest.mark.parametrize("tool, text, message", [
    ("propose_plan", "[1, 2]", "must be a JSON object"),   # a JSON list
    ("propose_plan", "{not json", "must be a JSON object"),  # not JSON
    ("ask_question", "   ", "type a question"),           # blank question
    ("delete_everything", "", "unknown tool"),            # not a tool
])
def test_agent_mode_rejects_bad_moves(tool, text, message):
    with pytest.raises(LiveError, match=message):
        agent_move(start("agent", SCENARIO), tool, text)


def test_next_episode_keeps_the_session_run(tmp_path):
    first = agent_move(start("agent", SCENARIO), "propose_plan", "{}")
    second = agent_move(start("agent", SCENARIO, previous=first), "propose_plan", "{}")
    assert second.session_id == first.session_id and len(second.episodes) == 2
    ids = [e.id for e in read_episodes(save_run(second, tmp_path)).episodes]
    assert ids == [f"{SCENARIO.id}#0", f"{SCENARIO.id}#1"]  # same scenario twice: distinct ids
    other = start("agent", SCENARIO, "v2", previous=second)  # another rubric: another run
    assert other.session_id != second.session_id and other.episodes == []
    assert other.owned_runs == (second.run_name,)  # the page still owns the first rubric's run
    third = agent_move(other, "propose_plan", "{}")
    again = start("agent", SCENARIO, "v2", previous=third)
    assert again.owned_runs == (second.run_name, third.run_name)  # each run once


def test_a_full_session_begins_a_new_run_and_the_page_keeps_the_old(monkeypatch):
    """A session holds at most SESSION_EPISODES (every move copies it, every save rewrites its run)."""
    from core.live import session as live

    monkeypatch.setattr(live, "SESSION_EPISODES", 2)
    first = agent_move(start("agent", SCENARIO), "propose_plan", "{}")
    full = agent_move(start("agent", SCENARIO, previous=first), "propose_plan", "{}")
    fresh = start("agent", SCENARIO, previous=full)
    assert len(full.episodes) == 2 and fresh.episodes == [] and fresh.session_id != full.session_id
    assert fresh.owned_runs == (full.run_name,)  # Open in Replays still finds all of the full run


def test_a_huge_plan_is_refused_at_once_and_writes_nothing(tmp_path):
    session = start("agent", SCENARIO)
    plan = json.dumps({"notes": "x" * 5_000_000})
    started = time.perf_counter()
    with pytest.raises(LiveError, match=r"plans are limited to 2,000 characters \(yours has 5,000,013\)"):
        agent_move(session, "propose_plan", plan)
    assert time.perf_counter() - started < 1.0
    assert not session.done and not session.episodes and not list(tmp_path.iterdir())
    assert agent_move(session, "propose_plan", json.dumps({"notes": "x" * 1_900})).done  # under the bound


@pytest.mark.parametrize("text", [7, None, ["{}"]])  # what an API caller may send instead of text
def test_a_move_that_is_not_text_is_refused(text):
    with pytest.raises(LiveError, match="takes text, got"):
        agent_move(start("agent", SCENARIO), "propose_plan", text)


def test_watch_mode_plays_to_the_end_with_a_scripted_model(tiny):
    profile = SCENARIO.hidden_profile
    field = next(iter(profile))
    texts = [call("get_task_info"), call("ask_question", question=revealing_question(field, tuple(profile), "v1")),
             call("propose_plan", plan=json.dumps({field: profile[field]}))]
    lm = ScriptedLM(tiny.tokenizer, texts)
    session = play(start("watch", SCENARIO, entry=local_entry("x")), lm, tiny.tokenizer)
    assert session.done and [t.call.name for t in session.env.turns] == ["get_task_info", "ask_question", "propose_plan"]
    assert session.env.revealed == {field: profile[field]}
    assert "Required plan fields" in lm.prompts[0] and str(profile[field]) in lm.prompts[2]  # answers fed back
    assert session.episodes[-1].policy == "model:x" and session.episodes[-1].generation.temperature == 0.7


@pytest.mark.parametrize("text, termination, shown", [
    ("I think we should plan a party.", "unparseable", "no tool call found"),            # no tool call
    ('<tool_call>{"name": "ask_question", "arguments": {"question": </tool_call>', "unparseable",
     "not valid JSON"),                                                                  # malformed JSON
    ("la " * 400, "unparseable", "no tool call found"),                                # endless text, cut
])
def test_bad_output_ends_the_episode_visibly(tiny, text, termination, shown):
    session = start("watch", SCENARIO, entry=local_entry("x"), settings=GenerationSettings(max_new_tokens=60))
    session = play(session, ScriptedLM(tiny.tokenizer, [text]), tiny.tokenizer)
    assert session.env.termination == termination
    assert session.env.turns[0].raw.strip()[:20] == text.strip()[:20]
    transcript = json.dumps(messages(session))
    assert shown in transcript and "unparseable" in transcript


def test_unknown_tool_continues_with_an_error_in_the_transcript(tiny):
    texts = [call("book_venue", where="home"), call("propose_plan", plan="{}")]
    session = play(start("watch", SCENARIO, entry=local_entry("x")), ScriptedLM(tiny.tokenizer, texts), tiny.tokenizer)
    first = session.env.turns[0]
    assert "unknown tool" in first.result["error"] and session.env.termination == "plan"
    assert "unknown tool" in json.dumps(messages(session))


def test_user_mode_scores_the_persons_answers(tiny):
    profile = SCENARIO.hidden_profile
    first, second = list(profile)[:2]
    texts = [call("ask_question", question=revealing_question(first, tuple(profile), "v1")),
             call("ask_question", question=revealing_question(second, tuple(profile), "v1")),
             call("propose_plan", plan="{}")]
    lm = ScriptedLM(tiny.tokenizer, texts)
    session = play(start("user", SCENARIO, entry=local_entry("x")), lm, tiny.tokenizer)
    assert session.pending is not None and session.pending.field == first and not session.env.turns
    assert "waiting for your answer" in json.dumps(messages(session))
    session = answer_question(session, f"It is {profile[first]}, thanks")  # states the value
    assert session.env.turns[-1].result["field_revealed"] == first
    session = play(session, lm, tiny.tokenizer)
    session = answer_question(session, "no idea")  # does not state the hidden value
    result = session.env.turns[-1].result
    assert result["field_revealed"] is None and result["answer_missed"] == second and result["answer"] == "no idea"
    assert session.env.turns[-1].reward == 0.02  # scored like a question that revealed nothing (v1)
    session = play(session, lm, tiny.tokenizer)
    assert "no idea" in lm.prompts[2] and session.done
    # the agent reads the person's answers only: never what the simulator would have said (the value)
    assert "simulator_answer" not in lm.prompts[2] and "answer_missed" not in lm.prompts[2]
    assert str(profile[second]) not in lm.prompts[2].split("no idea")[-1]
    assert session.episodes[-1].fields_revealed == [first]
    with pytest.raises(LiveError, match="no question waiting"):
        answer_question(session, "late")


def test_a_sessions_turns_take_its_own_kv_cache_back_across_copies(tiny, monkeypatch):
    # every model_turns call plays a copy of the session (gr.State), so its environment is a new object each
    # time; the KV store must still see one conversation, or it copies the whole cache at every turn
    from core.clarify.kv_cache import KVStore

    keys, take = [], KVStore.take
    monkeypatch.setattr(KVStore, "take", lambda self, ids, conversation=None: (
        keys.append(conversation), take(self, ids, conversation))[1])
    profile = SCENARIO.hidden_profile
    first = list(profile)[0]
    texts = [call("ask_question", question=revealing_question(first, tuple(profile), "v1")),
             call("propose_plan", plan="{}")]
    session = play(start("user", SCENARIO, entry=local_entry("x")), ScriptedLM(tiny.tokenizer, texts), tiny.tokenizer)
    session = answer_question(session, f"It is {profile[first]}")
    session = play(session, ScriptedLM(tiny.tokenizer, texts[1:]), tiny.tokenizer)
    assert session.done and keys == [session.session_id] * 2


def test_overlong_visitor_text_is_refused_with_the_reason(tiny):
    texts = [call("ask_question", question=revealing_question(list(SCENARIO.hidden_profile)[0],
                                                              tuple(SCENARIO.hidden_profile), "v1"))]
    session = play(start("user", SCENARIO, entry=local_entry("x")), ScriptedLM(tiny.tokenizer, texts), tiny.tokenizer)
    with pytest.raises(LiveError, match=r"limited to 80 characters \(yours has 100000\).*tool-call format"):
        answer_question(session, "x" * 100_000)
    with pytest.raises(LiveError, match=r"limited to 80 characters \(yours has 81\)"):
        answer_question(session, "x" * 81)  # refused, never cut
    assert session.pending is not None  # the question still waits; a short answer goes through
    assert answer_question(session, "x" * MAX_ANSWER_CHARS).env.turns[-1].result["answer"] == "x" * 80
    with pytest.raises(LiveError, match="questions are limited to 300"):
        agent_move(start("agent", SCENARIO), "ask_question", "why? " * 1000)


def test_visitor_text_that_is_not_text_is_refused_and_the_episode_goes_on(tiny):
    """A lone surrogate (what JSON's "\\ud800" decodes to) in an answer once broke every later turn of the
    episode (the tokenizer raised); in a plan it broke the end panel after the run was written."""
    texts = [call("ask_question", question=revealing_question(list(SCENARIO.hidden_profile)[0],
                                                              tuple(SCENARIO.hidden_profile), "v1"))]
    session = play(start("user", SCENARIO, entry=local_entry("x")), ScriptedLM(tiny.tokenizer, texts), tiny.tokenizer)
    with pytest.raises(LiveError, match=r"the answer holds a lone surrogate \(\\ud800\) at character 11"):
        answer_question(session, "next week \ud800")
    assert session.pending is not None and answer_question(session, "next week").env.turns[-1].result["answer"]
    agent = start("agent", SCENARIO)
    with pytest.raises(LiveError, match="the question holds a lone surrogate"):
        agent_move(agent, "ask_question", "When\udc00?")
    with pytest.raises(LiveError, match="the plan holds a lone surrogate"):
        agent_move(agent, "propose_plan", '{"date": "x\ud800"}')
    with pytest.raises(LiveError, match=r"the plan, read as JSON, holds a lone surrogate"):
        agent_move(agent, "propose_plan", '{"date": "x\\ud800"}')
    assert not agent.done and agent_move(agent, "propose_plan", '{"date": "x"}').done


@contextmanager
def counting_forward_without_eos(lm, tokenizer):
    """Count forward passes, and forbid end-of-turn tokens so only a stop can end the turn."""
    calls = []
    hook = lm.register_forward_hook(lambda *a: calls.append(1))
    lm.generation_config.suppress_tokens = [tokenizer.eos_token_id, tokenizer.pad_token_id]
    try:
        yield calls
    finally:
        hook.remove()
        lm.generation_config.suppress_tokens = None


def test_stop_really_stops_the_model(tiny):
    with counting_forward_without_eos(tiny.model, tiny.tokenizer) as calls:
        settings = GenerationSettings(temperature=1.0, max_new_tokens=2000)
        session = start("watch", SCENARIO, entry=local_entry("x"), settings=settings)
        stop = threading.Event()
        turns = model_turns(session, tiny.model, tiny.tokenizer, stop, min_interval=0)
        next(turns)
        stop.set()
        last = list(turns)[-1]
        done_at = len(calls)
        wait_for_threads_to_end("live-generate")
        assert len(calls) == done_at < 2000  # nothing runs after the turn was stopped
        assert last.stopped and last.draft == "" and not last.env.turns  # unfinished turn dropped
        assert not any(t.name == "live-generate" for t in threading.enumerate())


def test_closing_the_stream_stops_generation(tiny):
    with counting_forward_without_eos(tiny.model, tiny.tokenizer) as calls:
        session = start("watch", SCENARIO, entry=local_entry("x"),
                        settings=GenerationSettings(temperature=1.0, max_new_tokens=2000))
        turns = model_turns(session, tiny.model, tiny.tokenizer, threading.Event(), min_interval=0)
        next(turns)
        turns.close()  # what Gradio does when Stop cancels the event
        done_at = len(calls)
        wait_for_threads_to_end("live-generate")
        assert len(calls) == done_at < 2000
        assert not any(t.name == "live-generate" for t in threading.enumerate())


def test_sessions_deep_copy_and_never_share_state(tiny):
    a = start("agent", SCENARIO)
    b = start("agent", generate_scenario(1, "hard"))
    assert copy.deepcopy(a).env.scenario == a.env.scenario and a.session_id != b.session_id
    out = {}

    def run(name, session):
        for _ in range(3):
            session = agent_move(session, "ask_question", f"{name} question")
        out[name] = session

    threads = [threading.Thread(target=run, args=(n, s)) for n, s in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [t.call.arguments["question"] for t in out["a"].env.turns] == ["a question"] * 3
    assert [t.call.arguments["question"] for t in out["b"].env.turns] == ["b question"] * 3
    assert not a.env.turns and not b.env.turns


def test_save_run_stays_inside_the_replays_dir(tmp_path):
    session = agent_move(start("agent", SCENARIO), "propose_plan", "{}")
    session.session_id = "../../etc"
    with pytest.raises(LiveError, match="bad session id"):
        save_run(session, tmp_path)
    with pytest.raises(LiveError, match="no finished episode"):
        save_run(start("agent", SCENARIO), tmp_path)


def test_watch_needs_a_model_and_settings_are_checked():
    with pytest.raises(LiveError, match="needs a model"):
        start("watch", SCENARIO)
    with pytest.raises(ValueError, match="temperature"):
        GenerationSettings(temperature=-1)
    with pytest.raises(ValueError, match="max new tokens"):
        GenerationSettings(max_new_tokens=0)


def test_each_model_turn_records_its_speed_and_reuses_the_cache(tiny):
    # a real (random) model: greedy and capped, so each turn is exactly 6 tokens or ends early
    settings = GenerationSettings(temperature=0.0, max_new_tokens=6)
    session = play(start("watch", SCENARIO, entry=local_entry("x"), settings=settings), tiny.model, tiny.tokenizer)
    first = session.timings[0]
    assert first.turn == 1 and 0 < first.first_token_s <= first.seconds and 1 <= first.tokens <= 6
    assert "first token" in first.line() and "tokens/s" in first.line()
    again = play(start("watch", SCENARIO, entry=local_entry("x"), settings=settings), tiny.model, tiny.tokenizer)
    assert again.timings[0].reused_tokens > 0  # the same prompt: the second episode prefills one token
    assert [t.raw for t in again.env.turns] == [t.raw for t in session.env.turns]
