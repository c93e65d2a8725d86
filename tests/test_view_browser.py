"""``harness view`` in a real browser: headless Chromium (Debian's ``chromium`` driven by Playwright's
Python package, no browser download) walks runs -> a run -> sort by nDCG@10 -> a query -> its LLM
call's prompt and reply -> compare two runs -> the same query side by side, on real results (TREC
DL19 reranked by RankGPT against a loopback oracle, an InfoSearch fixture, a BIRCO suite), once on
the server and once on the static bundle opened from ``file://``; each step is checked against the
results files. Folders whose every string is an injection payload render as text, and no script of
theirs runs. Every request that is neither the view's server nor ``file://`` is blocked and fails the
test. Skipped where Chromium, Playwright or the data is missing, unless CI=true.

``HARNESS_VIEW_SCREENSHOTS=DIR`` also writes the screenshots to DIR (``docs/view`` for the docs)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.served.reply_cache import LLMCache
from harness.testing import plugin_missing
from harness.view.bundle import write_bundle
from harness.view.catalog import Catalog
from tests.view_fixtures import (
    FOLDER_IMG,
    JS,
    QIDS,
    TEXT,
    payload_folder,
    read_jsonl,
    read_run,
    serving,
)

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("HARNESS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
INFOSEARCH_FIXTURE = REPO / "plugins" / "harness-infosearch" / "tests" / "fixtures" / "data"
DL19_QUERIES = 8  # the first queries of DL19 (9 windows each): enough to sort, compare and click


def _missing(what: list[str], label: str) -> None:
    if what:
        msg = f"{label} needs " + " and ".join(what)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)


def _require_browser() -> None:
    missing = []
    if importlib.util.find_spec("playwright") is None:
        missing.append("the playwright package (pip install playwright)")
    if not Path(CHROMIUM).exists():
        missing.append("chromium (apt-get install -y chromium)")
    _missing(missing, "the view browser test")


def _shared() -> Path:
    from harness.testing import shared_data_dir

    return shared_data_dir(REPO)


# -- real results --------------------------------------------------------------------------------
def _dl19(root: Path) -> list[str]:
    """DL19 reranked by RankGPT against a loopback server: an oracle (each window sorted by its
    passages' qrels grades) and the identity permutation (BM25's order)."""
    missing = []
    if plugin_missing("harness-rankgpt"):  # installed: the run finds it by its entry point
        missing.append("the harness-rankgpt plugin")
    if not (_shared() / "trec-dl" / "bm25_top100.dl19.json").is_file():
        missing.append("TREC DL19 data (set HARNESS_DATA, see docs/data.md)")
    _missing(missing, "the DL19 view walk")
    import re

    from harness_rankgpt.prompts import passage_text

    from harness.testing import TestServer

    ds = harness.load_dataset("trec-dl19")
    (mode,) = ds.modes
    grades: dict[tuple[str, str], int] = {}
    for qid, hits in ds.candidates[mode].items():
        for d, _ in hits:
            doc = ds.corpus[d]
            key = (ds.queries[mode][qid].text, passage_text(doc.text, doc.title))
            grades[key] = max(grades.get(key, 0), int(ds.qrels[mode].get(qid, {}).get(d, 0)))
    passage, query = re.compile(r"^\[(\d+)\] (.*)$", re.S), re.compile(r"relevance to query: (.*)\.$", re.S)

    def oracle(request: dict[str, Any]) -> str:
        msgs = request["messages"]
        q = query.search(msgs[1]["content"]).group(1)
        shown = [passage.match(m["content"]).group(2) for m in msgs[3:-1:2]]
        order = sorted(range(len(shown)), key=lambda i: -grades.get((q, shown[i]), 0))
        return " > ".join(f"[{i + 1}]" for i in order)

    def identity(request: dict[str, Any]) -> str:
        return " > ".join(f"[{i + 1}]" for i in range(len(request["messages"][3:-1:2])))

    for name, reply in (("dl19-oracle", oracle), ("dl19-bm25", identity)):
        with TestServer(reply=reply) as srv:
            harness.evaluate("trec-dl19", rerankers=["rankgpt"], llm=srv.spec("oracle-model"),
                             output=str(root / name), progress=False, limit=DL19_QUERIES)
    return ["dl19-oracle", "dl19-bm25"]


def _infosearch(root: Path) -> list[str]:
    if plugin_missing("harness-infosearch"):
        _missing(["the harness-infosearch plugin"], "the InfoSearch view walk")
    import harness_infosearch

    from harness.testing import plugin_registry

    context = harness.Context.create(registry=plugin_registry(harness_infosearch), data_dir=INFOSEARCH_FIXTURE)
    for name, spec in (("infosearch-bm25", "bm25"), ("infosearch-tuned", "bm25:k1=0.9,b=0.4")):
        harness.evaluate("infosearch:language", retriever=spec, output=str(root / name), context=context,
                         progress=False)
    return ["infosearch-bm25", "infosearch-tuned"]


def _birco(root: Path) -> list[str]:
    needed = [f"birco/{t}/{f}" for t in ("arguana", "wtb", "clinical-trial", "relic")
              for f in ("test_set.pickle", "e5_rank.pickle")]
    missing = []
    if plugin_missing("harness-birco"):
        missing.append("the harness-birco plugin")
    if any(not (_shared() / f).is_file() for f in needed):
        missing.append("BIRCO data (set HARNESS_DATA or run `harness data download birco`)")
    _missing(missing, "the BIRCO view walk")
    for seed in (1, 2):
        harness.evaluate("birco", rerankers=[f"birco-random:seed={seed}"], output=str(root / f"birco-random{seed}"),
                         progress=False)
    return ["birco-random1", "birco-random2"]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Any]:
    _require_browser()
    root = tmp_path_factory.mktemp("view-results")
    made = {"dl19": _dl19(root / "dl19"), "infosearch": _infosearch(root / "infosearch"),
            "birco": _birco(root / "birco")}
    payload_root = root / "payloads"
    from harness.runtime.cachedir import default_cache_dir

    cache = default_cache_dir()  # the DL19 runs' cache too: the view is given it (--cache)
    payload_folder(payload_root, cache / "llm")
    payload_folder(payload_root, cache / "llm", name=JS, shift=0.1)
    return {"roots": [root / "dl19", root / "infosearch", root / "birco", payload_root], "made": made,
            "root": root, "cache": cache}


# -- the browser ---------------------------------------------------------------------------------
@contextlib.contextmanager
def _page(allowed: str) -> Iterator[Any]:
    """A Chromium page on which every request outside ``allowed`` (a URL prefix) is blocked; none may
    be made, no dialog may open and no page error may happen."""
    from playwright.sync_api import sync_playwright

    blocked: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})

            def route(r):
                if r.request.url.startswith(allowed):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page
        finally:
            browser.close()
    assert blocked == [] and dialogs == [] and errors == []


def _ready(page) -> None:
    page.wait_for_selector('#app[data-ready="1"]')
    assert page.locator("#error").count() == 0, page.locator("#error").inner_text()


def _go(page, url: str) -> None:
    page.goto(url)
    _ready(page)


def _click(page, locator) -> None:
    page.evaluate("document.getElementById('app').dataset.ready = '0'")
    locator.click()
    _ready(page)


def _shot(page, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(tmp_path / f"{name}.png"))
    assert (tmp_path / f"{name}.png").stat().st_size > 5_000
    target = os.environ.get("HARNESS_VIEW_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / f"{name}.png", Path(target) / f"{name}.png")


def _no_script_ran(page) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#app img, #app script, #app iframe, #app object").count() == 0
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    assert all(h.startswith("#/") for h in hrefs), hrefs


# -- the walk --------------------------------------------------------------------------------------
def _walk(page, base: str, folder: Path, other: Path, n_runs: int, tmp_path: Path, shots: bool) -> None:
    """runs -> a run -> sort by nDCG@10 -> a query -> its LLM call -> compare -> side by side."""
    data = json.loads((folder / "results.json").read_text())
    rows = read_jsonl(folder / "per_query.jsonl")
    _go(page, base + "#/")
    assert page.locator("table#runs tbody tr").count() == n_runs
    if shots:
        _shot(page, tmp_path, "runs")
    _click(page, page.get_by_role("link", name=folder.name, exact=True))
    assert page.locator("h1").inner_text() == folder.name
    table = page.locator("#metrics-table").inner_text().splitlines()
    assert ["nDCG@10", f"{data['metrics']['nDCG@10']:.4f}"] in [line.split() for line in table]
    assert page.locator("#query-count").inner_text() == f"{len(rows)} of {len(rows)} queries"

    page.locator('.vhead span[data-col="nDCG@10"]').click()
    best = max(r["nDCG@10"] for r in rows)
    first = page.locator(".vrow").first
    qid = first.locator("span").first.inner_text()
    assert next(r for r in rows if r["query_id"] == qid)["nDCG@10"] == best
    heads = page.locator(".vhead span").all_inner_texts()
    assert heads[:3] == ["query", "text", "LLM failures"]
    assert first.locator("span").nth(heads.index("nDCG@10")).inner_text() == f"{best:.4f}"
    texts = {q["query_id"]: q["text"] for q in read_jsonl(folder / "queries.jsonl")}
    word = texts[qid].split()[-1]
    page.fill("#query-filter", word)  # filter by text: the queries whose text holds the word
    want = sum(word.lower() in t.lower() or word.lower() in q.lower() for q, t in texts.items())
    assert page.locator("#query-count").inner_text() == f"{want} of {len(rows)} queries"
    page.fill("#query-filter", "")
    page.select_option("#range-metric", "nDCG@10")
    page.fill("#range-min", "0.9")  # filter by range
    want = sum(r["nDCG@10"] >= 0.9 for r in rows)
    assert page.locator("#query-count").inner_text() == f"{want} of {len(rows)} queries"
    page.check("#only-failures")  # filter by LLM failure: the loopback oracle never fails
    assert page.locator("#query-count").inner_text() == f"0 of {len(rows)} queries"
    page.uncheck("#only-failures")
    page.fill("#range-min", "")
    first = page.locator(".vrow").first
    assert first.locator("span").first.inner_text() == qid
    if shots:
        _shot(page, tmp_path, "run")

    _click(page, first)
    assert page.locator("#query-id").inner_text() == qid
    text = next(q for q in read_jsonl(folder / "queries.jsonl") if q["query_id"] == qid)["text"]
    assert page.locator("td.qtext").first.inner_text() == text
    top = read_run(folder / "run.trec")[qid]
    docs = page.eval_on_selector_all("table.ranking tbody tr", "els => els.map(e => e.dataset.doc)")
    assert docs[:10] == [d for d, _, _ in top[:10]]
    calls = [c for c in read_jsonl(folder / "llm_calls.jsonl") if c["query_id"] == qid]
    assert page.locator("details.call").count() == len(calls) > 0
    entry = LLMCache(Path(calls[0]["cache"])).get(calls[0]["key"])  # read independently of the view
    call = page.locator("details.call").first
    call.locator("summary").click()
    prompts = call.locator("pre.prompt").all_inner_texts()
    assert prompts == [m["content"] for m in entry["key"]["messages"]]
    assert call.locator("pre.reply").inner_text() == entry["reply"]["text"]
    if shots:
        _shot(page, tmp_path, "query")

    _go(page, base + "#/")
    for name in (folder.name, other.name):
        row = page.locator("table#runs tbody tr").filter(has=page.get_by_role("link", name=name, exact=True))
        row.locator("input[type=checkbox]").check()
    _click(page, page.locator("#compare-selected"))
    page.select_option("#compare-metric", "nDCG@10")
    a = {r["query_id"]: r["nDCG@10"] for r in rows}
    b = {r["query_id"]: r["nDCG@10"] for r in read_jsonl(other / "per_query.jsonl")}
    d = [b[q] - a[q] for q in a]
    wtl = f"{sum(x > 1e-12 for x in d)}/{sum(abs(x) <= 1e-12 for x in d)}/{sum(x < -1e-12 for x in d)}"
    assert page.locator("#compare-stats td.wtl").inner_text() == wtl
    assert page.locator("svg.deltas rect.bar").count() == len(a)
    # the ranks of the two runs with their bootstrap intervals: drawn, best first, as the table lists them
    points = page.locator("svg.rank-chart circle.rank-point")
    assert points.count() == page.locator("svg.rank-chart line.rank-interval").count() == 2
    for j in range(2):
        box = points.nth(j).bounding_box()
        assert box and box["width"] > 3 and box["height"] > 3
    best = folder.name if sum(a.values()) > sum(b.values()) else other.name
    assert page.locator("#compare-ranks tr").nth(1).get_attribute("data-system").endswith(best)
    if shots:
        _shot(page, tmp_path, "compare")

    _click(page, page.locator(f'svg.deltas rect.bar[data-qid="{qid}"]'))
    assert page.locator("#query-id").inner_text() == qid
    sides = page.locator("section.side-run")
    assert sides.count() == 2
    for i, f in enumerate((folder, other)):
        shown = sides.nth(i).locator("table.ranking tbody tr").first.get_attribute("data-doc")
        assert shown == read_run(f / "run.trec")[qid][0][0]
    if shots:
        _shot(page, tmp_path, "side-by-side")


def _payload_walk(page, base: str, catalog: Catalog) -> None:
    """Every page of the payload folders renders the payloads as text; no script of theirs runs."""
    ids = {r.label: r.id for r in catalog.runs.values()}
    _go(page, base + "#/")
    assert FOLDER_IMG in page.locator("table#runs").inner_text()
    _no_script_ran(page)
    _click(page, page.get_by_role("link", name=FOLDER_IMG, exact=True))
    _no_script_ran(page)
    for i, qid in enumerate(QIDS):
        _click(page, page.locator(".vrow").nth(i))
        assert page.locator("#query-id").inner_text() == qid
        assert page.locator("td.qtext").inner_text() == TEXT
        page.locator("details.call summary").click()
        assert page.locator("pre.reply").inner_text() == TEXT and page.locator("pre.prompt").inner_text() == TEXT
        _no_script_ran(page)
        page.go_back()
        _ready(page)
    _go(page, base + f"#/compare/{ids[FOLDER_IMG]}/{ids[JS]}")
    _no_script_ran(page)
    _click(page, page.locator("svg.deltas rect.bar").first)
    assert page.locator("section.side-run").count() == 2 and page.locator("#query-id").inner_text() in QIDS
    _no_script_ran(page)


def _walks(page, base: str, res: dict[str, Any], catalog: Catalog, tmp_path: Path, shots: bool) -> None:
    n = len(catalog.runs)
    dl19 = res["root"] / "dl19"
    _walk(page, base, dl19 / "dl19-oracle", dl19 / "dl19-bm25", n, tmp_path, shots)
    # InfoSearch: three modes, the documents whose grade changes between modes highlighted
    info = res["root"] / "infosearch"
    _go(page, base + "#/")
    _click(page, page.get_by_role("link", name="infosearch-bm25", exact=True))
    _click(page, page.locator(".vrow").first)
    qid = page.locator("#query-id").inner_text()
    heads = page.locator("table.ranking thead th").all_inner_texts()
    assert [h for h in heads if h.startswith("rank ")] == [f"rank final[{m}]" for m in ("og", "changed", "reversed")]
    qrels = {(q["mode"], q["doc_id"]): q["grade"] for q in read_jsonl(info / "infosearch-bm25" / "qrels.jsonl")
             if q["query_id"] == qid}
    ranks = {m: {d: r for d, r, _ in read_run(info / "infosearch-bm25" / f"run.{m}.trec")[qid]}
             for m in ("og", "changed")}
    col = heads.index("rank final[changed]")
    moved = 0
    for tr in page.locator("table.ranking tbody tr").all():
        doc = tr.get_attribute("data-doc")
        a, b = ranks["og"][doc], ranks["changed"][doc]  # the move from og to changed, drawn as an arrow
        arrow = "" if a == b else f" ({'↑' if a > b else '↓'}{abs(a - b)})"
        assert tr.locator("td").nth(col).inner_text() == f"{b}{arrow}"
        grades = {qrels.get((m, doc), 0) for m in ("og", "changed", "reversed")}
        assert ("changed" in (tr.get_attribute("class") or "")) == (len(grades) > 1), doc
        moved += len(grades) > 1
    assert moved > 0  # the fixture's instructions change some documents' relevance
    if shots:
        _shot(page, tmp_path, "infosearch-query")
    # BIRCO: a suite's members are runs; the member's metric table carries the bootstrap SE
    _go(page, base + "#/")
    _click(page, page.get_by_role("link", name="birco-random1 / birco:arguana", exact=True))
    member = res["root"] / "birco" / "birco-random1" / "birco_arguana"
    data = json.loads((member / "results.json").read_text())
    u = data["uncertainty"]["birco-ndcg@10"]
    assert f"{data['metrics']['birco-ndcg@10']:.4f} ± {u['se']:.4f}" in page.locator("#metrics-table").inner_text()
    _payload_walk(page, base, catalog)


def test_view_walk_on_the_server_and_the_bundle(results, tmp_path):
    catalog = Catalog(results["roots"], cache_dir=results["cache"])
    with serving(results["roots"], cache_dir=results["cache"]) as srv, _page(srv.url) as page:
        _walks(page, srv.url, results, catalog, tmp_path, shots=True)
    bundle = write_bundle(catalog, tmp_path / "bundle", permutations=1000)
    with _page("file://") as page:
        _walks(page, (bundle / "index.html").as_uri(), results, catalog, tmp_path / "bundle", shots=False)
