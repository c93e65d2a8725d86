"""BM25Retriever: scores identical to rank_bm25's BM25Okapi, tokenizer options, edge cases."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.run import Run
from harness.retrievers.bm25 import BM25Retriever
from harness.retrievers.tokenize import ENGLISH_STOPWORDS, Tokenizer

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("HARNESS_DATA", REPO.parent / "shared" / "data"))

SMALL = {
    "d1": Document("d1", "The quick brown fox jumps over the lazy dog.", title="Foxes"),
    "d2": Document("d2", "A quick brown dog outpaces a quick fox; the dog wins."),
    "d3": Document("d3", "Lazy dogs sleep all day. Dogs, dogs, dogs!"),
    "d4": Document("d4", "Über-schnelle Füchse springen über faule Hunde", title="Deutsch"),
    "d5": Document("d5", "the the the the of of and"),
    "d6": Document("d6", ""),
    "d7": Document("d7", "Running runners ran; the runner runs quickly."),
}
SMALL_QUERIES = {
    "q1": "quick fox",
    "q2": "lazy dog dog",  # repeated token counts twice
    "q3": "über füchse",
    "q4": "the",  # idf floored by epsilon
    "q5": "zebra quick",  # unknown token adds nothing
    "q6": "running runner",
    "q7": "zebra",  # only unknown tokens: every score 0
}


def reference(retriever: BM25Retriever, corpus: dict[str, Document]) -> BM25Okapi:
    tokenized = [retriever.tokenizer(d.full_text()) for d in corpus.values()]
    return BM25Okapi(tokenized, k1=retriever.k1, b=retriever.b, epsilon=retriever.epsilon)


def reference_top(scores: np.ndarray, ids: list[str], k: int) -> list[str]:
    """Score desc, then doc id desc (trec_eval's order), via Run.from_scores."""
    run = Run.from_scores({"q": dict(zip(ids, scores.tolist(), strict=True))})
    return run.doc_ids("q")[:k]


def assert_matches_reference(
    retriever: BM25Retriever, corpus: dict[str, Document], queries: dict[str, str], k: int = 10
) -> None:
    ref = reference(retriever, corpus)
    ids = list(corpus)
    assert retriever.doc_ids == ids
    assert retriever.average_idf == pytest.approx(ref.average_idf, rel=1e-12)
    assert retriever.avgdl == pytest.approx(ref.avgdl, rel=1e-12)
    idf = retriever.idf
    assert idf.keys() == ref.idf.keys()
    assert np.allclose([idf[t] for t in ref.idf], list(ref.idf.values()), rtol=1e-12, atol=0)
    run = retriever.search(queries, k)
    for qid, text in queries.items():
        tokens = retriever.tokenizer(text)
        if not tokens:  # by design: no ranking (rank_bm25 would score every document 0)
            assert run[qid] == []
            continue
        expected = ref.get_scores(tokens)
        got = retriever.get_scores(tokens)
        assert np.allclose(got, expected, rtol=1e-9, atol=1e-12), qid
        top = reference_top(expected, ids, k)
        assert run.doc_ids(qid) == top, qid
        got_scores = dict(run[qid])
        assert np.allclose([got_scores[d] for d in top], expected[[ids.index(d) for d in top]], rtol=1e-9)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"k1": 0.9, "b": 0.4},
        {"k1": 1.2, "b": 0.9, "epsilon": 0.5},
        {"b": 0.0},
        {"stopwords": "english", "stemmer": "porter"},
    ],
)
def test_small_corpus_matches_rank_bm25(params):
    r = BM25Retriever(**params)
    r.index(SMALL)
    assert_matches_reference(r, SMALL, SMALL_QUERIES, k=5)


def test_small_corpus_hand_checked():
    r = BM25Retriever()
    r.index(SMALL)
    run = r.search({"q": "quick fox"}, 3)
    assert run.doc_ids("q") == ["d2", "d1"] + run.doc_ids("q")[2:]
    scores = [s for _, s in run["q"]]
    assert scores == sorted(scores, reverse=True)
    # a query matching no document ranks everything at 0, highest doc id first (trec_eval tie-break)
    assert r.search({"q": "zebra"}, 3)["q"] == [("d7", 0.0), ("d6", 0.0), ("d5", 0.0)]


def test_b_one_without_empty_docs_matches_rank_bm25():
    corpus = {d: doc for d, doc in SMALL.items() if doc.full_text()}
    r = BM25Retriever(b=1.0, k1=2.0, stopwords="none", stemmer="none")
    r.index(corpus)
    assert_matches_reference(r, corpus, SMALL_QUERIES, k=5)


def test_empty_document_scores_zero():
    # rank_bm25 divides 0/0 for an empty document when b=1 (NaN); here it simply scores 0.
    r = BM25Retriever(b=1.0)
    r.index(SMALL)
    scores = r.get_scores(["quick"])
    assert np.isfinite(scores).all() and scores[r.doc_ids.index("d6")] == 0.0


def test_negative_idf_uses_epsilon_floor():
    corpus = {f"d{i}": Document(f"d{i}", "common word" + (" rare" if i == 0 else "")) for i in range(5)}
    r = BM25Retriever(epsilon=0.25)
    r.index(corpus)
    ref = reference(r, corpus)
    assert r.idf["common"] == pytest.approx(ref.idf["common"], rel=1e-12)
    assert r.idf["common"] == pytest.approx(0.25 * ref.average_idf, rel=1e-12)
    assert_matches_reference(r, corpus, {"a": "common", "b": "rare common", "c": "word word rare"})


def _load_noveleval() -> tuple[dict[str, Document], dict[str, str]]:
    folder = DATA / "noveleval"
    if not (folder / "corpus.tsv").is_file():
        pytest.skip(f"NovelEval data not found at {folder} (set HARNESS_DATA to the shared data folder)")
    corpus: dict[str, Document] = {}
    for line in (folder / "corpus.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip():
            doc_id, text = line.split("\t", 1)
            corpus[doc_id] = Document(doc_id, text)
    queries: dict[str, str] = {}
    for line in (folder / "queries.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip():
            qid, text = line.split("\t", 1)
            queries[qid] = text
    return corpus, queries


@pytest.mark.parametrize("params", [{}, {"stopwords": "english", "stemmer": "porter"}, {"k1": 0.9, "b": 0.4}])
def test_noveleval_matches_rank_bm25(params):
    corpus, queries = _load_noveleval()
    assert len(corpus) == 420 and len(queries) == 21
    r = BM25Retriever(**params)
    r.index(corpus)
    assert_matches_reference(r, corpus, queries, k=10)


def test_tokenizer_default():
    tok = Tokenizer()
    assert tok("The Quick, brown FOX's café-au-lait 42x ÜBER") == [
        "the", "quick", "brown", "fox", "s", "café", "au", "lait", "42x", "über",
    ]  # fmt: skip
    assert tok("") == [] and tok("  ,;!  ") == []
    assert tok.config() == {"tokenizer": r"lowercase \w+", "stopwords": "none", "stemmer": "none"}


def test_tokenizer_options():
    assert len(ENGLISH_STOPWORDS) == 33
    text = "The runners are running into the woods"
    assert Tokenizer(stopwords="english")(text) == ["runners", "running", "woods"]
    pytest.importorskip("Stemmer", reason="PyStemmer not installed")
    porter = Tokenizer(stopwords="english", stemmer="porter")
    assert porter(text) == ["runner", "run", "wood"]
    assert porter.config() == {"tokenizer": r"lowercase \w+", "stopwords": "english", "stemmer": "porter"}
    assert Tokenizer(stopwords=["Woods", "the"])(text) == ["runners", "are", "running", "into"]
    assert Tokenizer(stopwords="none", stemmer=None)(text)[0] == "the"


def test_tokenizer_bad_options():
    with pytest.raises(HarnessError, match="stopwords"):
        Tokenizer(stopwords="klingon")
    with pytest.raises(HarnessError, match="stemmer"):
        Tokenizer(stemmer="lancaster")


def test_missing_stemmer_package_names_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name in ("Stemmer", "snowballstemmer"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(HarnessError, match="pip install PyStemmer"):
        BM25Retriever(stemmer="porter")


def test_config_records_parameters():
    r = BM25Retriever(k1=0.9, b=0.4, stopwords="english", stemmer="none")
    assert r.config() == {
        "k1": 0.9, "b": 0.4, "epsilon": 0.25,
        "tokenizer": r"lowercase \w+", "stopwords": "english", "stemmer": "none",
    }  # fmt: skip
    assert BM25Retriever(k1="1.2").k1 == 1.2  # spec values may arrive as strings


@pytest.mark.parametrize("params", [{"k1": "x"}, {"k1": -1}, {"b": 1.5}, {"epsilon": float("nan")}])
def test_bad_parameters(params):
    with pytest.raises(HarnessError):
        BM25Retriever(**params)


def test_k_larger_than_corpus_returns_all_docs():
    r = BM25Retriever()
    r.index(SMALL)
    run = r.search({"q": "quick fox"}, 1000)
    assert sorted(run.doc_ids("q")) == sorted(SMALL)
    ref = reference(r, SMALL)
    assert run.doc_ids("q") == reference_top(ref.get_scores(["quick", "fox"]), list(SMALL), 1000)


def test_empty_query_gets_empty_ranking():
    r = BM25Retriever(stopwords="english", stemmer="none")
    r.index(SMALL)
    run = r.search({"empty": "", "blank": "   ", "stop": "the of and", "ok": "dog"}, 10)
    assert run["empty"] == [] and run["blank"] == [] and run["stop"] == []
    assert run.doc_ids("ok")[:2] == ["d2", "d1"]


def test_empty_corpus_is_an_error():
    with pytest.raises(HarnessError, match="empty"):
        BM25Retriever().index({})
    with pytest.raises(HarnessError, match="no(ne of the)? .*token"):
        BM25Retriever(stopwords="english").index({"a": Document("a", "the of"), "b": Document("b", "")})


def test_search_before_index_and_bad_k():
    r = BM25Retriever()
    with pytest.raises(HarnessError, match="index"):
        r.search({"q": "x"}, 10)
    r.index(SMALL)
    for k in (0, -3, 2.5):
        with pytest.raises(HarnessError, match="k must be"):
            r.search({"q": "fox"}, k)


def test_ties_broken_by_doc_id_descending():
    corpus = {d: Document(d, "same text here") for d in ["b", "a", "c", "a10", "a9"]}
    corpus.update({f"z{i}": Document(f"z{i}", f"other words {i}") for i in range(6)})
    r = BM25Retriever()
    r.index(corpus)
    run = r.search({"q": "same"}, 3)
    assert run.doc_ids("q") == ["c", "b", "a9"]
    assert r.search({"q": "same"}, 7).doc_ids("q") == ["c", "b", "a9", "a10", "a", "z5", "z4"]


def test_title_is_indexed():
    r = BM25Retriever()
    r.index({d: Document(d, "body", title="Heading" if d == "x" else "") for d in ["w", "x", "y", "z"]})
    assert r.search({"q": "heading"}, 1).doc_ids("q") == ["x"]


def test_registered_as_bm25_spec_args():
    from harness.components.lazy import lazy

    r = lazy("harness.retrievers.bm25:BM25Retriever")(k1=0.9, b=0.4)
    assert isinstance(r, BM25Retriever) and r.config()["k1"] == 0.9


def test_import_does_not_pull_torch():
    import subprocess
    import sys

    code = "import sys, harness.retrievers.bm25; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
