"""Real browser on the Decisions tab pointed at a served System One URL (`python -m core.decision.serve`).

The tab is given the URL typed into its picker; Ask shows the endpoint's answers (chart and table,
System One confidence beside max p) with their latency; a URL where nothing listens is said
plainly next to the picker and the tab keeps answering.
"""

import socket

import pytest
import torch

from tests.app.harness import WAIT_MS, fill_question, launched, open_decisions, warm_decisions
from tests.fixtures.served_export import served
from tests.fixtures.tiny_decision import export_models

pytestmark = [pytest.mark.browser, pytest.mark.slow]
pytest.importorskip("fastapi")


@pytest.fixture(scope="module")
def urls(tmp_path_factory):
    torch.set_num_threads(1)
    import app

    root = export_models(tmp_path_factory.mktemp("models"), names=("tiny-a",))
    with served(root / "tiny-a") as endpoint, launched(app.build(decision_models=str(root))) as url:
        warm_decisions(root, endpoint)  # the served URL the test types in
        yield url.rstrip("/"), endpoint


def _pick(page, value: str):
    box = page.locator("#dq-model input")
    box.click()
    box.fill(value)
    box.press("Enter")


def _ask(page):
    fill_question(page, "Ticket 88: the card payment was declined twice.",
                  "Which team should handle this?", "BIL: billing\nSEC: security")
    page.locator("#dq-ask").click()


def test_the_tab_asks_a_served_url_and_says_when_one_refuses(browser, urls, tmp_path):
    app_url, endpoint = urls
    page = open_decisions(browser, app_url)
    _pick(page, endpoint)
    page.get_by_text("System One endpoint", exact=False).first.wait_for(timeout=WAIT_MS)
    _ask(page)
    page.get_by_text("endpoint path", exact=False).wait_for(timeout=2 * WAIT_MS)  # the latency line names the path
    plot = page.locator("#dq-answers .js-plotly-plot")
    plot.wait_for(timeout=WAIT_MS)
    assert "Which team should handle this?" in plot.inner_text() and plot.inner_text().count("★") == 1
    table = page.locator("body").inner_text()
    assert "System One confidence" in table and "max p" in table
    page.screenshot(path=str(tmp_path / "decisions_system_one.png"), full_page=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1/systemone"
    _pick(page, dead)
    page.locator("#dq-ask").click()
    page.get_by_text("refused the connection", exact=False).wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(tmp_path / "decisions_refused.png"), full_page=True)
    _pick(page, "tiny-a")
    page.locator("#dq-ask").click()
    page.get_by_text("refused the connection", exact=False).wait_for(state="hidden", timeout=WAIT_MS)
    page.get_by_text("path)", exact=False).first.wait_for(timeout=WAIT_MS)
