"""Real browser (Playwright + Debian Chromium): a cued v3 episode of a decision-driven agent shows
its belief bars beside the transcript, read from the log."""

import json
import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.app.harness import WAIT_MS, launched

pytestmark = pytest.mark.browser
FIXTURE = Path(__file__).parents[1] / "fixtures" / "cued_v3_episode.jsonl"
RUN = "cued/decision-rlcd"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    import app

    root = tmp_path_factory.mktemp("replays")
    (root / RUN).mkdir(parents=True)
    shutil.copy(FIXTURE, root / RUN / "episodes.jsonl")
    with launched(app.build(root)) as url:
        yield url.rstrip("/")


def test_belief_bars_sit_beside_the_transcript(browser, app_url, tmp_path):
    episode = json.loads(FIXTURE.read_text())
    eid = f"seed{episode['scenario']['seed']}_{episode['scenario']['family']}_{episode['scenario']['difficulty']}#0"
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(f"{app_url}/?{urlencode({'run': RUN, 'episode': eid})}")
    page.get_by_text(f"{eid} · score").wait_for(timeout=WAIT_MS)
    page.get_by_text("Beliefs of checkpoints/decision-rlcd", exact=False).wait_for(timeout=WAIT_MS)
    page.get_by_text("asked at turn", exact=False).first.wait_for(timeout=WAIT_MS)
    bars = page.locator("#belief-bars .js-plotly-plot")
    bars.wait_for(timeout=WAIT_MS)
    assert bars.get_by_text("true posterior").count() >= 1 and bars.get_by_text("model, after the answer").count() >= 1
    page.screenshot(path=str(tmp_path / "replays_beliefs.png"), full_page=True)
