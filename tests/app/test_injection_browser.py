"""Text from a URL, an upload, a model or a visitor renders as text in a real browser (Chromium).

Every payload names a host nobody serves (127.0.0.1:9): the page must make no request to it and
hold no element (image, link, heading) made from it, while the payload's words stay readable.
Screenshots go to the test's tmp_path.
"""

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest

import app as app_module
from tests.app.harness import WAIT_MS, launched

pytestmark = pytest.mark.browser
FIXTURE = Path(__file__).parents[1] / "fixtures" / "replay_runs"
HOST = "127.0.0.1:9"
IMG = f"<img src=http://{HOST}/img.png>"
LINK = f"[Sign in again](http://{HOST}/login)"
HEADING = "# Your session expired"
PAYLOAD = f"{HEADING}\n{IMG} <b>bold</b> {LINK} http://{HOST}/auto"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    root = tmp_path_factory.mktemp("injection")
    with launched(app_module.build(FIXTURE, models_dir=root / "models")) as url:
        yield url.rstrip("/")


def _watched_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    return page, requests


def _assert_inert(page, requests, shot):
    page.wait_for_timeout(1500)  # let any image or prefetch fire
    page.screenshot(path=str(shot), full_page=True)
    assert not [u for u in requests if HOST in u], "the page fetched the payload's host"
    assert page.locator(f"img[src*='{HOST}']").count() == 0
    assert page.locator(f"a[href*='{HOST}']").count() == 0
    assert page.locator("b", has_text="bold").count() == 0
    for tag in ("h1", "h2", "h3"):
        assert page.locator(tag, has_text="Your session expired").count() == 0


@pytest.mark.parametrize("query", [
    {"run": PAYLOAD},                                           # the run name
    {"run": "fixture-set/oracle", "episode": PAYLOAD},         # the episode id
])
def test_deep_link_payload_is_text(browser, app_url, tmp_path, query):
    page, requests = _watched_page(browser)
    page.goto(f"{app_url}/?{urlencode(query)}")
    page.get_by_text("Episodes (click a row", exact=False).wait_for(timeout=WAIT_MS)
    page.get_by_text("Sign in again](http://", exact=False).first.wait_for(timeout=WAIT_MS)  # shown literally
    _assert_inert(page, requests, tmp_path / "deep_link.png")


def _payload_log(tmp_path) -> Path:
    """The oracle fixture's first episode with the payload as request, question, answer and model text."""
    record = json.loads((FIXTURE / "fixture-set" / "oracle" / "episodes.jsonl").read_text().splitlines()[0])
    record["scenario"]["request"] = PAYLOAD
    if record.get("plan"):
        record["plan"][next(iter(record["plan"]))] = PAYLOAD  # shown in the profile-vs-plan table
    for turn in record["turns"]:
        if turn["call"] and turn["call"]["name"] == "ask_question":
            turn["call"]["arguments"]["question"] = PAYLOAD
            turn["result"]["answer"] = PAYLOAD
            turn["raw"] = PAYLOAD + "\n```\n" + turn["raw"]
    out = tmp_path / "payload.jsonl"
    out.write_text(json.dumps(record) + "\n")
    return out


def _open_upload(page, app_url: str, log: Path) -> None:
    """Open the Replays tab, upload ``log`` and pick its first episode (each step within WAIT_MS:
    under load the picker stays behind its loading overlay for a while)."""
    page.goto(app_url)
    page.get_by_text("Episodes (click a row", exact=False).wait_for(timeout=WAIT_MS)
    page.locator("input[type=file]").first.set_input_files(str(log))
    page.get_by_text(f"Opened upload:{log.name}", exact=False).wait_for(timeout=WAIT_MS)
    page.get_by_label("Episode", exact=True).click(timeout=WAIT_MS)
    page.get_by_role("option", name=f"upload:{log.name}", exact=False).first.click(timeout=WAIT_MS)


def test_uploaded_log_payload_is_text(browser, app_url, tmp_path):
    page, requests = _watched_page(browser)
    _open_upload(page, app_url, _payload_log(tmp_path))
    page.get_by_text("Sign in again](http://", exact=False).first.wait_for(timeout=WAIT_MS)
    _assert_inert(page, requests, tmp_path / "uploaded_log.png")


def test_visitor_text_in_live_play_is_text(browser, app_url, tmp_path):
    page, requests = _watched_page(browser)
    page.goto(app_url)
    page.get_by_role("tab", name="Live play").click()
    page.get_by_label("You are the agent").check()
    page.get_by_role("button", name="▶ Start episode").click()
    page.get_by_text("Questions left:").wait_for(timeout=WAIT_MS)
    page.get_by_label("Ask the user").fill(PAYLOAD.replace("\n", " "))
    page.get_by_role("button", name="Ask", exact=True).click()
    page.get_by_text("Sign in again](http://", exact=False).first.wait_for(timeout=WAIT_MS)
    page.get_by_label("Watch", exact=True).check()  # the folder box is for a model that plays: shown again
    path = page.get_by_label("…or a local model folder (Hugging Face layout)")
    path.fill(IMG + " " + LINK)
    path.press("Enter")
    page.get_by_text("local model folder", exact=False).first.wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(1000)
    _assert_inert(page, requests, tmp_path / "live_visitor.png")


FIGURE_PAYLOAD = (f'<a href="http://{HOST}/c">Click me</a> <span style="color:rgb(255,0,0)">STYLED</span> '
                  '<b>bold</b> %{x}')
"""A name plotly would turn into a link, styled text or a template value if it were not escaped."""


def _figure_payload_log(tmp_path) -> Path:
    """The oracle fixture's first episode whose family and a zero rubric component carry the payload:
    the breakdown's tick labels and "why 0" lines, the overview's ticks, legends and hover text."""
    record = json.loads((FIXTURE / "fixture-set" / "oracle" / "episodes.jsonl").read_text().splitlines()[0])
    record["scenario"]["family"] = FIGURE_PAYLOAD
    breakdown = record["breakdown"]
    breakdown["components"][FIGURE_PAYLOAD] = 0.0
    breakdown["weights"] = {**breakdown["weights"], FIGURE_PAYLOAD: 0.0}
    out = tmp_path / "figures.jsonl"
    out.write_text(json.dumps(record) + "\n")
    return out


def _assert_figures_inert(page, requests, shot):
    _assert_inert(page, requests, shot)
    assert page.locator(f"svg a, [*|href*='{HOST}']").count() == 0  # plotly draws links as svg <a>
    assert page.locator("svg [style*='255, 0, 0'], svg [style*='255,0,0']").count() == 0  # no styled text
    assert page.locator("svg text", has_text="<span style=").count() > 0  # the tags show as text


def test_names_in_every_figure_are_text(browser, app_url, tmp_path):
    page, requests = _watched_page(browser)
    _open_upload(page, app_url, _figure_payload_log(tmp_path))
    why = page.locator("svg text", has_text="= 0")  # the "why 0" lines
    why.first.wait_for(timeout=WAIT_MS)
    _hover_first_bar(page.locator(".js-plotly-plot", has=why))  # hover text of the breakdown bars
    _assert_figures_inert(page, requests, tmp_path / "breakdown.png")
    page.get_by_role("tab", name="Overview").click()
    legend = page.locator(".legendtext", has_text="<span style=")  # a legend entry
    legend.first.wait_for(timeout=WAIT_MS)
    _hover_first_bar(page.locator(".js-plotly-plot", has=legend))
    _assert_figures_inert(page, requests, tmp_path / "overview.png")


def _hover_first_bar(plot):
    plot.locator(".bars path").first.hover(timeout=WAIT_MS, force=True)  # plotly's drag layer takes the mouse
    plot.locator(".hoverlayer text").first.wait_for(timeout=WAIT_MS)  # the hover label is drawn
