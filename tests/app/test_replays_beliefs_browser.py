"""Real browser (Playwright + Debian Chromium): a decision-driven agent's run shows its belief bars.

The run is made here, not read from a golden file: ``decision:`` on the shipped RLCD arm plays the
first two ``clarifylab-cued-v3`` scenarios through ``core.runs.eval``'s library functions into a
replay root that the app loads as it loads any run. The arm is copied under a folder name made of
markup, so the model name the note quotes is data that must render as text. The page must draw, per
required field, the generator's true posterior beside the model's logged belief, with the numbers
the log holds. A screenshot goes to the test's tmp_path.
"""

import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.app.harness import WAIT_MS, launched

pytestmark = pytest.mark.browser
ARM = Path(__file__).parents[2] / "checkpoints" / "decision-rlcd"
MARKUP = "rlcd <i>tilted *starred*"
"""The copied arm's folder name: an ``<i>`` element and markdown emphasis if it were not escaped."""
RUN = "clarifylab-cued-v3/decision-rlcd"
SERIES = ("true posterior", "model, from the request", "model, after the answer")


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """(app URL, the two episodes): the run written by the library functions the CLI calls."""
    import app
    from core.clarify.scenarios import load_scenarios
    from core.runs.eval import run_eval
    from core.runs.summary import summarize, write_run

    base = tmp_path_factory.mktemp("cued")
    arm = base / "models" / MARKUP
    shutil.copytree(ARM, arm)
    policy = f"decision:{arm}"
    episodes = run_eval(policy, load_scenarios("clarifylab-cued-v3", 2), rubric="v3")
    write_run(base / "replays" / RUN, episodes,
              summarize(episodes, policy=policy, scenarios="clarifylab-cued-v3", samples=1, seed=0, limit=2))
    with launched(app.build(base / "replays")) as url:
        yield url.rstrip("/"), episodes


def _bars(page) -> list[dict]:
    """The plotted traces of the belief figure as the browser holds them (names, axes, heights)."""
    return page.locator("#belief-bars .js-plotly-plot").evaluate(
        "gd => gd._fullData.map(t => ({name: t.name, xaxis: t.xaxis, x: Array.from(t.x), y: Array.from(t.y)}))")


def test_belief_bars_show_the_true_posterior_beside_the_model(browser, played, tmp_path):
    from core.clarify.cued import posterior
    from core.clarify.families import FIELDS

    url, episodes = played
    episode = episodes[1]  # seed 70000, medium
    assert episode.beliefs is not None and episode.beliefs.model.endswith(MARKUP)
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(f"{url}/?{urlencode({'run': RUN, 'episode': episode.id})}")
    page.get_by_text(f"{episode.id} · score").wait_for(timeout=WAIT_MS)
    note = page.locator("#belief-note")
    note.get_by_text(MARKUP, exact=False).wait_for(timeout=WAIT_MS)  # the folder name, shown literally
    assert note.locator("i").count() == 0 and note.locator("em").count() == 0
    page.locator("#belief-bars .js-plotly-plot").wait_for(timeout=WAIT_MS)
    traces = _bars(page)
    start, last = episode.beliefs.steps[0], episode.beliefs.steps[-1]
    asked = {step.asked for step in episode.beliefs.steps if step.asked}
    for col, field in enumerate(episode.scenario.required_keys, 1):
        axis = "x" if col == 1 else f"x{col}"
        panel = {t["name"]: t for t in traces if t["xaxis"] == axis}
        assert set(panel) == set(SERIES if field in asked else SERIES[:2]), field
        assert len(panel["true posterior"]["x"]) == len(FIELDS[field].values)
        assert panel["true posterior"]["y"] == pytest.approx(posterior(episode.scenario, field))
        assert panel["model, from the request"]["y"] == pytest.approx(start.fields[field])
        if field in asked:
            assert panel["model, after the answer"]["y"] == pytest.approx(last.fields[field])
    for name in SERIES[:2]:  # the legend names both series the bars compare
        page.locator("#belief-bars .legendtext", has_text=name).first.wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(tmp_path / "replays_beliefs.png"), full_page=True)
