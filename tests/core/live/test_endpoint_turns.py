"""Live play through a chat endpoint: a scripted SSE server on 127.0.0.1 (streamed and whole
answers, tool-call deltas, Stop, every kind of endpoint error), then `transformers serve` with
our shipped policy (skipped when it or the checkpoint is not here)."""

import threading

import pytest

from core.clarify.scenarios import generate_scenario
from core.clarify.endpoint_policy import EndpointFailure
from core.live.endpoint_turns import MAX_TURN_CHARS, WORKER_NAME, StreamedAnswer, endpoint_turns
from core.live.session import answer_question, messages, start
from core.live.streaming import GenerationSettings
from core.live.turns import run_model
from core.models.cache import ModelCache
from core.models.lists import chat_endpoint_entry
from tests.core.clarify.test_endpoint_policy import CHECKPOINT, GREEDY, free_port
from tests.core.clarify.test_endpoint_policy import served  # noqa: F401 (a fixture, used by name)
from tests.fixtures.chat_stream_server import Reply, call_deltas, sse, tagged, text_deltas
from tests.fixtures.waiting import wait_for_threads_to_end, wait_until

SCENARIO = generate_scenario(0, "easy")
FIELD = SCENARIO.required_keys[0]
PLAN = tagged("propose_plan", plan="{}")


def begin(spec, mode="watch", settings=GenerationSettings(temperature=0.0, max_new_tokens=64, seed=3)):
    return start(mode, SCENARIO, entry=chat_endpoint_entry(spec), settings=settings)


def play(session, stop=None, **options):
    """(every draft shown while streaming, the last state): the generator yields one session object."""
    drafts = []
    for state in endpoint_turns(session, stop or threading.Event(), min_interval=0,
                                **{"retries": 0, "backoff_s": 0.01, **options}):
        drafts.append(state.draft)
    return [d for d in drafts if d], state


def test_streamed_tool_call_and_text_turns_play_a_watch_episode(chat_server):
    s = chat_server(sse(call_deltas("ask_question", {"question": f"What is the {FIELD}?"}, "call_a"), usage=9),
               sse(text_deltas(PLAN)))
    drafts, last = play(begin(s.spec()))
    assert last.done and last.env.termination == "plan" and last.episodes[-1].policy == s.spec()
    calls = [d for d in drafts if d.startswith('\n<tool_call>\n{"name": "ask_question", "arguments": ')]
    assert len(calls) > 3 and len(calls[0]) < len(calls[-1])  # the call, streamed fragment by fragment
    assert any(0 < len(d) < len(PLAN) for d in drafts if not d.startswith("\n"))  # the text, streamed
    first, second = s.requests
    assert first["stream"] is True and (first["temperature"], first["max_tokens"], first["seed"]) == (0.0, 64, 3000)
    assistant, tool = second["messages"][2:4]
    assert assistant["tool_calls"][0]["id"] == tool["tool_call_id"] == "call_a"
    assert second["seed"] == 3001
    t1, t2 = last.timings
    assert t1.streamed and t1.tokens == 9  # the server's usage count wins over the delta count
    assert t2.tokens == len(text_deltas(PLAN)) and 0 < t2.first_token_s <= t2.seconds
    assert "tokens/s" in t1.line()


def test_a_server_that_does_not_stream_is_one_chunk(chat_server):
    whole = {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": PLAN}}],
             "usage": {"completion_tokens": 12}}
    s = chat_server(Reply("json", whole))
    drafts, last = play(begin(s.spec()))
    assert last.env.termination == "plan" and drafts == [PLAN, PLAN]  # the chunk, then the finished turn
    assert not last.timings[0].streamed and "in one piece (12 tokens)" in last.timings[0].line()


def test_you_are_the_user_mode_plays_through_the_endpoint(chat_server):
    s = chat_server(sse(text_deltas(tagged("ask_question", question=f"What is the {FIELD}?"))), sse(text_deltas(PLAN)))
    _, asked = play(begin(s.spec(), mode="user"))
    assert asked.pending is not None and not asked.done and len(s.requests) == 1
    answered = answer_question(asked, "my answer is forty two")
    _, last = play(answered)
    assert last.done and "my answer is forty two" in s.requests[1]["messages"][-1]["content"]


def test_stop_ends_the_turn_and_closes_the_connection(chat_server):
    s = chat_server(sse(text_deltas("x" * 800, size=2), gap_s=0.01))
    stop, states = threading.Event(), []
    for state in endpoint_turns(begin(s.spec()), stop, min_interval=0, retries=0):
        states.append(state)
        if state.draft:
            stop.set()
    last = states[-1]
    assert last.stopped and "stopped" in last.status and not last.env.turns and last.timings
    wait_until(lambda: s.hangups, what="the server to see the connection closed", timeout_s=5)
    wait_for_threads_to_end(WORKER_NAME, timeout_s=5)
    assert s.hangups == 1 and s.sent_events < 100, "the server kept streaming after Stop"
    assert not any(t.name == WORKER_NAME for t in threading.enumerate())


MALFORMED_CALL = [{"tool_calls": [{"index": 0, "id": "c", "function": {"name": "ask_question", "arguments": "{bad"}}]}]


@pytest.mark.parametrize("reply, options, error", [
    (Reply("status", {"detail": "boom"}, status=500), {}, "HTTP 500"),
    (Reply("json", {"choices": []}, gap_s=1.0), {"timeout_s": 0.2}, "timed out"),
    (sse(MALFORMED_CALL), {}, "malformed tool call arguments"),
    (Reply("sse", [{"choices": [{"delta": {"content": "<tool"}}]}, {"error": "<b>model crashed</b>"}]), {},
     "error mid-stream"),
    (Reply("sse", ["not json"]), {}, "malformed stream event"),
])
def test_endpoint_errors_end_the_episode_with_the_error_as_text(chat_server, reply, options, error):
    s = chat_server(reply)
    _, last = play(begin(s.spec()), **options)
    assert last.done and last.env.termination == "unparseable" and error in last.env.turns[-1].parse_error
    assert "<b>" not in last.status and "<b>" not in str(messages(last))


def test_refused_connection_ends_the_episode():
    _, last = play(begin(f"openai:http://127.0.0.1:{free_port()}/v1#m"))
    assert last.done and "could not reach" in last.env.turns[0].parse_error and last.status.startswith("⚠️")


def test_a_refused_request_ends_only_the_turn_and_its_text_stays_text(chat_server):
    s = chat_server(Reply("status", {"error": "<script>bad key</script>"}, status=401), sse(text_deltas(PLAN)))
    _, refused = play(begin(s.spec()))
    assert not refused.done and refused.stopped and "HTTP 401" in refused.status and not refused.timings
    assert "<script>" not in refused.status and "&lt;script&gt;" in refused.status
    _, last = play(refused)  # Continue: the endpoint answers now
    assert last.env.termination == "plan"


def test_turns_ask_for_the_token_count_until_a_server_refuses_the_field(chat_server):
    refusal = {"detail": "Unexpected fields in the request: {'stream_options'}"}  # how a strict server says it
    s = chat_server(Reply("status", refusal, status=422),
                    sse(call_deltas("ask_question", {"question": f"What is the {FIELD}?"}, "call_a")),
                    sse(text_deltas(PLAN)))
    _, last = play(begin(s.spec()))
    assert last.env.termination == "plan" and len(s.requests) == 3
    asked, again, next_turn = s.requests
    assert asked["stream_options"] == {"include_usage": True}
    assert "stream_options" not in again and again["messages"] == asked["messages"]  # the same turn, re-sent
    assert "stream_options" not in next_turn  # refused once: not asked again


def test_run_model_takes_the_endpoint_path_without_loading_anything(chat_server):
    s = chat_server(sse(text_deltas(PLAN)))
    cache = ModelCache()
    *_, last = run_model(begin(s.spec()), cache, threading.Event())
    assert last.env.termination == "plan" and cache.loaded() == []


def test_partial_tool_call_deltas_merge_by_index():
    answer = StreamedAnswer()
    for delta in call_deltas("propose_plan", {"plan": "{}"}, "c9", size=3):
        answer.add({"choices": [{"delta": delta}]})
    call = answer.answer()["choices"][0]["message"]["tool_calls"][0]
    assert call == {"id": "c9", "type": "function", "function": {"name": "propose_plan", "arguments": '{"plan": "{}"}'}}


@pytest.mark.parametrize("delta, message", [
    ({"content": 5}, "wrong type"),
    ({"content": ["a"]}, "wrong type"),
    ({"tool_calls": ["x"]}, "wrong type"),
    ({"tool_calls": [{"function": "propose_plan"}]}, "wrong type"),
    ({"tool_calls": [{"index": [0], "function": {"name": "x"}}]}, "wrong type"),
    ({"tool_calls": [{"function": {"name": 5}}]}, "wrong type"),
    ({"content": "When\ud800?"}, "the endpoint sent text that holds a lone surrogate"),
    ({"content": "x" * (MAX_TURN_CHARS + 1)}, "it does not keep to max_tokens"),
])
def test_a_garbage_delta_ends_the_turn_in_words(delta, message):
    """Each of these raised AttributeError or TypeError out of the turn (and again on every Continue)."""
    with pytest.raises(EndpointFailure, match=message):
        StreamedAnswer().add({"choices": [{"delta": delta}]})


# ---- against a real server: transformers serve with our shipped checkpoint ---------------------


def test_transformers_serve_streams_the_same_greedy_episode_as_evaluation(served):  # noqa: F811
    """Streamed live turns read the same calls as evaluation's whole answers, token for token."""
    import random

    from core.clarify.endpoint_policy import make_endpoint_policy
    from core.clarify.environment import ClarifyEnv

    spec = f"openai:{served}#{CHECKPOINT}"
    drafts, last = play(begin(spec, settings=GenerationSettings(temperature=0.0, max_new_tokens=120)), retries=1)
    whole = ClarifyEnv(SCENARIO)
    make_endpoint_policy(spec, GREEDY).play(whole, random.Random(0))
    assert [t.raw for t in last.env.turns] == [t.raw for t in whole.turns]
    assert last.done and last.env.termination == whole.termination
    # transformers serve sends a tool call only once it parses, so each turn (one call) is one chunk:
    # the tab shows the time to the whole answer and the server's token count
    assert all(not t.streamed and t.tokens > 1 and t.seconds > 0 for t in last.timings)
    assert "in one piece" in last.timings[0].line()
