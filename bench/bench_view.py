"""`harness view` opens the run page of a 10,000-query x 100-candidate run in under 2 s and scrolls smoothly.

    python bench/bench_view.py [--queries 10000] [--candidates 100] [--metrics 8] [--repeat 3]

Writes one results folder (schema 2: results.json, per_query.jsonl with ``--metrics`` metrics,
run.trec of queries x candidates lines, queries.jsonl, qrels.jsonl), serves it with the view's
server on loopback and drives headless Chromium (Debian's ``chromium`` through Playwright): the
time from navigating to ``#/run/r1`` until the per-query table's rows are drawn (cold: the server
reads the folder; warm: a reload), then scrolls the table through all rows in 40 steps, one per
animation frame, and reports the frame times. The baseline, in the same process and browser, is
the runs page (one row). The same run page is then opened from the static bundle (``file://``).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def write_folder(folder: Path, n_queries: int, n_cands: int, n_metrics: int, seed: int = 0) -> None:
    rnd = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    names = ["nDCG@10", *(f"metric-{i}" for i in range(n_metrics - 1))]
    with open(folder / "per_query.jsonl", "w", encoding="utf-8") as fh:
        for q in range(n_queries):
            fh.write(json.dumps({"query_id": f"q{q}", **{n: rnd.random() for n in names}}) + "\n")
    with open(folder / "run.trec", "w", encoding="utf-8") as fh:
        for q in range(n_queries):
            fh.writelines(f"q{q} Q0 d{q}-{r} {r} {1 / r:.6f} bench\n" for r in range(1, n_cands + 1))
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in range(n_queries):
            fh.write(json.dumps({"mode": "default", "query_id": f"q{q}", "text": f"query number {q}"}) + "\n")
    with open(folder / "qrels.jsonl", "w", encoding="utf-8") as fh:
        for q in range(n_queries):
            for r in range(1, n_cands + 1, 7):
                fh.write(json.dumps({"mode": "default", "query_id": f"q{q}", "doc_id": f"d{q}-{r}",
                                     "grade": rnd.randint(0, 2)}) + "\n")
    results = {"schema_version": 2, "status": "complete", "created": "2026-01-01T00:00:00+0000",
               "task": {"name": "bench", "metrics": names}, "components": {"retriever": {"spec": "bench"}},
               "metrics": {n: 0.5 for n in names}, "uncertainty": {}, "metric_details": {},
               "files": {"run[default]": "run.trec", "per_query": "per_query.jsonl"}}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")


def open_page(page, url: str) -> float:
    t = time.perf_counter()
    page.goto(url)
    page.wait_for_selector('#app[data-ready="1"]')
    page.wait_for_selector(".vrow, table#runs tbody tr")
    return time.perf_counter() - t


def scroll_frames(page) -> list[float]:
    """Scroll the per-query table top to bottom in 40 steps, one per frame; each frame's duration (ms)."""
    return page.evaluate("""() => new Promise(done => {
        const body = document.querySelector('.vbody');
        const steps = 40, times = [];
        let i = 0, last = performance.now();
        function step() {
            const now = performance.now();
            if (i > 0) times.push(now - last);
            last = now;
            if (i++ >= steps) { done(times); return; }
            body.scrollTop = (body.scrollHeight - body.clientHeight) * i / steps;
            body.dispatchEvent(new Event('scroll'));
            requestAnimationFrame(step);
        }
        requestAnimationFrame(step);
    })""")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--metrics", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from harness.view.bundle import write_bundle
    from harness.view.catalog import Catalog
    from harness.view.server import ViewServer

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "big"
        t = time.perf_counter()
        write_folder(folder, args.queries, args.candidates, args.metrics)
        size = sum(p.stat().st_size for p in folder.iterdir()) / 2**20
        print(f"results folder: {args.queries:,} queries x {args.candidates} candidates, {args.metrics} metrics, "
              f"{size:.0f} MiB, written in {time.perf_counter() - t:.1f} s")
        srv = ViewServer(Catalog([folder]))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            base = open_page(page, srv.url + "#/")
            cold = open_page(page, srv.url + "#/run/r1")
            warm = []
            for _ in range(args.repeat):
                page.goto("about:blank")
                warm.append(open_page(page, srv.url + "#/run/r1"))
            frames = scroll_frames(page)
            rows = page.locator(".vrow").count()
            t = time.perf_counter()
            page.locator('.vhead span[data-col="nDCG@10"]').click()
            page.wait_for_function("document.querySelector('.vhead span.sorted-desc') !== null")
            sort = time.perf_counter() - t
            t = time.perf_counter()
            page.locator(".vrow").first.click()
            page.wait_for_selector("#query-id")
            query_first = time.perf_counter() - t
            page.go_back()
            page.wait_for_selector(".vrow")
            t = time.perf_counter()
            page.locator(".vrow").nth(3).click()
            page.wait_for_selector("#query-id")
            query_next = time.perf_counter() - t
            print(f"runs page (baseline): {base:.3f} s")
            print(f"run page, server, first open (reads per_query.jsonl): {cold:.3f} s "
                  f"({cold / base:.1f}x the runs page; target < 2 s)")
            print(f"run page, server, reopened: median {statistics.median(warm):.3f} s over {args.repeat}")
            print(f"scrolling {args.queries:,} rows: {len(frames)} frames, median {statistics.median(frames):.1f} ms, "
                  f"worst {max(frames):.1f} ms; {rows} row elements in the page")
            print(f"sort by nDCG@10: {sort:.3f} s; first query page: {query_first:.3f} s (the run file is read "
                  f"once, in the background from the run page on); another query: {query_next:.3f} s")
            srv.shutdown()
            t = time.perf_counter()
            bundle = write_bundle(Catalog([folder]), Path(tmp) / "bundle", permutations=100)
            built = time.perf_counter() - t
            mb = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()) / 2**20
            file_open = open_page(page, (bundle / "index.html").as_uri() + "#/run/r1")
            print(f"bundle: written in {built:.1f} s ({mb:.0f} MiB); run page from file://: {file_open:.3f} s")
            browser.close()


if __name__ == "__main__":
    main()
