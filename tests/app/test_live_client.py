"""The Live play tab over HTTP: gradio_client streams a Watch episode with a tiny local model and
receives the final score; two clients play at once without seeing each other's state."""

import re
import threading

import gradio as gr
import pytest
from gradio_client import Client

from core.models.entries import local_entry
from core.runs.episode_log import read_episodes
from demo.live import layout
from tests.app.harness import launched, warm_live
from tests.fixtures.tiny_chat import build_tiny_chat
from tests.fixtures.waiting import WAIT_SCALE, wait_until

SETTINGS = dict(source="generated", family="event_planning", difficulty="easy", seed=3, heldout=0, rubric="v1",
                temperature=0.0, max_new_tokens=160, sample_seed=0, int8=False)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("live_app")
    build_tiny_chat(root / "models" / "tiny")
    build_tiny_chat(root / "slow", hidden=384, layers=6)  # slow enough that Stop lands mid-turn
    warm_live(local_entry(root / "models" / "tiny"), local_entry(root / "slow"))  # the two folders the tests play
    with gr.Blocks() as demo:
        with gr.Tab("Live play"):
            layout.build(demo, root / "replays", root / "models")
    demo.queue()
    with launched(demo) as url:
        yield url, root


def start(client, root, mode="watch", path="", **kw):
    args = {**SETTINGS, **kw}
    key = "tiny" if mode != "agent" else ""  # a discovered folder is keyed by its name
    return client.predict(key, path, mode, *args.values(), api_name="/live_start")


def test_watch_episode_streams_to_a_final_score(app):
    url, root = app
    client = Client(url, verbose=False)
    start(client, root)
    job = client.submit(api_name="/live_play")
    final = job.result(timeout=120 * WAIT_SCALE)
    streamed = job.outputs()
    drafts = [o[0][-1] for o in streamed[:-1] if "generating" in str(o[0][-1]["content"])]
    assert drafts, "no streamed partial turn arrived before the end"
    chat, status, header = final[0], final[1], final[5]
    assert "episode ended" in status
    score = float(re.search(r"score \*\*([0-9.]+)\*\*", header).group(1))
    log = root / "replays" / re.search(r"`(sessions/live-[0-9a-f]+-v1)`", header).group(1) / "episodes.jsonl"
    assert read_episodes(log).episodes[-1].score == score
    assert "Episode ended" in str(chat[-1]["content"])


def test_two_clients_never_see_each_other(app):
    url, root = app
    a, b = Client(url, verbose=False), Client(url, verbose=False)
    start(a, root, mode="agent")
    start(b, root, mode="agent", family="meeting_scheduling")
    results = {}

    def ask(name, client, question):
        results[name] = client.predict(question, api_name="/live_ask")

    threads = [threading.Thread(target=ask, args=("a", a, "Which date works?")),
               threading.Thread(target=ask, args=("b", b, "Who should attend?"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    text_a, text_b = str(results["a"][0]), str(results["b"][0])
    assert "Which date works?" in text_a and "Who should attend?" not in text_a
    assert "Who should attend?" in text_b and "Which date works?" not in text_b
    assert "meeting_scheduling" in results["b"][3] and "event_planning" in results["a"][3]


def test_stop_from_a_client_ends_the_generation(app):
    url, root = app
    client = Client(url, verbose=False)
    start(client, root, path=str(root / "slow"), max_new_tokens=1024)  # greedy: no end token here
    job = client.submit(api_name="/live_play")
    wait_until(job.outputs, lambda outs: any("generating" in str(o[1]) for o in outs),
               what="the first streamed turn", timeout_s=60)
    assert client.predict(api_name="/live_stop") == "stop requested"
    final = job.result(timeout=60 * WAIT_SCALE)
    assert final[1].startswith("stopped") and "generating" not in str(final[0][-1]["content"])
    assert not [t for t in threading.enumerate() if t.name == "live-generate"]


def test_a_long_generation_does_not_block_another_session(app):
    url, root = app
    a, b = Client(url, verbose=False), Client(url, verbose=False)
    start(a, root, path=str(root / "slow"), max_new_tokens=1024)  # greedy: runs until stopped
    long_job = a.submit(api_name="/live_play")
    wait_until(long_job.outputs, lambda outs: any("generating" in str(o[1]) for o in outs),
               what="the first streamed turn", timeout_s=60)
    start(b, root, mode="agent")
    answered = b.predict("Which date works?", api_name="/live_ask")  # served while a generates
    assert "Which date works?" in str(answered[0])
    assert not long_job.done(), "the other session's move waited for the long generation"
    a.predict(api_name="/live_stop")
    assert long_job.result(timeout=60 * WAIT_SCALE)[1].startswith("stopped")


def test_public_space_typed_keys_get_one_refusal_over_http(app, monkeypatch):
    """With SPACE_ID set, /live_check_model answers a missing path, a system folder, a file and an
    absolute model folder with one note naming no path, and /live_start loads none of them."""
    from demo.live import handlers

    url, root = app
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    monkeypatch.setattr(handlers, "PUBLIC", True)
    client = Client(url, verbose=False)
    keys = ["/no/such/model", "/etc", "/proc/self/environ", str(root / "slow"), str(root / "models" / "tiny")]
    notes = {client.predict(str(root / "models"), key, "", api_name="/live_check_model") for key in keys}
    assert len(notes) == 1 and "only folders inside the models folder" in next(iter(notes))
    assert not re.search(r"(?:^|[\s(`'\"])/[A-Za-z]", next(iter(notes)))
    for key in keys:
        status = client.predict(key, "", "watch", *SETTINGS.values(), api_name="/live_start")[1]
        assert "only folders inside the models folder" in status


def test_the_ask_or_act_agent_plays_a_cued_request_over_http(app):
    url, root = app
    client = Client(url, verbose=False)
    args = {**SETTINGS, "source": "cued", "rubric": "v3"}
    client.predict("decision:decision-rlcd", "", "watch", *args.values(), api_name="/live_start")
    final = client.submit(api_name="/live_play").result(timeout=120 * WAIT_SCALE)
    status, header, note = final[1], final[5], final[-2]
    assert "episode ended" in status and "policy `decision:checkpoints/decision-rlcd`" in header
    assert note.startswith("Beliefs of **checkpoints/decision-rlcd**; a question costs 0.08.")
    run = re.search(r"`(sessions/live-[0-9a-f]+-v3)`", header).group(1)
    assert read_episodes(root / "replays" / run / "episodes.jsonl").episodes[-1].beliefs is not None
    refused = client.predict("decision:/etc", "", "watch", *args.values(), api_name="/live_start")
    assert "pick one from the list" in refused[1]  # a typed path never becomes an agent's model
