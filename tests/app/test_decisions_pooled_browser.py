"""Real browser on the Decisions tab's real-body models: the default, the pooled readout over SmolLM2 (a ticket is
answered as one, and a request of another kind comes with the embedding familiarity's warning), and the letter arm
picked instead (it answers a ticket, every option with its probability, like its tickets, and warns on a stranger)."""

import pytest

from tests.app.harness import WAIT_MS, broken_words, decisions_served, fill_question, open_decisions, overlapping

pytestmark = pytest.mark.browser
MODEL = "decision-smollm2-pooled-rlcd"
LETTER_ARM = "decision-smollm2-rlcd"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with decisions_served(tmp_path_factory.mktemp("no-local-models"), MODEL, LETTER_ARM) as url:
        yield url


def test_the_default_reads_a_ticket_and_warns_on_a_stranger(browser, app_url, tmp_path):
    page = open_decisions(browser, app_url)
    fill_question(page, "Hi, my card was charged twice for the same invoice and I need a refund.",
                  "Which department should handle this ticket?", "SECURITY\nBILLING\nINFRASTRUCTURE\nPRODUCT_SUPPORT")
    page.locator("#dq-ask").click()
    page.get_by_text("the kind of input it was trained and calibrated on", exact=False).wait_for(timeout=WAIT_MS)
    assert page.get_by_text("like it (familiarity", exact=False).count() >= 1  # the table cell (scrolled)
    assert page.get_by_text("⚠ unlike it", exact=False).count() == 0
    assert "BILLING" in page.locator("#dq-answers .js-plotly-plot").inner_text()
    assert broken_words(page, "#dq-table th, #dq-table .body-cell") == []  # the long model name drawn whole
    assert overlapping(page, "#dq-answers .legend", "#dq-answers .annotation, #dq-answers label") == []  # clear of titles
    page.screenshot(path=str(tmp_path / "decisions_pooled_ticket.png"), full_page=True)
    page.locator("#dq-state textarea").fill("Plan a three-day trip to Lisbon for my parents in May.")
    page.locator("#dq-ask").click()
    page.get_by_text(f"Out of distribution for {MODEL}", exact=False).wait_for(timeout=WAIT_MS)
    assert page.get_by_text("⚠ unlike it (familiarity", exact=False).count() >= 1
    page.screenshot(path=str(tmp_path / "decisions_pooled_stranger.png"), full_page=True)


def test_the_probe_compares_two_real_body_arms_in_a_table_that_fits(browser, app_url, tmp_path):
    page = open_decisions(browser, app_url)
    page.get_by_role("tab", name="Probe").click()
    page.get_by_label("Compare with (optional)").last.click()
    page.get_by_role("option", name="decision-smollm2-pooled-rlvr").click()
    tickets = page.get_by_label("number input for Tickets per kind", exact=False)
    tickets.fill("20")  # the slider's least: seconds, not a minute
    tickets.press("Enter")
    assert tickets.input_value() == "20"
    page.locator("#dq-probe").click()
    page.locator("#dq-probe-plot .js-plotly-plot").wait_for(timeout=4 * WAIT_MS)
    page.locator("#dq-probe-table .body-cell").first.wait_for(timeout=WAIT_MS)
    shown = page.locator("#dq-probe-table").inner_text()
    assert "two-cue department" in shown and "decision-smollm2-pooled-rlvr" in shown and "published RLCD" in shown
    # eight columns with two long model names: every header and cell drawn whole, none cut at the edge
    assert broken_words(page, "#dq-probe-table th, #dq-probe-table .body-cell") == []
    page.screenshot(path=str(tmp_path / "decisions_pooled_probe.png"), full_page=True)


def test_the_letter_arm_reads_a_ticket_and_warns_on_a_stranger(browser, app_url, tmp_path):
    page = open_decisions(browser, app_url)
    box = page.locator("#dq-model input")
    box.click()
    box.fill(LETTER_ARM)
    page.get_by_role("option", name=LETTER_ARM, exact=False).first.click()
    fill_question(page, "Hi, my card was charged twice for the same invoice and I need a refund.",
                  "Which department should handle this ticket?", "SECURITY\nBILLING\nINFRASTRUCTURE\nPRODUCT_SUPPORT")
    page.locator("#dq-ask").click()
    line = page.get_by_text("the kind of input it was trained and calibrated on", exact=False).first
    line.wait_for(timeout=WAIT_MS)
    assert LETTER_ARM in line.inner_text() and "of its training states lie farther" in line.inner_text()
    plot = page.locator("#dq-answers .js-plotly-plot")
    for option in ("SECURITY", "BILLING", "INFRASTRUCTURE", "PRODUCT_SUPPORT"):
        assert option in plot.inner_text()
    assert page.get_by_text("Out of distribution", exact=False).count() == 0
    assert page.get_by_text("no familiarity signal", exact=False).count() == 0
    page.screenshot(path=str(tmp_path / "decisions_letter_ticket.png"), full_page=True)
    page.locator("#dq-state textarea").fill("Plan a three-day trip to Lisbon for my parents in May.")
    page.locator("#dq-ask").click()
    page.get_by_text(f"Out of distribution for {LETTER_ARM}", exact=False).wait_for(timeout=WAIT_MS)
    assert page.get_by_text("⚠ unlike it (familiarity", exact=False).count() >= 1
    assert broken_words(page, "#dq-table th, #dq-table .body-cell") == []  # "PRODUCT_SUPPORT" drawn whole
    page.screenshot(path=str(tmp_path / "decisions_letter_stranger.png"), full_page=True)


def test_on_a_phone_each_picker_takes_a_line_and_shows_the_name_whole(browser, app_url):
    """At a phone's width the two pickers stack (each keeps PICKER_MIN_WIDTH), so the default's long name is not cut
    beside the other picker; on a desktop they stay side by side."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(app_url)
    page.get_by_role("tab", name="Decisions").click()
    picker = page.locator("#dq-model input")
    picker.wait_for(timeout=WAIT_MS)
    page.wait_for_function(f"() => document.querySelector('#dq-model input').value === '{MODEL}'", timeout=WAIT_MS)
    assert picker.evaluate("e => e.scrollWidth <= e.clientWidth")  # the whole name shows
    other = page.get_by_label("Compare with (optional)").first
    assert other.bounding_box()["y"] > picker.bounding_box()["y"] + picker.bounding_box()["height"]  # below it
    page.set_viewport_size({"width": 1500, "height": 1000})
    box = picker.bounding_box()
    assert other.bounding_box()["x"] > box["x"] + box["width"]  # side by side: the other to its right
