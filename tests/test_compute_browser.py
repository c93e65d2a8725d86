"""``harness view`` in a real browser (headless Chromium driven by Playwright, as tests/test_view_browser.py):
a query's LLM call shows the model's reasoning beside its reply, escaped, and the compare page of three runs of
one task draws effectiveness against compute: three points per chart, the Pareto frontier circled, the
per-query differences against the cheapest run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("openai", reason="needs openai: pip install 'harness-ir[openai]'")  # before test_compute's names

from harness.compare.compute_chart import pareto  # noqa: E402
from tests.test_compute import answer_by_effort, eval_args  # noqa: E402
from tests.test_view_browser import _go, _page, _require_browser  # noqa: E402
from tests.view_fixtures import SCRIPT, serving  # noqa: E402


def _cli(*args: str) -> None:
    res = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


def test_reasoning_and_compute_in_the_viewer(tmp_path, llm_double):
    _require_browser()
    from harness.testing import ScriptedReply, TestServer

    def hostile(req):  # the reasoning is model output: an injection payload must stay text
        reply = answer_by_effort(req)
        return ScriptedReply(reply.text, reasoning=f"{SCRIPT} {reply.reasoning}",
                             reasoning_tokens=reply.reasoning_tokens)

    with TestServer(hostile) as srv:
        _cli(*eval_args(srv, llm_double, tmp_path, "--sweep", "llm.reasoning_effort=low,high",
                        "-o", str(tmp_path / "runs")))
    _cli("eval", "--task", "demo", "-o", str(tmp_path / "runs" / "bm25"), "--quiet")
    folders = sorted(p for p in (tmp_path / "runs").iterdir() if p.is_dir())  # bm25, high, low: r1, r2, r3
    results = [json.loads((f / "results.json").read_text()) for f in folders]
    points = [(r["usage"]["per_query"]["total"]["compute"]["usd"] if r["usage"] else 0.0, r["metrics"]["nDCG@10"])
              for r in results]
    want = {f.name for f, on in zip(folders, pareto(points)) if on}
    high = next(i for i, f in enumerate(folders) if f.name.endswith("=high")) + 1
    calls = [json.loads(line) for line in (folders[high - 1] / "llm_calls.jsonl").read_text().splitlines()]
    with serving([tmp_path / "runs"], cache_dir=tmp_path / "cache") as srv, _page(srv.url) as page:
        _go(page, f"{srv.url}#/run/r{high}/query/{calls[0]['query_id']}")
        first = page.locator("details.call").first
        first.locator("summary").click()  # opens the call (no page change)
        assert first.locator("pre.reasoning").inner_text() == calls[0]["reasoning"]
        assert first.locator("pre.reply").inner_text() in ("Yes", "No")
        assert page.evaluate("window.__pwned") is None and page.locator("#app script").count() == 0
        _go(page, f"{srv.url}#/compare/r1/r2/r3")
        section = page.locator("section#compute")
        assert section.locator("svg.compute-chart").count() == 3
        usd = section.locator('svg.compute-chart[data-axis="usd"]')
        assert usd.locator("circle.point").count() == 3
        on = {s.split(": ", 1)[1] for s in usd.locator("circle.point.frontier").evaluate_all(
            "els => els.map(e => e.dataset.system)")}
        assert on == want
        assert section.locator("svg.compute-deltas").count() == 2  # the two LLM runs against bm25, the cheapest
