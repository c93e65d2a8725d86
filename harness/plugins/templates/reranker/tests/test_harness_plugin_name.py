"""Tests of harness-plugin-name.

Registration, re-ordering rules, and a gain on the packaged `demo` task."""

from importlib import metadata

import harness
import pytest
from harness import Document, Query, Run, format_query

import harness_plugin_name as plugin
from harness_plugin_name.reranker import OverlapReranker

NAME, DIST = plugin.NAME, "harness-plugin-name"


from _helpers import needs_install, registered  # noqa: E402 (rendering puts templates/_helpers.py here)


def test_registers_the_reranker():
    factory, description = registered(plugin.register_rerankers)[NAME]
    assert description
    assert isinstance(factory(depth=5), OverlapReranker)


def test_reorders_keeps_every_document_and_scores_strictly_decrease():
    corpus = {"a": Document("a", "volcanoes erupt"), "b": Document("b", "dogs bark"), "c": Document("c", "dogs")}
    queries = {"q": Query("q", "why do dogs bark")}
    run = Run.from_order({"q": ["a", "c", "b", "missing"]})
    out = OverlapReranker().rerank(queries, run, corpus)
    assert out.doc_ids("q") == ["b", "c", "a", "missing"]
    scores = [s for _, s in out["q"]]
    assert all(x > y for x, y in zip(scores, scores[1:], strict=False))
    assert OverlapReranker(depth=2).rerank(queries, run, corpus).doc_ids("q") == ["c", "a", "b", "missing"]


def test_demo_task_improves_on_corpus_order():
    task = harness.load_task("demo")
    dataset = harness.load_dataset("demo")
    queries = {qid: Query(qid, format_query(q, task.query_format), q.instruction, {**q.meta, "query": q.text})
               for qid, q in dataset.queries["default"].items()}
    given = Run.from_order({qid: list(dataset.corpus) for qid in queries})  # every document, corpus order
    reranked = OverlapReranker().rerank(queries, given, dataset.corpus)
    qrels = dataset.qrels["default"]
    before = harness.score(qrels, given, ["nDCG@10"]).aggregate["nDCG@10"]
    after = harness.score(qrels, reranked, ["nDCG@10"]).aggregate["nDCG@10"]
    assert after > before


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert NAME in plugins[DIST]["components"]["reranker"]
    result = harness.evaluate("demo", retriever="bm25", rerankers=[NAME], metrics=["nDCG@10"], progress=False)
    assert 0.0 < result.metrics["nDCG@10"] <= 1.0
