"""The Live play tab in a real browser (Playwright + Debian Chromium): a Watch episode streams and
ends with its breakdown, Stop halts a long generation on the server, and a person plays one
"You are the agent" episode. Screenshots go to the test's temporary directory."""

import re
import threading

import pytest

import app as app_module
from core.models.entries import local_entry
from tests.app.harness import WAIT_MS, chromium, launched, warm_live
from tests.fixtures.tiny_chat import build_tiny_chat
from tests.fixtures.waiting import wait_for_threads_to_end

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("live_browser")
    build_tiny_chat(root / "models" / "tiny")
    build_tiny_chat(root / "slow", hidden=384, layers=6)  # ~10x slower per token: Stop lands mid-turn
    warm_live(local_entry(root / "slow"))  # the folder the model tests type in
    demo = app_module.build(root / "replays", models_dir=root / "models")  # the real app, every tab
    with launched(demo) as url:
        yield url, root


@pytest.fixture(scope="module")
def browser():
    """Overrides conftest's: this module skips only when /usr/bin/chromium itself is absent."""
    with chromium(accept_on_path=False) as b:
        yield b


def open_page(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    page.get_by_role("tab", name="Live play").click()
    page.get_by_text("ready to load from").wait_for(timeout=WAIT_MS)
    return page


def set_slider(page, elem_id, value):
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def use_slow_greedy(page, root, max_new_tokens):
    """Type the slow model's folder and pick greedy decoding (it then never ends a turn early)."""
    path = page.get_by_label("…or a local model folder (Hugging Face layout)")
    path.fill(str(root / "slow"))
    path.press("Enter")
    page.get_by_text(f"ready to load from {root / 'slow'}").wait_for(timeout=WAIT_MS)
    page.get_by_text("Generation settings").click()
    set_slider(page, "live-temperature", 0)
    set_slider(page, "live-max-new", max_new_tokens)


def generating():
    return [t for t in threading.enumerate() if t.name == "live-generate"]


def test_watch_episode_streams_and_ends_with_the_breakdown(app, browser, tmp_path):
    url, root = app
    page = open_page(browser, url)
    use_slow_greedy(page, root, 96)
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("generating (").first.wait_for(timeout=WAIT_MS)  # streamed partial text
    page.screenshot(path=tmp_path / "watch_streaming.png", full_page=True)
    page.get_by_text("episode ended (").first.wait_for(timeout=2 * WAIT_MS)
    page.locator("#live-end .js-plotly-plot").first.wait_for(timeout=WAIT_MS)  # the breakdown chart
    end = page.locator("#live-end")
    assert end.get_by_text("Open in Replays").is_visible()
    assert end.get_by_text("Hidden profile vs. submitted plan").is_visible()
    page.screenshot(path=tmp_path / "watch_end.png", full_page=True)
    assert (tmp_path / "watch_end.png").stat().st_size > 10_000


def test_stop_halts_the_generation_on_the_server(app, browser, tmp_path):
    url, root = app
    page = open_page(browser, url)
    use_slow_greedy(page, root, 1024)
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("generating (").first.wait_for(timeout=WAIT_MS)
    page.get_by_role("button", name="■ Stop").click()
    page.get_by_text("stopped: the unfinished turn was discarded").first.wait_for(timeout=WAIT_MS)
    wait_for_threads_to_end("live-generate")  # fails saying the model kept generating after Stop
    assert not generating(), "the model kept generating after Stop"
    page.screenshot(path=tmp_path / "stopped.png", full_page=True)


def test_play_one_episode_as_the_agent(app, browser, tmp_path):
    url, root = app
    page = open_page(browser, url)
    picker = page.get_by_role("combobox", name="Model")
    assert picker.is_visible()
    page.get_by_label("You are the agent").check()
    picker.wait_for(state="hidden", timeout=WAIT_MS)  # no model plays: its picker and settings go
    assert not page.get_by_text("Generation settings").is_visible()
    assert page.get_by_role("button", name="■ Stop").is_visible()  # Stop stays: it acts on the episode running now
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("Questions left:").wait_for(timeout=WAIT_MS)
    page.get_by_label("Ask the user").fill("What kind of event is it?")
    page.get_by_role("button", name="Ask", exact=True).click()
    page.get_by_text("Questions left: 5 / 6").or_(page.get_by_text("Questions left:** 5")).first.wait_for(timeout=WAIT_MS)
    editor = page.locator(".cm-content").last
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.type('{"event_type": "birthday", "date": "today", "guest_count": 10, "venue": "home"}')
    page.get_by_role("button", name="Propose plan").click()
    page.get_by_text("episode ended (plan)").first.wait_for(timeout=WAIT_MS)
    page.locator("#live-end .js-plotly-plot").first.wait_for(timeout=WAIT_MS)
    page.screenshot(path=tmp_path / "agent_end.png", full_page=True)
    runs = list((root / "replays" / "sessions").glob("live-*/episodes.jsonl"))
    assert runs, "the session's episodes were not written as a run under replays/sessions"
    page.get_by_role("button", name="↗ Open in Replays").click()  # this page's Replays tab, at this episode
    page.get_by_text("policy human").first.wait_for(timeout=WAIT_MS)
    page.screenshot(path=tmp_path / "open_in_replays.png", full_page=True)
    other = browser.new_page(viewport={"width": 1400, "height": 1000})  # another visitor
    other.goto(url)
    other.get_by_text("Episodes (click a row", exact=False).wait_for(timeout=WAIT_MS)
    other.get_by_label("Runs", exact=True).click()
    assert other.get_by_role("option", name="sessions/live-", exact=False).count() == 0  # not listed to them


@pytest.mark.parametrize("index", [-5, 300])
def test_unused_heldout_index_does_not_block_a_generated_start(app, browser, tmp_path, index):
    url, _ = app
    page = open_page(browser, url)
    box = page.get_by_label("Held-out index (0-299)")
    box.fill(str(index))
    box.press("Tab")
    page.get_by_label("You are the agent").check()
    page.get_by_role("button", name="▶ Start episode").click()  # source stays "Generated"
    page.get_by_text("Questions left:").wait_for(timeout=WAIT_MS)
    page.get_by_label("Published held-out list").check()  # now the index is used, and refused by name
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("held-out index must be in 0..299", exact=False).first.wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(tmp_path / f"heldout_{index}.png"), full_page=True)


def pick_model(page, key):
    picker = page.get_by_role("combobox", name="Model")
    picker.click()
    picker.fill(key)
    page.get_by_role("option", name=key).first.click()
    page.get_by_text(f"{key}: ready to load from").wait_for(timeout=WAIT_MS)


def test_the_ask_or_act_agent_shows_its_beliefs_as_it_plays(app, browser, tmp_path):
    url, root = app
    page = open_page(browser, url)
    pick_model(page, "decision:decision-rlcd")
    assert page.get_by_text("The ask-or-act agent generates nothing").is_visible()
    page.get_by_label("Cued requests (rubric v3", exact=False).check()
    page.get_by_label("v3", exact=True).wait_for(timeout=WAIT_MS)
    page.wait_for_function("() => [...document.querySelectorAll('input[type=radio]')]"
                           ".some(r => r.value === 'v3' && r.checked)", timeout=WAIT_MS)  # the source picked v3
    page.get_by_label("You are the user").check()
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("the model asks you a question").first.wait_for(timeout=WAIT_MS)
    beliefs = page.locator("#live-beliefs")
    beliefs.locator(".js-plotly-plot").first.wait_for(timeout=WAIT_MS)
    assert beliefs.get_by_text("not asked yet", exact=False).first.is_visible()
    page.screenshot(path=tmp_path / "agent_asks.png", full_page=True)
    left, most = map(int, re.search(r"Questions left:\W*(\d+) / (\d+)", page.inner_text("body")).groups())
    ended, asks = page.get_by_text("episode ended ("), page.get_by_text("waiting for your answer", exact=False)
    while not ended.first.is_visible():  # answer each question with nothing the agent can read
        page.get_by_placeholder("A short phrase, as the user would", exact=False).fill("no idea")
        page.get_by_role("button", name="Send answer").click()
        left -= 1
        page.get_by_text(re.compile(rf"Questions left:\W*{left} / {most}")).wait_for(timeout=WAIT_MS)  # taken
        ended.or_(asks).first.wait_for(timeout=WAIT_MS)  # the agent's next move
    page.locator("#live-end .js-plotly-plot").first.wait_for(timeout=WAIT_MS)
    assert beliefs.get_by_text("Beliefs of", exact=False).is_visible()
    page.screenshot(path=tmp_path / "agent_end.png", full_page=True)
    logs = list((root / "replays" / "sessions").glob("live-*-v3/episodes.jsonl"))
    assert logs and any('"beliefs": {' in log.read_text(encoding="utf-8") or '"beliefs":{' in
                        log.read_text(encoding="utf-8") for log in logs)
