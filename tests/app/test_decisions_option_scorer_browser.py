"""Real browser (Playwright + Debian Chromium): pick the shipped option scorer, ask, see both numbers.

The picker names its design; the answers table shows the confidence head's number labelled as such
beside max p; the latency line names its one-pass path.
"""

import pytest
import torch

from tests.app.harness import WAIT_MS, fill_question, launched, open_decisions, warm_decisions

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_url():
    torch.set_num_threads(1)
    import app

    warm_decisions("", "option-scorer")  # the shipped scorer the test picks
    with launched(app.build()) as url:
        yield url.rstrip("/")


def test_pick_the_option_scorer_ask_and_see_head_confidence_beside_max_p(browser, app_url, tmp_path):
    page = open_decisions(browser, app_url)
    page.get_by_label("Decision model").first.click()
    page.get_by_role("option", name="option-scorer · option scorer (confidence head)", exact=True).click()
    page.get_by_text("✓ option scorer (confidence head) · shipped", exact=False).first.wait_for(timeout=WAIT_MS)
    fill_question(page, "Ticket 4471\nCustomer tier: BUSINESS\nMessage: I was charged twice.",
                  "Which department should handle this ticket?", "BIL: billing\nSEC: security")
    page.locator("#dq-ask").click()
    page.get_by_text("one pass path", exact=False).first.wait_for(timeout=2 * WAIT_MS)
    plot = page.locator("#dq-answers .js-plotly-plot")
    plot.wait_for(timeout=WAIT_MS)
    assert plot.inner_text().count("★") == 1
    page.wait_for_function("() => [...document.querySelectorAll('#dq-table td')].some("
                           "td => td.textContent.includes('confidence head'))", timeout=WAIT_MS)
    headers, row = page.evaluate("""() => {
        const t = document.querySelector('#dq-table table');
        const heads = [...t.querySelectorAll('thead th')].map(th => th.textContent.split('⋮')[0].trim());
        const tr = [...t.querySelectorAll('tbody tr')].find(r => r.textContent.includes('confidence head'));
        return [heads, [...tr.querySelectorAll('td')].map(td => td.textContent.trim())];
    }""")
    by_column = dict(zip(headers[-len(row):], row))
    assert by_column["model"] == "option-scorer" and by_column["confidence from"] == "confidence head"
    head, max_p = float(by_column["System One confidence"]), float(by_column["max p"])
    assert 0 <= head <= 1 and 0.5 <= max_p <= 1 and head != max_p  # both numbers, side by side
    page.screenshot(path=str(tmp_path / "decisions_option_scorer.png"), full_page=True)
