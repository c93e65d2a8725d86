"""The report in a real browser: headless Chromium (Debian's `chromium`, driven by Playwright's
Python package, no browser download) opens the file with every non-file:// request blocked, counts
the drawn elements and takes a screenshot. Skipped where Chromium or Playwright is missing, unless
CI=true (then their absence fails)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from harness.compare import load_systems
from harness.compare.report import write_report
from harness.testing.synthetic import DEMO_SYSTEMS as SYSTEMS
from harness.testing.synthetic import INFOSEARCH_DIMS as DIMS
from harness.testing.synthetic import ifir_like, infosearch_like

CHROMIUM = os.environ.get("HARNESS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def _require_browser() -> None:
    missing = []
    if importlib.util.find_spec("playwright") is None:
        missing.append("the playwright package (pip install playwright)")
    if not Path(CHROMIUM).exists():
        missing.append("chromium (apt-get install -y chromium)")
    if missing:
        msg = "browser test needs " + " and ".join(missing)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)


def test_report_in_chromium(tmp_path):
    _require_browser()
    from playwright.sync_api import sync_playwright

    report = write_report(load_systems(infosearch_like(tmp_path / "is")), tmp_path / "report.html",
                          permutations=500)
    levels = write_report(load_systems(ifir_like(tmp_path / "ifir")), tmp_path / "levels.html",
                          permutations=200)
    assert report.stat().st_size < 1_000_000
    blocked: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})

            def route(r):
                if r.request.url.startswith("file://"):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.goto(report.as_uri())
            page.wait_for_load_state("load")
            radars = page.locator("figure.radar")
            assert radars.count() == 3
            for i in range(radars.count()):
                series = radars.nth(i).locator("polygon.radar-series")
                assert series.count() == len(SYSTEMS)
                for j in range(series.count()):  # drawn, with a real size
                    box = series.nth(j).bounding_box()
                    assert box and box["width"] > 1 and box["height"] > 1
            task_bars = page.locator('figure.bar-chart[data-kind="task"][data-metric="WISE"] rect.bar')
            assert task_bars.count() == len(SYSTEMS) * len(DIMS)
            data = page.evaluate("JSON.parse(document.getElementById('harness-data').textContent)")
            assert [s["name"] for s in data["systems"]] == SYSTEMS
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            assert (tmp_path / "report.png").stat().st_size > 10_000

            page.goto(levels.as_uri())
            level_bars = page.locator('figure.bar-chart[data-kind="level"] rect.bar')
            assert level_bars.count() == 3 * 2  # one bar per level and system
            assert page.locator('figure.bar-chart[data-kind="level"] text', has_text="L2").count() == 1
            page.screenshot(path=str(tmp_path / "levels.png"), full_page=True)
        finally:
            browser.close()
    assert blocked == []  # zero network requests
