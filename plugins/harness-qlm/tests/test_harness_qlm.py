"""harness-qlm: registration, the scoring formula, options, and the packaged `demo` task (the
figures in README.md), plus SciFact when the shared benchmark data is present."""

import math
import os
from importlib import metadata

import harness
import pytest
from harness import Document, HarnessError, format_query
from harness.testing import require_data

import harness_qlm
from harness_qlm.retriever import QueryLikelihood

# measured on the packaged demo task (README.md): nDCG@10, MRR@10, Recall@10
DEMO_QLM = {"nDCG@10": 0.7288, "MRR@10": 0.8417, "Recall@10": 0.7817}
DEMO_BM25 = {"nDCG@10": 0.7491, "MRR@10": 0.8500, "Recall@10": 0.8267}
SCIFACT_QLM_NDCG10 = 0.6717


def registered(hook):
    """What one of the plugin's hooks registers: ``{name: (factory, description)}``."""
    found = {}
    hook(register=lambda name, factory, description="": found.setdefault(name, (factory, description)))
    return found


def installed():
    """Whether this distribution is installed (``pip install -e .``), so its entry point is seen."""
    try:
        metadata.distribution("harness-qlm")
    except metadata.PackageNotFoundError:
        return False
    return True


needs_install = pytest.mark.skipif(not installed(), reason="pip install -e . to test through the entry point")


def task_run(retriever, task_name="demo"):
    """Index a task's corpus and search its queries as the task forms them."""
    task = harness.load_task(task_name)
    dataset = harness.load_dataset(task_name)
    (mode,) = dataset.modes
    queries = {qid: format_query(q, task.query_format) for qid, q in dataset.queries[mode].items()}
    retriever.index(dataset.corpus)
    return retriever.search(queries, k=task.depth), dataset.qrels[mode]


def test_registers_the_retriever():
    factory, description = registered(harness_qlm.register_retrievers)["qlm"]
    assert "Dirichlet" in description
    assert factory(mu=100).mu == 100.0


def test_scores_are_the_dirichlet_smoothed_query_log_likelihood():
    corpus = {"a": Document("a", "cat cat dog"), "b": Document("b", "dog bird"), "c": Document("c", "fish")}
    mu = 10.0
    run = QueryLikelihood(mu=mu, stopwords="none", stemmer="none")
    run.index(corpus)
    total, cf = 6, {"cat": 2, "dog": 2, "bird": 1, "fish": 1}
    counts = {"a": {"cat": 2, "dog": 1}, "b": {"dog": 1, "bird": 1}}
    lengths = {"a": 3, "b": 2}

    def log_p(query, d):
        return sum(math.log((counts[d].get(w, 0) + mu * cf[w] / total) / (lengths[d] + mu)) for w in query)

    got = dict(run.search({"q": "cat dog dog unicorn"}, k=10)["q"])  # "unicorn": unseen, left out
    assert set(got) == {"a", "b"}  # "c" holds no query term
    for d in got:
        assert got[d] == pytest.approx(log_p(["cat", "dog", "dog"], d), abs=1e-12)
    assert run.search({"q": "unicorn", "s": ""}, k=10).doc_ids("q") == []


def test_term_frequency_length_and_ties():
    corpus = {"long": Document("long", "apple pear plum fig kiwi"), "short": Document("short", "apple pear"),
              "twice": Document("twice", "apple apple pear plum fig"), "same": Document("same", "apple pear")}
    run = QueryLikelihood(mu=5, stopwords="none", stemmer="none")
    run.index(corpus)
    ranked = run.search({"q": "apple"}, k=10).doc_ids("q")
    assert ranked.index("twice") < ranked.index("long")  # same length, more occurrences
    assert ranked.index("short") < ranked.index("long")  # same count, shorter document
    assert ranked.index("short") + 1 == ranked.index("same")  # a tie keeps corpus order
    assert run.search({"q": "apple"}, k=2).doc_ids("q") == ranked[:2]
    assert run.search({"q": "apple"}, k=0).doc_ids("q") == []


def test_tokenizer_options():
    corpus = {"d": Document("d", "The running of the dogs")}
    stemmed = QueryLikelihood()
    stemmed.index(corpus)
    assert stemmed.search({"q": "dog runs"}, 5).doc_ids("q") == ["d"]
    assert stemmed.search({"q": "the of"}, 5).doc_ids("q") == []  # stopwords only
    plain = QueryLikelihood(stopwords="none", stemmer="none")
    plain.index(corpus)
    assert plain.search({"q": "dog runs"}, 5).doc_ids("q") == []
    assert plain.config()["stemmer"] == "none" and stemmed.config()["mu"] == 2000.0
    assert stemmed.stats() == {"documents": 1, "vocabulary": 2, "tokens": 2}


@pytest.mark.parametrize("options", [{"mu": 0}, {"mu": -5}, {"mu": "x"}, {"mu": float("nan")},
                                     {"stemmer": "krovetz"}, {"stopwords": "french"}])
def test_bad_options_are_errors(options):
    with pytest.raises(HarnessError, match="qlm"):
        QueryLikelihood(**options)


def test_demo_task_figures():
    """The README's table: qlm measured here, bm25 (the core's default) through the public API."""
    run, qrels = task_run(QueryLikelihood())
    qlm = harness.score(qrels, run, list(DEMO_QLM)).aggregate
    assert qlm == pytest.approx(DEMO_QLM, abs=5e-5)
    bm25 = harness.evaluate("demo", metrics=list(DEMO_BM25), progress=False).metrics
    assert bm25 == pytest.approx(DEMO_BM25, abs=5e-5)


def test_scifact_figure():
    task = harness.load_task("scifact")
    require_data(os.environ.get("HARNESS_DATA", "/nonexistent"), *(f.path for f in task.files), fetch="scifact")
    run, qrels = task_run(QueryLikelihood(), "scifact")
    ndcg = harness.score(qrels, run, ["nDCG@10"]).aggregate["nDCG@10"]
    assert ndcg == pytest.approx(SCIFACT_QLM_NDCG10, abs=5e-5)


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert plugins["harness-qlm"]["components"] == {"retriever": ["qlm"]}
    result = harness.evaluate("demo", retriever="qlm:mu=2000", metrics=["nDCG@10"], progress=False)
    assert result.metrics["nDCG@10"] == pytest.approx(DEMO_QLM["nDCG@10"], abs=5e-5)
    assert result.components["retriever"]["mu"] == 2000.0
