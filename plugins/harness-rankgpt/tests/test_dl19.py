"""Issue 4's "Done when" on TREC DL19 (all 43 queries, BM25 top-100 from rank_llm), end to end
through ``harness.evaluate`` and the loopback server:

- an oracle that answers every window with the permutation sorting its passages by their true qrels
  grade gives the best nDCG@10 the BM25 top-100 allows;
- the identity permutation gives BM25's 0.5058;
- garbage, partial and repeated ids (on the first 12 queries, to keep the suite fast): the run
  finishes, failures are counted, no passage is lost or duplicated;
- a warm-cache rerun sends no request.
"""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from harness import Run, evaluate, score

from harness_rankgpt.prompts import passage_text

from .conftest import shared_data_path

PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.S)
QUERY = re.compile(r"relevance to query: (.*)\.$", re.S)


@pytest.fixture(scope="module")
def dl19():
    """(dataset, grade lookup (query text, shown passage) -> grade, BM25 run)."""
    from harness import load_dataset

    if not (shared_data_path() / "trec-dl" / "bm25_top100.dl19.json").is_file():
        pytest.skip("TREC DL19 data not available: set HARNESS_DATA (see docs/data.md)")
    ds = load_dataset("trec-dl19")
    (mode,) = ds.modes
    queries, qrels, cands = ds.queries[mode], ds.qrels[mode], ds.candidates[mode]
    grades: dict[tuple[str, str], int] = {}
    for qid, hits in cands.items():
        for d, _ in hits:
            doc = ds.corpus[d]
            key = (queries[qid].text, passage_text(doc.text, doc.title))
            grades[key] = max(grades.get(key, 0), int(qrels.get(qid, {}).get(d, 0)))
    return ds, grades, cands


def window(request: dict) -> tuple[str, list[str]]:
    msgs = request["messages"]
    query = QUERY.search(msgs[1]["content"]).group(1)
    return query, [PASSAGE.match(m["content"]).group(2) for m in msgs[3:-1:2]]


def oracle(grades):
    def reply(request):
        query, shown = window(request)
        order = sorted(range(len(shown)), key=lambda i: -grades.get((query, shown[i]), 0))  # stable
        return " > ".join(f"[{i + 1}]" for i in order)
    return reply


def identity(request):
    return " > ".join(f"[{i + 1}]" for i in range(len(window(request)[1])))


def garbage(request):
    """Per window (deterministic from its content): nonsense, a partial list, repeats, out-of-range ids."""
    n = len(window(request)[1])
    h = int(hashlib.sha256(json.dumps(request["messages"]).encode()).hexdigest(), 16)
    kind = h % 5
    if kind == 0:
        return "I cannot rank these passages."
    if kind == 1:
        return "[3] > [1]"
    if kind == 2:
        return "[2] > [2] > [2] > [5] > [5] > [1]"
    if kind == 3:
        return f"[{n + 5}] > [0] > [{n}] > [-1] > 2019"
    return " > ".join(f"[{i}]" for i in range(n, 0, -1))


def run_eval(registry, tmp_path, reply, name, srv=None, limit=None):
    """Evaluate rankgpt on DL19 against ``srv`` (or a new server answering with ``reply``); returns
    the result and the number of requests the server received during this evaluation."""
    from harness.testing import TestServer

    if srv is None:
        with TestServer(reply=reply) as srv:
            return run_eval(registry, tmp_path, reply, name, srv, limit)
    before = srv.requests_total
    res = evaluate("trec-dl19", rerankers=["rankgpt"], llm=srv.spec("oracle-model"), registry=registry,
                   output=str(tmp_path / name), progress=False, limit=limit)
    return res, srv.requests_total - before


def test_oracle_reaches_the_best_ndcg_the_candidates_allow(dl19, registry, tmp_path, monkeypatch):
    ds, grades, cands = dl19
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    res, sent = run_eval(registry, tmp_path, oracle(grades), "oracle")
    assert len(res.runs["default"]) == 43 and sent == 43 * 9
    (mode,) = ds.modes
    best = {q: sorted((d for d, _ in hits), key=lambda d: -ds.qrels[mode].get(q, {}).get(d, 0))
            for q, hits in cands.items()}
    ideal = score(ds.qrels[mode], Run.from_order(best)).aggregate["nDCG@10"]
    assert res.metrics["nDCG@10"] == pytest.approx(ideal, abs=1e-9)
    assert round(ideal, 4) == 0.8922  # DL19: the qrels-sorted BM25 top-100
    rr = res.components["rerankers"][0]
    assert rr["stats"]["windows"] == 387 and rr["stats"]["failed_windows"] == 0
    assert len(rr["prompt_template_sha256"]) == 64
    data = json.loads((tmp_path / "oracle" / "results.json").read_text())
    assert data["usage"]["total"]["calls"] == 387
    assert data["components"]["rerankers"][0]["prompt_template_sha256"] == rr["prompt_template_sha256"]


def test_identity_gives_bm25_and_warm_rerun_sends_nothing(dl19, registry, tmp_path, monkeypatch):
    from harness.testing import TestServer

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with TestServer(reply=identity) as srv:  # one server: its base URL is part of the cache key
        res, sent = run_eval(registry, tmp_path, identity, "identity", srv)
        assert sent == 387
        assert round(res.metrics["nDCG@10"], 4) == 0.5058
        warm, sent_again = run_eval(registry, tmp_path, identity, "warm", srv)
    assert sent_again == 0
    assert warm.metrics == res.metrics
    assert warm.usage["total"]["cache_hits"] == 387 and warm.usage["total"]["calls"] == 0
    assert warm.components["rerankers"][0]["stats"]["cache_hits"] == 387


def test_garbage_replies_finish_with_failures_counted_and_no_passage_lost(dl19, registry, tmp_path, monkeypatch):
    ds, _, cands = dl19
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    res, sent = run_eval(registry, tmp_path, garbage, "garbage", limit=12)  # 12 queries keep the suite fast
    assert sent == 12 * 9
    run = res.runs["default"]
    assert len(run) == 12
    for q in run:
        hits = cands[q]
        got = run.doc_ids(q)
        assert len(got) == len(hits) and len(set(got)) == len(got) and set(got) == {d for d, _ in hits}
    assert run.is_strictly_decreasing()
    st = res.components["rerankers"][0]["stats"]
    assert st["failed_windows"] == st["unparseable"] > 0
    assert st["partial_windows"] > 0 and st["duplicate_ids"] > 0 and st["out_of_range_ids"] > 0
    assert sum(st["failures_per_query"].values()) == st["failed_windows"] and len(st["failures_per_query"]) == 12
    assert "scores_made_strict" not in res.counts
