"""The hub in a real headless Chromium: the page renders its results (not just the Python script)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from runners.process import pick_free_port
from tests.conftest import ROOT
from tests.site.test_app import _seed

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and os.environ.get("CI") != "true", reason="Chromium not installed (make test installs it)"
)


def test_hub_renders_results_in_chromium(tmp_path: Path) -> None:
    assert CHROMIUM is not None, "make test installs Debian's chromium; CI must have it"
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    _seed(url, agentic=True)
    port = pick_free_port()
    hub = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "site" / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        env={**os.environ, "INFERSWEEP_DATABASE_URL": url}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        from playwright.sync_api import sync_playwright

        screenshot = tmp_path / "hub.png"
        with sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=CHROMIUM,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                      "--disable-component-update", "--no-first-run", "--disable-sync"],
            )  # fmt: skip
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            page.goto(f"http://127.0.0.1:{port}/")
            # Streamlit draws in the browser over a websocket: wait for what only the app itself writes.
            page.get_by_text("At a target interactivity").wait_for(timeout=60_000)
            page.get_by_text("Points", exact=True).wait_for(timeout=60_000)
            text = page.inner_text("body")
            page.screenshot(path=str(screenshot), full_page=True)
            browser.close()
    finally:
        hub.terminate()
        hub.wait(timeout=20)
    assert "InferSweep results" in text
    assert "Agentic replay: prefix-cache hits, realized vs theoretical" in text
    assert "No agentic results yet" not in text
    assert "tokens/s/user" in text
    assert screenshot.exists() and screenshot.stat().st_size > 20_000
