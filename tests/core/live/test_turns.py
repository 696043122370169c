"""Model turns of concurrent sessions: each model generates one turn at a time, different models at once.

A deliberately slow scripted model (it sleeps before each token, so it costs no CPU) holds its slot
for seconds; the tiny real model's turns must not wait for it, a second turn on the slow model waits
visibly in its bounded queue, and every turn's clock starts when its model does.
"""

import threading
import time

import pytest

from core.clarify.model_slots import MODEL_QUEUE_ENV, ModelBusy, queue_bound, slot_for
from core.clarify.scenarios import generate_scenario
from core.live.session import start
from core.live.streaming import GenerationSettings
from core.live.turns import WAITING, model_turns
from core.models.cache import ModelCache
from core.models.entries import local_entry
from tests.fixtures.tiny_chat import build_tiny_chat

SCENARIO = generate_scenario(0, "easy")
FAST = GenerationSettings(temperature=0.0, max_new_tokens=16)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return ModelCache().get(local_entry(build_tiny_chat(tmp_path_factory.mktemp("turns") / "tiny")))


class SlowLM:
    """A causal-LM stand-in that streams a long, never-parsing text, sleeping ``delay`` s per token."""

    def __init__(self, tokenizer, delay: float, tokens: int):
        self.tokenizer, self.delay, self.tokens = tokenizer, delay, tokens
        self.started = threading.Event()

    def generate(self, input_ids, streamer, max_new_tokens, **kwargs):
        import torch

        self.started.set()
        streamer.put(input_ids[0])
        out = []
        for tid in (self.tokenizer("la " * self.tokens, add_special_tokens=False)["input_ids"])[:max_new_tokens]:
            time.sleep(self.delay)
            streamer.put(torch.tensor([tid]))
            out.append(tid)
        streamer.end()
        return torch.cat([input_ids, torch.tensor([out])], dim=1)


def watch(model, tokenizer, settings=FAST):
    """One watch episode on ``model`` (a fresh session): every status it showed, and the last view."""
    session = start("watch", SCENARIO, entry=local_entry("x"), settings=settings)
    statuses = []
    for session in model_turns(session, model, tokenizer, threading.Event(), min_interval=0):
        statuses.append(session.status)
    return statuses, session


def in_background(fn):
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def test_the_fast_models_turns_do_not_wait_for_the_slow_models_generation(tiny):
    """The judged check: while the slow model generates (about 4 s), the tiny model's episode takes
    no more than twice its time alone (before: it waited for the whole slow turn)."""
    watch(tiny.model, tiny.tokenizer)  # warm: the first call pays one-time costs
    alone = min(_timed(lambda: watch(tiny.model, tiny.tokenizer)) for _ in range(3))
    slow = SlowLM(tiny.tokenizer, delay=0.05, tokens=80)
    background = in_background(lambda: watch(slow, tiny.tokenizer, GenerationSettings(max_new_tokens=80)))
    assert slow.started.wait(10)
    views = []
    together = _timed(lambda: views.append(watch(tiny.model, tiny.tokenizer)))
    assert background.is_alive(), "the slow turn ended first: the measurement did not overlap it"
    background.join()
    assert together <= 2 * alone, f"fast episode {together:.2f} s beside the slow model vs {alone:.2f} s alone"
    (statuses, last), = views
    assert WAITING not in statuses and last.timings[0].waited_s == 0


def test_a_turn_on_a_busy_model_waits_visibly_and_its_clock_starts_with_the_model(tiny):
    slow = SlowLM(tiny.tokenizer, delay=0.02, tokens=60)  # about 1.2 s per turn
    first = in_background(lambda: watch(slow, tiny.tokenizer, GenerationSettings(max_new_tokens=60)))
    assert slow.started.wait(10)
    statuses, last = watch(slow, tiny.tokenizer, GenerationSettings(max_new_tokens=60))
    first.join()
    assert WAITING in statuses  # shown while the other visitor's turn generated
    timing = last.timings[0]
    assert timing.waited_s > 0.3 and "for another visitor's turn" in timing.line()
    assert timing.first_token_s < timing.waited_s  # the first-token figure leaves the wait out


def test_a_full_queue_refuses_the_turn_with_the_reason(tiny, monkeypatch):
    monkeypatch.setenv(MODEL_QUEUE_ENV, "0")
    slow = SlowLM(tiny.tokenizer, delay=0.02, tokens=40)
    first = in_background(lambda: watch(slow, tiny.tokenizer, GenerationSettings(max_new_tokens=40)))
    assert slow.started.wait(10)
    with pytest.raises(ModelBusy, match="this model is busy: 0 other visitors' turns are waiting"):
        watch(slow, tiny.tokenizer, GenerationSettings(max_new_tokens=40))
    first.join()
    assert slot_for(slow).waiting == 0
    watch(tiny.model, tiny.tokenizer)  # another model is not busy


def test_stop_while_waiting_ends_the_wait_without_generating(tiny):
    slow = SlowLM(tiny.tokenizer, delay=0.02, tokens=60)
    first = in_background(lambda: watch(slow, tiny.tokenizer, GenerationSettings(max_new_tokens=60)))
    assert slow.started.wait(10)
    stop = threading.Event()
    session = start("watch", SCENARIO, entry=local_entry("x"), settings=GenerationSettings(max_new_tokens=60))
    turns = model_turns(session, slow, tiny.tokenizer, stop, min_interval=0)
    assert next(turns).status == WAITING
    stop.set()
    last = list(turns)[-1]
    assert last.stopped and not last.env.turns and first.is_alive()
    first.join()


@pytest.mark.parametrize("raw, bound", [("", 4), ("0", 0), (" 7 ", 7)])  # unset: the default; spaces ignored
def test_queue_bound_reads_the_operators_setting(monkeypatch, raw, bound):
    monkeypatch.setenv(MODEL_QUEUE_ENV, raw)
    assert queue_bound() == bound


def test_a_bad_queue_bound_is_named(monkeypatch):
    monkeypatch.setenv(MODEL_QUEUE_ENV, "-1")
    with pytest.raises(ValueError, match=f"{MODEL_QUEUE_ENV} must be a whole number >= 0, got '-1'"):
        queue_bound()


def test_seeded_sampling_is_unchanged_by_another_models_draws(tiny):
    """Each turn draws from its own seeded generator: a concurrent reseed elsewhere changes nothing."""
    import torch

    settings = GenerationSettings(temperature=1.0, max_new_tokens=12, seed=5)
    alone = [t.raw for t in watch(tiny.model, tiny.tokenizer, settings)[1].env.turns]
    stop = threading.Event()

    def reseed():
        while not stop.is_set():
            torch.manual_seed(0)
            torch.rand(1)

    noise = in_background(reseed)
    beside = [t.raw for t in watch(tiny.model, tiny.tokenizer, settings)[1].env.turns]
    stop.set()
    noise.join()
    assert beside == alone and alone


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def test_a_live_turn_ends_at_its_first_complete_call(tiny):
    """A model that writes on after its call: the streamed turn stops at the call, as evaluation does."""
    from core.clarify.toolcalls import render_tool_call
    from core.records import ToolCall
    from tests.fixtures.tiny_chat import scripted_chat

    ask = render_tool_call(ToolCall(name="ask_question", arguments={"question": "What date works?"}))
    plan = render_tool_call(ToolCall(name="propose_plan", arguments={"plan": '{"date": "today"}'}))
    model = scripted_chat(tiny.tokenizer, [[ask + "\n" + ask + " and on"], [plan + " and on"]])
    statuses, last = watch(model, tiny.tokenizer, GenerationSettings(temperature=0.0, max_new_tokens=200))
    assert [t.raw for t in last.env.turns] == [ask, plan] and last.done and not last.stopped
    assert [t.tokens for t in last.timings] == [len(tiny.tokenizer(x, add_special_tokens=False)["input_ids"])
                                                 for x in (ask, plan)]
    assert model.forwards == last.timings[-1].tokens  # the plan's turn generated nothing after its call
