"""BM25Okapi on a sparse index, with scores identical to ``rank_bm25.BM25Okapi.get_scores``.

At index time every (term, document) pair gets its BM25 weight
``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``, stored in a term-by-document CSR
matrix; a query's scores are the sum of its tokens' rows. The idf is rank_bm25's
``log((N - n + 0.5) / (n + 0.5))`` computed as ``log(N - n + 0.5) - log(n + 0.5)``, with negative
idfs replaced by ``epsilon * average_idf``. Each occurrence of a repeated query token counts;
unknown tokens add nothing. The arithmetic follows rank_bm25 operation for operation (same idf
summation order, same per-token accumulation order), so scores match it bit for bit in practice.
One deliberate difference: an empty document scores 0 where rank_bm25 gets 0/0 (NaN) with b=1.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.run import Run
from harness.retrievers.tokenize import Tokenizer


def _number(name: str, value: Any, low: float | None = None) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise HarnessError(f"bm25: {name} must be a number, not {value!r}") from None
    if not math.isfinite(out) or (low is not None and out < low):
        bound = f" >= {low}" if low is not None else ""
        raise HarnessError(f"bm25: {name} must be a finite number{bound}, not {value!r}")
    return out


class _Vocabulary(dict):
    """token -> id; looking up a new token assigns it the next id."""

    def __missing__(self, token: str) -> int:
        self[token] = n = len(self)
        return n


class BM25Retriever:
    """BM25Okapi first-stage retriever (rank_bm25's scoring) over ``doc.full_text()``.

    Parameters: ``k1`` (1.5), ``b`` (0.75), ``epsilon`` (0.25, the idf floor factor), and the
    tokenizer's ``stopwords`` ("none" | "english" | list of words) and ``stemmer`` ("none" |
    "porter"). The default analyzer (Lucene's 33 English stopwords + Porter stemming) is the one
    pyserini/BEIR BM25 use; ``stopwords=none,stemmer=none`` gives plain lowercase word tokens.
    Ties are broken as trec_eval does: higher doc id first.
    """

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        stopwords: str | Iterable[str] | None = "english",
        stemmer: str | None = "porter",
    ):
        self.k1 = _number("k1", k1, 0.0)
        self.b = _number("b", b, 0.0)
        if self.b > 1.0:
            raise HarnessError(f"bm25: b must be between 0 and 1, not {b!r}")
        self.epsilon = _number("epsilon", epsilon)
        self.tokenizer = Tokenizer(stopwords=stopwords, stemmer=stemmer)
        self._doc_ids: list[str] = []
        self._vocab: dict[str, int] = {}
        self._matrix: sp.csr_matrix | None = None
        self._idf = np.zeros(0)
        self._id_rank = np.zeros(0, dtype=np.int64)
        self.avgdl = 0.0
        self.average_idf = 0.0

    # -- configuration -------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """Parameters, for results.json."""
        return {"k1": self.k1, "b": self.b, "epsilon": self.epsilon, **self.tokenizer.config()}

    @property
    def doc_ids(self) -> list[str]:
        """Indexed doc ids, in index (score-vector) order."""
        return list(self._doc_ids)

    @property
    def matrix(self) -> sp.csr_matrix:
        """The term-by-document matrix of BM25 weights (rows: ``vocabulary`` ids)."""
        if self._matrix is None:
            raise HarnessError("bm25: index() a corpus before searching")
        return self._matrix

    @property
    def vocabulary(self) -> Mapping[str, int]:
        """Token -> row of :attr:`matrix`."""
        return self._vocab

    @property
    def idf(self) -> dict[str, float]:
        """Token -> idf after the epsilon floor (rank_bm25's ``BM25Okapi.idf``)."""
        return dict(zip(self._vocab, self._idf.tolist(), strict=True))

    # -- indexing ------------------------------------------------------------------------------

    def index(self, corpus: Mapping[str, Document]) -> None:
        """Tokenize ``doc.full_text()`` of every document and build the weight matrix."""
        if not corpus:
            raise HarnessError("bm25: the corpus is empty; there is nothing to index")
        tokenize = self.tokenizer
        vocab = _Vocabulary()
        lookup = vocab.__getitem__  # assigns the next id to a new token (first-occurrence order)
        term_ids = array("q")
        lens = array("q")
        for doc in corpus.values():
            toks = tokenize(doc.full_text())
            lens.append(len(toks))
            term_ids.extend(map(lookup, toks))
        self._build(list(map(str, corpus)), dict(vocab), np.frombuffer(term_ids, dtype=np.int64),
                    np.frombuffer(lens, dtype=np.int64))

    def _build(
        self, doc_ids: Sequence[str], vocab: dict[str, int], term_ids: np.ndarray, lens: np.ndarray
    ) -> None:
        """Build from tokens already mapped to ids: ``vocab`` token -> id assigned in order of first
        occurrence, ``term_ids`` all documents' token ids concatenated, ``lens`` tokens per doc."""
        n_docs, n_terms = len(doc_ids), len(vocab)
        total = int(lens.sum())
        if n_docs == 0:
            raise HarnessError("bm25: the corpus is empty; there is nothing to index")
        if total == 0:
            raise HarnessError(
                f"bm25: none of the {n_docs} documents has a token after tokenization "
                f"({self.tokenizer.config()}); there is nothing to index"
            )
        doc_len = lens.astype(np.int64, copy=False)
        index_dtype = np.int32 if max(n_docs, n_terms, total) < 2**31 else np.int64
        doc_ptr = np.zeros(n_docs + 1, dtype=index_dtype)
        np.cumsum(doc_len, out=doc_ptr[1:])
        terms = term_ids.astype(index_dtype)
        # Doc-by-term counts with repeated entries; CSC conversion (a linear counting sort) groups
        # them by term with doc ids ascending, and summing duplicates gives tf.
        counts = sp.csr_matrix(
            (np.ones(total, dtype=np.int64), terms, doc_ptr), shape=(n_docs, n_terms), copy=False
        ).tocsc()
        counts.sum_duplicates()
        indptr, cols, tf = counts.indptr, counts.indices, counts.data
        df = np.diff(indptr)
        rows = np.repeat(np.arange(n_terms, dtype=index_dtype), df)

        # rank_bm25's _calc_idf, same operations in the same (first-occurrence) order.
        idf = [0.0] * n_terms
        idf_sum = 0.0
        negative: list[int] = []
        for t, freq in enumerate(df.tolist()):
            v = math.log(n_docs - freq + 0.5) - math.log(freq + 0.5)
            idf[t] = v
            idf_sum += v
            if v < 0:
                negative.append(t)
        average_idf = idf_sum / n_terms
        eps = self.epsilon * average_idf
        for t in negative:
            idf[t] = eps
        idf_arr = np.asarray(idf, dtype=np.float64)

        # rank_bm25's get_scores term, element for element (the length norm computed once per doc).
        k1, b = self.k1, self.b
        avgdl = total / n_docs
        norm = k1 * (1 - b + b * doc_len / avgdl)
        weights = tf * (k1 + 1)
        weights /= tf + norm[cols]
        weights *= idf_arr[rows]

        self._matrix = sp.csr_matrix((weights, cols, indptr), shape=(n_terms, n_docs), copy=False)
        self._doc_ids = [str(d) for d in doc_ids]
        self._vocab = vocab
        self._idf = idf_arr
        self.avgdl = avgdl
        self.average_idf = average_idf
        # Tie-break key: rank of each doc id in string order (higher id wins a tie, as trec_eval).
        order = sorted(range(n_docs), key=self._doc_ids.__getitem__)
        self._id_rank = np.empty(n_docs, dtype=np.int64)
        self._id_rank[order] = np.arange(n_docs)

    # -- scoring -------------------------------------------------------------------------------

    def get_scores(self, tokens: Sequence[str]) -> np.ndarray:
        """Score of every indexed document (index order) for an already tokenized query; equal to
        ``rank_bm25.BM25Okapi(...).get_scores(tokens)``."""
        m = self.matrix
        data, indices, indptr = m.data, m.indices, m.indptr
        get = self._vocab.get
        rows = [t for t in map(get, tokens) if t is not None]
        if not rows:
            return np.zeros(m.shape[1], dtype=np.float64)
        spans = [slice(indptr[t], indptr[t + 1]) for t in rows]
        # bincount adds the weights in input order: token by token, as rank_bm25 accumulates.
        return np.bincount(
            np.concatenate([indices[s] for s in spans]),
            weights=np.concatenate([data[s] for s in spans]),
            minlength=m.shape[1],
        )

    def top_k(self, scores: np.ndarray, k: int) -> np.ndarray:
        """Indices of the ``k`` best documents, best first; ties: higher doc id first."""
        n = scores.shape[0]
        rank = self._id_rank
        if k >= n:
            cand = np.arange(n)
        else:
            kth = np.partition(scores, n - k)[n - k]
            cand = np.flatnonzero(scores >= kth)
            if cand.size > k:  # ties at the k-th score: keep the highest doc ids among them
                at = scores[cand]
                above, tied = cand[at > kth], cand[at == kth]
                need = k - above.size
                tied = tied[np.argpartition(-rank[tied], need - 1)[:need]]
                cand = np.concatenate([above, tied])
        order = np.lexsort((-rank[cand], -scores[cand]))
        return cand[order[:k]]

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top ``k`` documents per query. A query with no token (empty, or only stopwords) gets an
        empty list; otherwise all documents are ranked, as rank_bm25 does, so a query matching fewer
        than ``k`` documents is padded with zero-score ones. ``k`` beyond the corpus size: all."""
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise HarnessError(f"bm25: k must be a positive integer, not {k!r}")
        self.matrix  # noqa: B018 - raises if not indexed
        ids = self._doc_ids
        out: dict[str, list[tuple[str, float]]] = {}
        for qid, text in queries.items():
            tokens = self.tokenizer(text or "")
            if not tokens:
                out[qid] = []
                continue
            scores = self.get_scores(tokens)
            top = self.top_k(scores, int(k))
            out[qid] = list(zip([ids[i] for i in top.tolist()], scores[top].tolist(), strict=True))
        return Run(out, name="bm25")
