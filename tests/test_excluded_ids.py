"""``Dataset.excluded`` (BRIGHT's ``excluded_ids``): documents never ranked for a query. The pipeline must
give exactly "score every document, drop the excluded ones, keep the top ``depth``" (the official
BRIGHT code), whatever the first stage, and keep them out after every reranker."""

from __future__ import annotations

from harness import Dataset, Document, Qrels, Query, Run, Task, evaluate, hookimpl
from harness.testing import plugin_registry

DOCS = {f"d{i}": Document(f"d{i}", text) for i, text in enumerate([
    "lobster roll with butter", "crab bisque soup", "lobster lobster lobster", "butter and bread",
    "a roll of bread", "soup of the day", "fishing boats", "boats in the harbour"])}
QUERIES = {"q1": Query("q1", "lobster roll butter"), "q2": Query("q2", "lobster soup"), "q3": Query("q3", "bread")}
QRELS = Qrels({"q1": {"d0": 1}, "q2": {"d1": 1}, "q3": {"d3": 1}})
EXCLUDED = {"q1": frozenset({"d2", "d6"}), "q2": frozenset({"d2", "missing"})}


class _Data:
    @hookimpl
    def register_datasets(self, register):
        def factory():
            ds = Dataset.single("tiny", DOCS, QUERIES, QRELS)
            ds.excluded = dict(EXCLUDED)
            return ds

        register("tiny", factory, "a dataset with excluded documents")


class Inject:
    """A reranker that puts an excluded document first (as a careless plugin might)."""

    def rerank(self, queries, run, corpus):
        return Run({q: [("d2", 99.0), *[(d, s) for d, s in hits if d != "d2"]] for q, hits in run.items()})


def _task(depth: int) -> Task:
    return Task(name="tiny", dataset="tiny", first_stage="retrieve", depth=depth)


def test_without_drops_the_excluded_documents_and_keeps_the_rest():
    run = Run({"q1": [("a", 3.0), ("b", 2.0), ("c", 2.0)], "q2": [("a", 1.0)]}).with_strict_scores()
    kept = run.without({"q1": {"b"}, "q9": {"a"}})
    assert kept.doc_ids("q1") == ["a", "c"] and kept.doc_ids("q2") == ["a"]
    assert kept.scores("q1") == {d: s for d, s in run.scores("q1").items() if d != "b"}
    assert kept.given_scores()["q1"] == {"a": 3.0, "c": 2.0}  # the given (tied) scores follow
    assert run.without({}) is run


def test_the_first_stage_equals_scoring_all_popping_excluded_then_cutting():
    registry = plugin_registry(_Data())
    full = evaluate(_task(1000), retriever="bm25", registry=registry, progress=False)
    # the reference: every document scored by the same BM25 with nothing excluded
    ranked = _Fixed(Dataset.single("tiny", DOCS, QUERIES, QRELS)).search({q: v.text for q, v in QUERIES.items()}, 0)
    assert all(EXCLUDED[q] & set(ranked.doc_ids(q)[:3]) for q in ("q1", "q2"))  # they would rank in the top 3
    for depth in (1, 2, 3, 1000):
        got = evaluate(_task(depth), retriever="bm25", registry=registry, progress=False).runs["default"]
        for qid in QUERIES:
            expected = [d for d in ranked.doc_ids(qid) if d not in EXCLUDED.get(qid, ())][:depth]
            assert got.doc_ids(qid) == expected, (depth, qid)
    assert not any(d in EXCLUDED.get(q, ()) for q in QUERIES for d in full.runs["default"].doc_ids(q))


class _Fixed:
    """bm25 over a dataset without exclusions, every document scored: the reference ranking."""

    def __init__(self, ds):
        from harness import Context

        ctx = Context.create(registry=plugin_registry())
        self.bm25 = ctx.registry.create("retriever", "bm25", ctx)
        self.bm25.index(ds.corpus)

    def index(self, corpus):
        pass

    def search(self, queries, k):
        return self.bm25.search(queries, len(DOCS))


def test_a_reranker_cannot_bring_an_excluded_document_back():
    registry = plugin_registry(_Data())
    res = evaluate(_task(5), retriever="bm25", rerankers=[Inject()], registry=registry, progress=False)
    run = res.runs["default"]
    assert "d2" not in run.doc_ids("q1")  # excluded for q1
    assert run.doc_ids("q3")[0] == "d2"  # not excluded for q3: the reranker's order stands


def test_limit_keeps_the_exclusions_of_the_kept_queries():
    ds = Dataset.single("tiny", DOCS, QUERIES, QRELS)
    ds.excluded = dict(EXCLUDED)
    assert ds.limit(1).excluded == {"q1": EXCLUDED["q1"]}
