"""BM25 top k from the essential postings (issue 31): the documents that can reach the threshold are
looked for only in the postings of the terms that can lift a document to it, the threshold comes
from the rarest postings without ``np.unique``, and small candidate sets are ranked in Python.

Checked against independent computations: rank_bm25's score vector ranked by ``Run.from_scores``
(score desc, then doc id desc), bit for bit, on a corpus where common terms' postings are long enough
to be set aside (a spy on :func:`~harness.retrievers.bm25_topk.essential` shows which path each query
took); the pruning guarantee and the threshold's bound against the dense score vector.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from harness.concepts.document import Document
from harness.concepts.run import Run
from harness.retrievers import bm25_topk
from harness.retrievers.bm25 import SKIP_MIN, BM25Retriever

N_DOCS = 3000


def zipf_corpus(seed: int) -> dict[str, Document]:
    """Zipf-distributed words (w0 in most documents, w500 in a handful); ids in shuffled order."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(600)]
    weights = [1.0 / (i + 2) ** 1.05 for i in range(len(words))]
    ids = rng.sample(range(10 * N_DOCS), N_DOCS)
    return {f"d{i}": Document(f"d{i}", " ".join(rng.choices(words, weights, k=rng.randint(3, 40)))) for i in ids}


def mixed_queries(seed: int, n: int) -> dict[str, str]:
    """Common words with rarer ones, some repeated, some unknown; a few of common words only."""
    rng = random.Random(seed + 7)
    out = {}
    for i in range(n):
        common = [f"w{rng.randrange(8)}" for _ in range(rng.randint(1, 4))]
        rare = [f"w{rng.randrange(20, 600)}" for _ in range(rng.randint(0 if i % 5 == 0 else 1, 3))]
        extra = ["zzz"] if i % 7 == 0 else []
        toks = common + rare + extra + (common[:1] if i % 3 == 0 else [])
        rng.shuffle(toks)
        out[f"q{i}"] = " ".join(toks)
    return out


def reference_runs(r: BM25Retriever, corpus: dict[str, Document], queries: dict[str, str], k: int):
    """rank_bm25's scores, ranked by Run.from_scores, cut at k; and the score vectors."""
    ref = BM25Okapi([r.tokenizer(d.full_text()) for d in corpus.values()], k1=r.k1, b=r.b, epsilon=r.epsilon)
    runs, vectors = {}, {}
    for qid, text in queries.items():
        vectors[qid] = ref.get_scores(r.tokenizer(text))
        runs[qid] = Run.from_scores({qid: dict(zip(corpus, vectors[qid].tolist(), strict=True))})[qid][:k]
    return runs, vectors


@pytest.fixture(scope="module")
def indexed():
    corpus = zipf_corpus(1)
    r = BM25Retriever(stopwords="none", stemmer="none")
    r.index(corpus)
    return r, corpus


@pytest.mark.parametrize("k", [1, 10, 100])
def test_search_equals_rank_bm25_bit_for_bit_with_long_postings_set_aside(indexed, monkeypatch, k):
    r, corpus = indexed
    queries = mixed_queries(k, 60)
    paths: list[str] = []
    real_essential = bm25_topk.essential

    def essential_spy(lists, maxima, bound):
        out = real_essential(lists, maxima, bound)
        scanned = sum(d.size for d in out)
        touched = sum(d.size for d in {id(d): d for d in lists}.values())
        paths.append("essential" if scanned <= N_DOCS // 4 and scanned < touched else "scan")
        return out

    monkeypatch.setattr(bm25_topk, "essential", essential_spy)
    run = r.search(queries, k)
    expected, _ = reference_runs(r, corpus, queries, k)
    for qid in queries:
        assert run[qid] == expected[qid], qid  # ids, order and scores bit for bit
    # the paths under test were taken: with k <= 10 most queries found their candidates in a small part
    # of the postings they touched; with k = 100 the bound is low and most scanned the score vector
    if k <= 10:
        assert paths.count("essential") >= 40, paths
    else:
        assert paths.count("scan") >= 40 and "essential" in paths, paths
    one_by_one = {qid: r.search({qid: text}, k)[qid] for qid, text in queries.items()}
    assert one_by_one == {qid: run[qid] for qid in queries}  # the shared score vector is reset between queries


def test_essential_postings_hold_every_document_at_or_above_the_bound(indexed):
    r, corpus = indexed
    queries = mixed_queries(3, 80)
    _, vectors = reference_runs(r, corpus, queries, 10)
    ids = r.doc_ids
    order = [ids.index(d) for d in corpus]  # rank_bm25's vector is in corpus order, like the index's
    assert order == list(range(len(ids)))
    a = r._arrays
    pruned = 0
    for qid, text in queries.items():
        rows = r._rows(r.tokenizer(text))
        if not rows:
            continue
        scores = np.zeros(len(ids))
        posts = r._accumulate(scores, rows)
        assert np.array_equal(scores, vectors[qid])
        lists = [d for d, _ in posts]
        maxima = r._maxima(rows, posts)
        for (docs, weights), m in zip(posts, maxima, strict=True):
            assert m == (float(weights.max()) if docs.size >= SKIP_MIN else float("inf"))
        for bound in {float(x) for x in np.sort(scores)[::-1][[0, 4, 9, 49, 199]] if x > 0}:
            scan = bm25_topk.essential(lists, maxima, bound)
            found = set(np.concatenate(scan).tolist())
            assert set(np.flatnonzero(scores >= bound).tolist()) <= found, (qid, bound)
            pruned += len(found) < len(set(np.concatenate(lists).tolist()))
    assert pruned > 50
    assert int(a["offsets"][1] - a["offsets"][0]) >= SKIP_MIN  # w0's postings are long enough to set aside


@pytest.mark.parametrize("seed", range(20))
def test_threshold_is_a_lower_bound_on_the_kth_best_distinct_score(seed):
    rng = np.random.default_rng(seed)
    n = 500
    scores = np.round(rng.random(n) * 5, 1)  # many ties
    lists = [np.sort(rng.choice(n, size=int(rng.integers(1, 60)), replace=False))
             for _ in range(int(rng.integers(1, 6)))]
    lists.sort(key=len)
    for k in (1, 5, 10, 30):
        bound = bm25_topk.threshold(scores, lists, k)
        union = np.unique(np.concatenate(lists))
        if bound is None:
            continue
        kth = np.sort(scores[union])[::-1][k - 1]  # the k-th best among the distinct documents
        assert bound <= kth, (seed, k)


def test_a_query_of_common_words_only_and_k_beyond_the_positive_scores(indexed):
    r, corpus = indexed
    queries = {"common": "w0 w1 w0", "rare": "w599", "none": "zzz"}
    for k in (5, 50, N_DOCS + 10):
        run = r.search(queries, k)
        expected, _ = reference_runs(r, corpus, queries, k)
        assert all(run[q] == expected[q] for q in queries)
