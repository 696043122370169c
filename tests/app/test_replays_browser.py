"""Real browser (Playwright + Debian Chromium) against the launched app.

Opens the Replays tab, picks a run and an episode, checks the transcript and the breakdown plot,
then follows a ``?run=&episode=`` link. Screenshots land in the test's tmp_path.
"""

from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.app.harness import WAIT_MS, broken_words, launched

pytestmark = pytest.mark.browser
FIXTURE = Path(__file__).parents[1] / "fixtures" / "replay_runs"


@pytest.fixture(scope="module")
def app_url():
    import app

    with launched(app.build(FIXTURE)) as url:
        yield url.rstrip("/")


def _open(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(url)
    page.get_by_text("Episodes (click a row", exact=False).wait_for(timeout=WAIT_MS)
    return page


def test_pick_run_and_episode(browser, app_url, tmp_path):
    page = _open(browser, app_url)
    # The first run is picked on load; add the second through the runs dropdown.
    page.get_by_label("Runs").click()
    page.get_by_role("option", name="fixture-set/oracle").click()
    page.keyboard.press("Escape")
    page.get_by_text("12 episodes").wait_for(timeout=WAIT_MS)
    # Open an episode by clicking its row in the table.
    page.locator("#replay-table").get_by_text("seed2_event_planning_medium#0").first.click()
    page.get_by_text("seed2_event_planning_medium#0 · score").wait_for(timeout=WAIT_MS)
    page.get_by_text("What event type do you want?").first.wait_for(timeout=WAIT_MS)
    page.get_by_text("Proposes a plan").first.wait_for(timeout=WAIT_MS)
    page.get_by_text("format gate passed").first.wait_for(timeout=WAIT_MS)  # the breakdown plot's title
    assert page.locator(".js-plotly-plot").count() >= 1
    page.screenshot(path=str(tmp_path / "replays_episode.png"), full_page=True)


def test_link_opens_episode(browser, app_url, tmp_path):
    query = urlencode({"run": "fixture-set/oracle", "episode": "seed4_coding_requirements_hard#0"})
    page = _open(browser, f"{app_url}/?{query}")
    page.get_by_text("seed4_coding_requirements_hard#0 · score").wait_for(timeout=WAIT_MS)
    page.get_by_text("What deployment target do you want?").first.wait_for(timeout=WAIT_MS)
    page.get_by_text("format gate passed").first.wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(1000)
    # the transcript opens at its top (the request), not scrolled to the verdict
    tops = page.evaluate("() => [...document.querySelectorAll('.bubble-wrap')].map(e => e.scrollTop)")
    assert tops and tops[0] == 0
    # the permalink carries the episode id's # as %23, so following it opens the same episode
    href = page.get_by_role("link", name="?run=", exact=False).first.get_attribute("href")
    assert "episode=seed4_coding_requirements_hard%230" in href
    page.goto(f"{app_url}/{href}")
    page.get_by_text("seed4_coding_requirements_hard#0 · score").wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(tmp_path / "replays_link.png"), full_page=True)


def test_uploads_bad_then_good(browser, app_url, tmp_path):
    page = _open(browser, app_url)
    bad = tmp_path / "broken.jsonl"
    bad.write_bytes(b"\x00\x01binary\xff")
    page.locator("input[type=file]").first.set_input_files(str(bad))
    page.get_by_text("this is a binary file", exact=False).wait_for(timeout=WAIT_MS)
    trace = Path(__file__).parents[1] / "fixtures" / "published_trace_small.json"
    page.screenshot(path=str(tmp_path / "replays_bad_upload.png"), full_page=True)
    page.locator("input[type=file]").first.set_input_files(str(trace))
    page.get_by_text("Opened upload:published_trace_small.json", exact=False).wait_for(timeout=WAIT_MS)
    page.get_by_text("9 episodes").wait_for(timeout=WAIT_MS)  # the run picked on load (6) plus the 3 uploaded
    page.screenshot(path=str(tmp_path / "replays_upload.png"), full_page=True)


def _pick(page, label, option):
    box = page.get_by_label(label, exact=True)
    box.click()
    page.get_by_role("option", name=option, exact=True).click()
    box.blur()  # close this list before the next one opens: two open lists both offer the same run
    page.get_by_test_id("dropdown-option").first.wait_for(state="detached", timeout=WAIT_MS)


def test_compare_shows_the_runs_picked_after_switching(browser, app_url, tmp_path):
    page = _open(browser, app_url)
    page.get_by_role("tab", name="Compare").click()
    # On first open both runs are filled and compared (never "pick two runs").
    page.get_by_text("shared scenarios (rubric v1)", exact=False).wait_for(timeout=WAIT_MS)
    assert page.get_by_text("pick two runs").count() == 0
    page.get_by_text("a: fixture-set/guess · score", exact=False).first.wait_for(timeout=WAIT_MS)
    # Swap the runs: the largest-gap scenario stays the same, and both transcripts must follow.
    _pick(page, "Run a", "fixture-set/oracle")
    _pick(page, "Run b", "fixture-set/guess")
    page.get_by_text("`fixture-set/oracle` − `fixture-set/guess`", exact=False).or_(
        page.get_by_text("fixture-set/oracle − fixture-set/guess", exact=False)).first.wait_for(timeout=WAIT_MS)
    page.get_by_text("a: fixture-set/oracle · score", exact=False).first.wait_for(timeout=WAIT_MS)
    page.get_by_text("b: fixture-set/guess · score", exact=False).first.wait_for(timeout=WAIT_MS)
    assert page.get_by_text("a: fixture-set/guess · score", exact=False).count() == 0
    page.screenshot(path=str(tmp_path / "replays_compare_switched.png"), full_page=True)


def test_typo_run_name_is_refused_and_the_table_stays(browser, app_url, tmp_path):
    page = _open(browser, app_url)
    page.get_by_text("6 episodes").wait_for(timeout=WAIT_MS)
    runs = page.get_by_label("Runs")
    runs.click()
    runs.type("fixture-set/typo")
    runs.press("Enter")
    page.keyboard.press("Escape")
    page.get_by_text("no run named 'fixture-set/typo'", exact=False).first.wait_for(timeout=WAIT_MS)
    page.get_by_text("6 episodes").wait_for(timeout=WAIT_MS)  # the real run's rows are still there
    table = page.locator("#replay-table")
    assert table.get_by_text("seed1_meeting_scheduling_easy#0").count() >= 1
    page.get_by_role("button", name="⬇ Table as CSV").click()
    page.get_by_text("Nothing exported", exact=False).first.wait_for(timeout=WAIT_MS)
    assert page.get_by_text("Remove it from Runs", exact=False).count() >= 1
    page.screenshot(path=str(tmp_path / "replays_typo.png"), full_page=True)


def test_nested_upload_gets_a_message_and_the_box_recovers(browser, app_url, tmp_path):
    page = _open(browser, app_url)
    page.get_by_text("6 episodes").wait_for(timeout=WAIT_MS)  # the page's own load done, as a visitor would see it
    nested = tmp_path / "nested.json"
    nested.write_bytes(b"[" * 100_000)
    page.locator("input[type=file]").first.set_input_files(str(nested))
    page.get_by_text("nested too deeply", exact=False).wait_for(timeout=2 * WAIT_MS)  # sent, read and refused
    assert page.get_by_text("Error", exact=True).count() == 0  # no bare error toast
    page.screenshot(path=str(tmp_path / "replays_nested_upload.png"), full_page=True)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + (FIXTURE / "fixture-set" / "guess" / "episodes.jsonl").read_bytes())
    page.locator("input[type=file]").first.set_input_files(str(bom))  # the same box takes the next file
    page.get_by_text("Opened upload:bom.jsonl", exact=False).wait_for(timeout=WAIT_MS)


def test_the_shipped_runs_tables_break_lines_between_words(browser, tmp_path):
    """The shipped runs' long ids and policies (``model:checkpoints/clarify-smollm2-warmup``) break at their
    hyphens or not at all, and no header breaks inside its word ("difficult|y" before the whole-words style)."""
    import app

    with launched(app.build()) as url:
        page = _open(browser, url)
        page.locator("#replay-table .body-cell").first.click()
        page.get_by_text("Hidden profile vs. submitted plan", exact=False).first.wait_for(timeout=WAIT_MS)
        page.locator(".js-plotly-plot").first.wait_for(timeout=WAIT_MS)
        assert broken_words(page, "table th, table td, .body-cell") == []
        page.get_by_role("tab", name="Compare").click()
        page.get_by_text("Per-scenario scores").first.wait_for(timeout=WAIT_MS)
        assert broken_words(page, "table th, table td, .body-cell") == []
        page.screenshot(path=str(tmp_path / "replays_shipped_tables.png"), full_page=True)
        phone = browser.new_page(viewport={"width": 412, "height": 900})  # the wide tables scroll, whole, on a phone
        phone.goto(url)
        phone.get_by_text("Episodes (click a row", exact=False).wait_for(timeout=WAIT_MS)
        assert broken_words(phone, ".wide-table th, .wide-table .body-cell") == []
        widths = phone.evaluate("() => [...document.querySelectorAll('.wide-table .table-container')]"
                                ".filter(e => e.getClientRects().length).map(e => [e.clientWidth, e.scrollWidth])")
        assert len(widths) == 2 and all(scroll > 1000 > client for client, scroll in widths)
