"""Shared harness for the end-to-end tests: launch Gradio Blocks in-process, start Debian Chromium.

The client and browser tests all need the same two things; keeping them here means a change to
how the app is served or how Chromium is started is made once.
"""

import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

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
