"""The report in a real browser: headless Chromium (Debian's `chromium`, driven by Playwright's
Python package, no browser download) opens the file with every non-file:// request blocked, counts
the drawn elements and takes a screenshot. Skipped where Chromium or Playwright is missing, unless
CI=true (then their absence fails)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness
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


@contextlib.contextmanager
def _offline_page() -> Iterator[Any]:
    """A Chromium page on which every request that is not file:// is blocked; none may be made."""
    from playwright.sync_api import sync_playwright

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
            yield page
        finally:
            browser.close()
    assert blocked == []  # zero network requests


def test_report_in_chromium(tmp_path):
    _require_browser()

    report = write_report(load_systems(infosearch_like(tmp_path / "is")), tmp_path / "report.html",
                          permutations=500)
    levels = write_report(load_systems(ifir_like(tmp_path / "ifir")), tmp_path / "levels.html",
                          permutations=200)
    assert report.stat().st_size < 1_000_000
    with _offline_page() as page:
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
        assert [s["name"] for s in data["systems"]] == list(SYSTEMS)
        ranks = page.locator("figure.rank-chart")  # per dimension and metric, and by the mean over dimensions
        assert ranks.count() == len(data["ranks"]) > len(DIMS)
        for i in range(ranks.count()):
            points, lines = ranks.nth(i).locator("circle.rank-point"), ranks.nth(i).locator("line.rank-interval")
            assert points.count() == lines.count() == len(SYSTEMS)
            for j in range(points.count()):  # drawn, with a real size; the labels read in rank order
                box = points.nth(j).bounding_box()
                assert box and box["width"] > 3 and box["height"] > 3
            shown = [float(points.nth(j).get_attribute("data-rank")) for j in range(points.count())]
            assert shown == sorted(shown)
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        assert (tmp_path / "report.png").stat().st_size > 10_000

        page.goto(levels.as_uri())
        level_bars = page.locator('figure.bar-chart[data-kind="level"] rect.bar')
        assert level_bars.count() == 3 * 2  # one bar per level and system
        assert page.locator('figure.bar-chart[data-kind="level"] text', has_text="L2").count() == 1
        page.screenshot(path=str(tmp_path / "levels.png"), full_page=True)


def _require_birco() -> Path:
    """The BIRCO test sets under the shared data folder, and the harness-birco plugin."""
    from harness.testing import plugin_missing, shared_data_dir

    root = shared_data_dir(Path(__file__).resolve().parents[1]) / "birco"
    missing = []
    if plugin_missing("harness-birco"):  # installed (importable is not enough: the run finds it by its entry point)
        missing.append("the harness-birco plugin (pip install -e plugins/harness-birco)")
    needed = [f"{t}/{f}" for t in ("arguana", "wtb", "clinical-trial", "relic") for f in ("test_set.pickle",
                                                                                          "e5_rank.pickle")]
    absent = [f for f in needed if not (root / f).is_file()]
    if absent:
        missing.append(f"BIRCO data under {root} ({', '.join(absent[:2])}{', ...' if len(absent) > 2 else ''}; "
                       "set HARNESS_DATA or run `harness data download birco`)")
    if missing:
        msg = "BIRCO report test needs " + " and ".join(missing)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return root


def test_birco_report_draws_error_bars_and_no_uncertainty_as_metric(tmp_path):
    """Two real BIRCO suite runs (random order, seeds 1 and 2): the report's bar charts carry each
    metric's bootstrap SE as an error bar, and no chart shows an SE, a query count or a detail."""
    _require_browser()
    _require_birco()

    for seed in (1, 2):
        harness.evaluate("birco", rerankers=[f"birco-random:seed={seed}"], output=str(tmp_path / f"random{seed}"),
                         progress=False)
    systems = load_systems([str(tmp_path / "random1"), str(tmp_path / "random2")])
    assert systems[0].tasks["birco:arguana"].stored.source_version == 2
    report = write_report(systems, tmp_path / "birco.html", permutations=200)
    non_metric = re.compile(r"(:se|:queries|:bootstrap|:estimate|_queries|_queries_skipped|_positions_dropped)$")
    with _offline_page() as page:
        page.goto(report.as_uri())
        page.wait_for_load_state("load")
        charted = page.eval_on_selector_all("figure[data-metric]", "els => els.map(e => e.dataset.metric)")
        assert sorted(set(charted)) == ["birco-ndcg@10", "birco-recall@5"]
        assert not [m for m in charted if non_metric.search(m)]
        assert page.locator("figure.radar").count() == 2  # four tasks: one radar per metric
        for metric in ("birco-ndcg@10", "birco-recall@5"):
            fig = page.locator(f'figure.bar-chart[data-kind="task"][data-metric="{metric}"]')
            assert fig.count() == 1
            assert fig.locator("rect.bar").count() == 2 * 4  # two systems x four tasks
            errors = fig.locator("path.error-bar")
            assert errors.count() == 2 * 4  # one error bar per bar
            for j in range(errors.count()):  # drawn, with a real height (the SE is not 0)
                box = errors.nth(j).bounding_box()
                assert box and box["height"] > 1
        assert page.locator("path.error-bar").count() == 2 * 2 * 4
        table = page.locator('table.metrics[data-task="birco:arguana"]').inner_text()
        assert " ± " in table and ":se" not in table and "queries" not in table.split("\n", 1)[1]
        data = page.evaluate("JSON.parse(document.getElementById('harness-data').textContent)")
        unc = data["uncertainty"]["random1"]["birco:arguana"]["birco-ndcg@10"]
        assert unc["n"] == 100 and unc["method"] == "bootstrap, 1000 resamples, seed 42" and unc["se"] > 0
        assert all(not non_metric.search(m) for m in data["metrics"]["random1"]["birco:arguana"])
        page.screenshot(path=str(tmp_path / "birco.png"), full_page=True)
        assert (tmp_path / "birco.png").stat().st_size > 10_000
