"""Live play through a chat endpoint in a real browser (Playwright + Debian Chromium): a scripted
SSE endpoint on 127.0.0.1 plays a Watch episode that streams and ends with its breakdown and
per-turn speed, Stop closes the stream on the endpoint, and an endpoint error shows as text."""

import gradio as gr
import pytest

from demo.live import layout
from tests.app.harness import WAIT_MS, chromium, launched
from tests.fixtures.chat_stream_server import Reply, call_deltas, sse, tagged, text_deltas
from tests.fixtures.waiting import wait_until

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("live_endpoint")
    with gr.Blocks() as demo:
        with gr.Tab("Live play"):
            layout.build(demo, root / "replays")
    demo.queue()
    with launched(demo) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with chromium(accept_on_path=False) as b:
        yield b


def open_with(browser, url, spec):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    # the page's own load event checks the default model first; typing before it has answered lets
    # that answer land after (and over) the typed endpoint's
    page.get_by_text("ready to load from").first.wait_for(timeout=WAIT_MS)
    box = page.get_by_label("…or a local model folder (Hugging Face layout)")
    box.fill(spec)
    box.press("Enter")
    page.get_by_text("reached when a turn is played").wait_for(timeout=WAIT_MS)
    return page


def test_watch_episode_streams_through_the_endpoint(app, browser, chat_server, tmp_path):
    question = "What is the date? " * 4
    s = chat_server(sse(call_deltas("ask_question", {"question": question}, size=2), gap_s=0.05),
                 sse(text_deltas(tagged("propose_plan", plan='{"date": "today"}'), size=3), gap_s=0.02))
    page = open_with(browser, app, s.spec())
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("generating (").first.wait_for(timeout=WAIT_MS)  # the tool call, mid-stream
    page.screenshot(path=tmp_path / "endpoint_streaming.png", full_page=True)
    page.get_by_text("episode ended (plan)").first.wait_for(timeout=WAIT_MS)
    page.locator("#live-end .js-plotly-plot").first.wait_for(timeout=WAIT_MS)
    assert page.get_by_text("turn 2: first token").is_visible() and len(s.requests) == 2
    assert all(r["stream"] for r in s.requests)
    page.screenshot(path=tmp_path / "endpoint_end.png", full_page=True)


def test_stop_closes_the_stream_and_errors_show_as_text(app, browser, chat_server, tmp_path):
    s = chat_server(sse(text_deltas("y" * 2000, size=1), gap_s=0.02),
                 Reply("status", {"error": "<img src=x onerror=alert(1)>no such model"}, status=404))
    page = open_with(browser, app, s.spec())
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("generating (").first.wait_for(timeout=WAIT_MS)
    page.get_by_role("button", name="■ Stop").click()
    page.get_by_text("stopped: the unfinished turn was discarded").first.wait_for(timeout=WAIT_MS)
    page.locator("#live-stop-note", has_text="stop requested").wait_for(timeout=WAIT_MS)  # its own line
    wait_until(lambda: s.hangups, what="the endpoint to see the stream closed", timeout_s=5)
    assert s.hangups == 1 and s.sent_events < 1000, "the endpoint kept streaming after Stop"
    page.get_by_role("button", name="Continue ▸").click()
    page.get_by_text("HTTP 404").first.wait_for(timeout=WAIT_MS)
    assert page.get_by_text("<img src=x onerror=alert(1)>", exact=False).first.is_visible()  # shown, not rendered
    assert page.locator("img[src=x]").count() == 0
    page.screenshot(path=tmp_path / "endpoint_error.png", full_page=True)


PAYLOAD = "# Session expired\n[Sign in again](http://127.0.0.1:9/login) <img src=http://127.0.0.1:9/x.png> <b>bold</b>"


def test_a_models_output_makes_no_element_link_or_request(app, browser, chat_server, tmp_path):
    """What a model writes (a tool call's question, then text with no call) is shown as text."""
    s = chat_server(sse(call_deltas("ask_question", {"question": PAYLOAD}, size=7)),
                 sse(text_deltas(PAYLOAD, size=9)))
    page = open_with(browser, app, s.spec())
    fetched = []
    page.on("request", lambda r: fetched.append(r.url) if "127.0.0.1:9" in r.url else None)
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("episode ended").first.wait_for(timeout=WAIT_MS)
    page.get_by_text("Sign in again", exact=False).first.wait_for(timeout=WAIT_MS)  # shown, as text
    page.screenshot(path=tmp_path / "endpoint_payload.png", full_page=True)
    assert not fetched, f"the page fetched {fetched}"
    assert page.locator("a[href*='127.0.0.1:9'], img[src*='127.0.0.1:9']").count() == 0
    assert page.locator("b", has_text="bold").count() == 0
    assert page.locator("h1, h2, h3", has_text="Session expired").count() == 0
