"""Tests of harness-plugin-name.

Registration, the retriever on a toy corpus, and on the packaged `demo` task."""

from importlib import metadata

import harness
import pytest
from harness import Document, format_query

import harness_plugin_name as plugin
from harness_plugin_name.retriever import OverlapRetriever

NAME, DIST = plugin.NAME, "harness-plugin-name"


from _helpers import needs_install, registered  # noqa: E402 (rendering puts templates/_helpers.py here)


def demo_run(retriever):
    """Index the packaged demo corpus and search its queries as the `demo` task forms them."""
    task = harness.load_task("demo")
    dataset = harness.load_dataset("demo")
    queries = {qid: format_query(q, task.query_format) for qid, q in dataset.queries["default"].items()}
    retriever.index(dataset.corpus)
    return retriever.search(queries, k=task.depth), dataset


def test_registers_the_retriever():
    factory, description = registered(plugin.register_retrievers)[NAME]
    assert description
    assert isinstance(factory(lowercase=False), OverlapRetriever)


def test_ranks_a_toy_corpus():
    retriever = OverlapRetriever()
    retriever.index({"a": Document("a", "Cats purr softly."), "b": Document("b", "Dogs bark loudly at night.")})
    run = retriever.search({"q": "why do dogs bark", "none": "volcano"}, k=10)
    assert run.doc_ids("q") == ["b"]
    assert run.doc_ids("none") == []
    assert retriever.config() == {"lowercase": True}


def test_demo_task():
    run, dataset = demo_run(OverlapRetriever())
    result = harness.score(dataset.qrels["default"], run, ["nDCG@10", "Recall@100"])
    assert 0.3 < result.aggregate["nDCG@10"] <= 1.0


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert NAME in plugins[DIST]["components"]["retriever"]
    result = harness.evaluate("demo", retriever=NAME, metrics=["nDCG@10"], progress=False)
    run, dataset = demo_run(OverlapRetriever())
    direct = harness.score(dataset.qrels["default"], run, ["nDCG@10"]).aggregate["nDCG@10"]
    assert result.metrics["nDCG@10"] == pytest.approx(direct)
