"""Real browser (Playwright + Debian Chromium) on the Decisions tab.

Fills a state, adds a second question, asks, sees the bar chart and the answers table; then opens
the calibration view. Screenshots land in the test's tmp_path.
"""

import warnings

import pytest
import torch

from tests.app.harness import WAIT_MS, broken_words, fill_question, launched, open_decisions, overlapping, warm_decisions
from tests.fixtures.tiny_decision import export_models

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    torch.set_num_threads(1)
    import app

    root = export_models(tmp_path_factory.mktemp("models"))
    warm_decisions(root)  # the model the picker starts on, which both tests ask
    with launched(app.build(decision_models=str(root))) as url:
        yield url.rstrip("/")


def test_fill_add_ask_and_see_the_chart(browser, app_url, tmp_path):
    page = open_decisions(browser, app_url)
    fill_question(page, "Ticket 88: the card payment was declined twice and the customer is angry.",
                  "Which team should handle this?", "BIL: billing\nSEC: security\nINF: infrastructure")
    page.locator("#dq-add").click()
    page.get_by_label("q2 question").fill("Should someone be paged now?")
    page.get_by_label("q2 type").click()
    page.get_by_role("option", name="Score (ordered)").click()
    kind = page.get_by_label("q2 type")  # the longest kind's name fits its box (it was once cut to "Score (orderec")
    assert kind.input_value() == "Score (ordered)" and kind.evaluate("e => e.scrollWidth <= e.clientWidth")
    kind.click()
    page.get_by_role("option", name="Yes/no").click()
    page.locator("#dq-ask").click()
    page.get_by_text("Latency:", exact=False).wait_for(timeout=WAIT_MS)
    plot = page.locator("#dq-answers .js-plotly-plot")
    plot.wait_for(timeout=WAIT_MS)
    svg = plot.inner_text()
    assert "Which team should handle this?" in svg and "Should someone be paged now?" in svg
    assert svg.count("★") == 2  # one chosen option per question
    page.locator("#dq-table .body-cell").first.wait_for(timeout=WAIT_MS)
    # every header, model name and number is drawn whole: breaks only at spaces and hyphens, nothing cut off
    assert broken_words(page, "#dq-table th, #dq-table .body-cell") == []
    # the legend (model names) sits clear of the questions' titles and of the plot's label
    assert page.locator("#dq-answers .legend .traces").count() >= 1
    assert overlapping(page, "#dq-answers .legend", "#dq-answers .annotation, #dq-answers label") == []
    page.screenshot(path=str(tmp_path / "decisions_ask.png"), full_page=True)
    # bad input: an option list with one entry gets a message next to its row, the tab keeps working
    page.get_by_label("q1 options").fill("only one")
    page.locator("#dq-ask").click()
    page.get_by_text("1 option(s); a choice needs at least 2", exact=False).wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(tmp_path / "decisions_bad_input.png"), full_page=True)
    page.get_by_label("q1 options").fill("billing\nsecurity")
    page.locator("#dq-ask").click()
    page.get_by_text("1 option(s)", exact=False).wait_for(state="hidden", timeout=WAIT_MS)


UPLOAD = "".join(
    f'{{"state": "Ticket {i}: {s}", "question": "Which team?", "options": ["billing", "security", "None of the above"], '
    f'"label": "{lab}", "context_id": "t{i}"}}\n'
    for i, (s, lab) in enumerate([("charged twice", "billing"), ("new device login", "security"),
                                  ("refund missing", "billing"), ("phishing mail", "security"),
                                  ("printer jam", "None of the above"), ("invoice wrong", "billing")] * 5))


def _calibration_upload(browser, app_url, path):
    """A page on the Calibration view with ``path`` uploaded (its name shown). Twice on CI under the full suite's
    load the file never showed (30 s) where it shows every time alone or under a CPU burner: a stalled upload
    leaves the box without its input, so the second try is a fresh page; a second stall fails, saying what the box
    shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for last in (False, True):
        page = open_decisions(browser, app_url)
        page.get_by_role("tab", name="Calibration").click()
        page.get_by_label("uploaded file").check()
        try:
            page.locator("#dq-upload input[type=file]").set_input_files(str(path), timeout=WAIT_MS)
            page.get_by_text(path.name).first.wait_for(timeout=WAIT_MS)
            return page
        except PlaywrightTimeout:
            box = page.locator("#dq-upload").inner_text()
            if last:
                raise AssertionError(f"the upload never showed; the box reads {box!r}")
            warnings.warn(f"the calibration upload stalled once (the box read {box!r}); trying a fresh page")
            page.close()


def test_calibration_view_on_an_upload(browser, app_url, tmp_path):
    path = tmp_path / "labelled.jsonl"
    path.write_text(UPLOAD)
    page = _calibration_upload(browser, app_url, path)
    page.get_by_label("Add temperature scaling", exact=False).check()
    page.locator("#dq-evaluate").click()
    page.get_by_text("30 rows from uploaded file", exact=False).wait_for(timeout=2 * WAIT_MS)
    page.locator("#dq-reliability .js-plotly-plot").wait_for(timeout=WAIT_MS)
    page.locator("#dq-selective .js-plotly-plot").wait_for(timeout=WAIT_MS)
    assert "Reliability" in page.locator("#dq-reliability").inner_text()
    page.get_by_text("a post-hoc reference", exact=False).wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(tmp_path / "decisions_calibration.png"), full_page=True)


def test_calibration_on_natural_tickets_resamples_whole_families(browser, app_url, tmp_path):
    page = open_decisions(browser, app_url)
    page.get_by_role("tab", name="Calibration").click()
    tickets = page.get_by_label("number input for Contexts", exact=False)
    tickets.fill("10")  # the slider's least
    tickets.press("Enter")
    page.locator("#dq-resample").get_by_label("families").check()
    page.locator("#dq-evaluate").click()
    page.get_by_text("95% intervals resample whole families: the 8 issue and 4 urgency families",
                     exact=False).wait_for(timeout=2 * WAIT_MS)
    page.locator("#dq-metrics .body-cell", has_text="rows (families resampled)").wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(tmp_path / "decisions_calibration_families.png"), full_page=True)
    page.locator("#dq-draw input").fill("1")  # another draw of the same held-out families
    page.locator("#dq-evaluate").click()
    page.get_by_text("rows from natural tickets (held-out families), draw 1", exact=False).wait_for(timeout=2 * WAIT_MS)
    page.screenshot(path=str(tmp_path / "decisions_calibration_draw.png"), full_page=True)
    page.locator("#dq-orders").get_by_label("every cyclic order", exact=False).check()  # the letter arm, every order
    page.locator("#dq-evaluate").click()
    page.get_by_text("draw 1 · every choice read in each cyclic order of its options", exact=False).wait_for(
        timeout=2 * WAIT_MS)
    page.screenshot(path=str(tmp_path / "decisions_calibration_orders.png"), full_page=True)


def test_answers_say_whether_the_state_is_like_the_training_data(browser, app_url, tmp_path):
    """The shipped RLCD arm on the natural-language ticket the view opens on (a first Ask answers, nothing typed):
    the answer comes with its warning; on the training-like example it does not (both states, one model)."""
    page = open_decisions(browser, app_url)
    page.get_by_text("What the models know.", exact=False).first.wait_for(timeout=WAIT_MS)
    assert "credit us the difference" in page.locator("#dq-state textarea").input_value()
    assert page.get_by_label("q3 question").input_value() == "Should an on-call engineer be paged immediately?"
    page.get_by_label("Decision model").first.click()
    page.get_by_role("option", name="decision-rlcd", exact=True).click()
    page.locator("#dq-ask").click()
    page.get_by_text("Out of distribution for decision-rlcd", exact=False).first.wait_for(timeout=WAIT_MS)
    assert page.get_by_text("⚠ unlike it", exact=False).count() >= 1
    page.screenshot(path=str(tmp_path / "decisions_ood.png"), full_page=True)
    page.get_by_label("Example state").click()
    page.get_by_role("option", name="Support ticket").click()
    page.wait_for_function("() => document.querySelector('#dq-state textarea').value.includes('Customer tier')",
                           timeout=WAIT_MS)
    page.locator("#dq-ask").click()
    page.get_by_text("decision-rlcd: 0% of the words are outside its training vocabulary", exact=False).first.wait_for(
        timeout=WAIT_MS)
    assert page.get_by_text("Out of distribution for decision-rlcd", exact=False).count() == 0
    # the example's own questions come with what its data's rules say of each answer, drawn whole
    table = page.locator("#dq-table")
    assert "known answer" in table.locator("th").all_inner_texts()[-1]
    for cell in ("BILLING", "P2_NORMAL", "false 0.90 · true 0.10"):
        assert table.locator(".body-cell", has_text=cell).count() >= 1, cell
    assert broken_words(page, "#dq-table th, #dq-table .body-cell") == []
    page.screenshot(path=str(tmp_path / "decisions_in_distribution.png"), full_page=True)


STYLE_HOLDERS_JS = """() => [...document.querySelectorAll('style')].filter(s => /dq-row|live-note/.test(s.textContent))
  .map(s => s.closest('.block').getBoundingClientRect().height)"""


def test_each_tabs_own_style_applies_and_takes_no_room(browser, app_url):
    """Gradio 6 takes css only at launch, so each tab carries its rules in a hidden block: they must apply (one
    accent bar per question row, the Live notes without a minimum height) and the blocks take no space."""
    page = open_decisions(browser, app_url)
    bars = page.evaluate("() => [...document.querySelectorAll('.dq-row')].filter(e => e.getClientRects().length)"
                         ".map(e => getComputedStyle(e).borderLeftWidth)")
    assert bars == ["3px", "0px"] * 3  # the group and its inner div both carry the class: one bar a row shown
    page.get_by_role("tab", name="Live play").click()
    page.locator(".live-note").first.wait_for(timeout=WAIT_MS)
    heights = page.evaluate(
        "() => [...document.querySelectorAll('.live-note')].map(n => getComputedStyle(n).minHeight)")
    assert set(heights) == {"0px"}
    assert page.evaluate(STYLE_HOLDERS_JS) == [0, 0]
