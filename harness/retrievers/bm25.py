"""BM25Okapi on a sparse index, with scores identical to ``rank_bm25.BM25Okapi.get_scores``.

At index time every (term, document) pair gets its BM25 weight
``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``, stored term by term (a CSR matrix
of terms by documents); a query's scores are the sum of its tokens' rows. The idf is rank_bm25's
``log((N - n + 0.5) / (n + 0.5))`` computed as ``log(N - n + 0.5) - log(n + 0.5)``, with negative
idfs replaced by ``epsilon * average_idf``. Each occurrence of a repeated query token counts;
unknown tokens add nothing. The arithmetic follows rank_bm25 operation for operation (same idf
summation order, same per-token accumulation order), so scores match it bit for bit in practice.
One deliberate difference: an empty document scores 0 where rank_bm25 gets 0/0 (NaN) with b=1.

The top k come from the documents the query touches (:mod:`harness.retrievers.bm25_topk`), not from
a partition of every score. ``index=FOLDER`` searches an index saved by ``harness index build -r
bm25`` (:mod:`harness.retrievers.bm25_index`), memory-mapped, instead of tokenizing the corpus.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.run import Run
from harness.retrievers import bm25_index as disk
from harness.retrievers.bm25_postings import build_postings
from harness.retrievers.bm25_topk import hits, top_k_full, top_k_touched
from harness.retrievers.tokenize import Tokenizer

#: postings a query term needs before its largest weight is looked up to set it aside in selection
SKIP_MIN = 256

#: the parameters' defaults (with ``index=``, a parameter left at its default takes the index's value)
DEFAULTS: Mapping[str, Any] = MappingProxyType({"k1": 1.5, "b": 0.75, "epsilon": 0.25, "stopwords": "english",
                                                "stemmer": "porter"})


def _number(name: str, value: Any, low: float | None = None) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise HarnessError(f"bm25: {name} must be a number, not {value!r}") from None
    if not math.isfinite(out) or (low is not None and out < low):
        bound = f" >= {low}" if low is not None else ""
        raise HarnessError(f"bm25: {name} must be a finite number{bound}, not {value!r}")
    return out


class BM25Retriever:
    """BM25Okapi first-stage retriever (rank_bm25's scoring) over ``doc.full_text()``.

    Parameters: ``k1`` (1.5), ``b`` (0.75), ``epsilon`` (0.25, the idf floor factor), and the
    tokenizer's ``stopwords`` ("none" | "english" | list of words) and ``stemmer`` ("none" |
    "porter"). The default analyzer (Lucene's 33 English stopwords + Porter stemming) is the one
    pyserini/BEIR BM25 use; ``stopwords=none,stemmer=none`` gives plain lowercase word tokens.
    Ties are broken as trec_eval does: higher doc id first.

    ``index=FOLDER`` searches an index built by ``harness index build -r bm25``: the parameters come
    from its manifest (one given that differs from it is an error; the manifest's fields must match
    the digest its build recorded), every file's sha256 is checked against the manifest before the
    first search (``verify=false`` skips that, at the risk of a wrong figure from a changed file), and
    :meth:`index` only checks that the corpus is the one the index was built from.
    """

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        stopwords: str | Iterable[str] | None = "english",
        stemmer: str | None = "porter",
        index: str | None = None,
        verify: bool | None = None,
    ):
        self._store: disk.BM25Index | None = None
        if index is None and verify is not None:
            raise HarnessError("bm25: verify= applies to an index (bm25:index=FOLDER,verify=false)")
        if verify is not None and not isinstance(verify, bool):
            raise HarnessError(f"bm25: verify must be true or false, not {verify!r}")
        if index is not None:
            self._store = disk.open_index(index, verify=verify is not False)
            k1, b, epsilon, stopwords, stemmer = _from_manifest(
                self._store.manifest, {"k1": k1, "b": b, "epsilon": epsilon, "stopwords": stopwords,
                                       "stemmer": stemmer})
        self.k1 = _number("k1", k1, 0.0)
        self.b = _number("b", b, 0.0)
        if self.b > 1.0:
            raise HarnessError(f"bm25: b must be between 0 and 1, not {b!r}")
        self.epsilon = _number("epsilon", epsilon)
        self.tokenizer = Tokenizer(stopwords=stopwords, stemmer=stemmer)
        self._doc_ids: list[str] = []
        self._vocab: dict[str, int] = {}
        self._arrays: dict[str, np.ndarray] = {}
        self._nonnegative = False
        self._by_rank_desc: np.ndarray | None = None
        self._matrix: Any = None
        self._max_weight: dict[int, float] = {}  # term id -> its largest weight, filled as queries ask
        self.avgdl = 0.0
        self.average_idf = 0.0
        self._postings: Any = None
        if self._store is not None:
            self._attach_store(self._store)

    def _attach_store(self, store: disk.BM25Index) -> None:
        m = store.manifest
        self._doc_ids = store.ids
        self._vocab = {t: i for i, t in enumerate(store.terms)}
        self._arrays = {name: getattr(store, name).view(np.ndarray) for name in disk.ARRAYS}
        self._nonnegative = store.nonnegative
        self._max_weight = {}
        self.avgdl, self.average_idf = float(m["avgdl"]), float(m["average_idf"])

    # -- configuration -------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """Parameters, for results.json."""
        out = {"k1": self.k1, "b": self.b, "epsilon": self.epsilon, **self.tokenizer.config()}
        if self._store is not None:
            m = self._store.manifest
            out["index"] = {"folder": str(self._store.folder), "corpus_sha256": m["corpus_sha256"],
                            "documents": m["documents"], "source": m["source"],
                            "manifest_sha256": m[disk.MANIFEST_DIGEST], "files_verified": self._store.verified}
        return out

    @property
    def doc_ids(self) -> list[str]:
        """Indexed doc ids, in index (score-vector) order."""
        return list(self._doc_ids)

    def _need(self) -> dict[str, np.ndarray]:
        if not self._arrays:
            raise HarnessError("bm25: index() a corpus before searching")
        return self._arrays

    @property
    def matrix(self) -> Any:
        """The term-by-document ``scipy.sparse.csr_matrix`` of BM25 weights (rows: ``vocabulary`` ids)."""
        a = self._need()
        if self._matrix is None:
            import scipy.sparse as sp

            self._matrix = sp.csr_matrix((a["weights"], a["docs"], a["offsets"]),
                                         shape=(a["offsets"].size - 1, a["rank"].size), copy=False)
        return self._matrix

    @property
    def vocabulary(self) -> Mapping[str, int]:
        """Token -> row of :attr:`matrix`."""
        return self._vocab

    @property
    def idf(self) -> dict[str, float]:
        """Token -> idf after the epsilon floor (rank_bm25's ``BM25Okapi.idf``)."""
        return dict(zip(self._vocab, self._arrays["idf"].tolist(), strict=True)) if self._arrays else {}

    # -- indexing ------------------------------------------------------------------------------

    def index(self, corpus: Mapping[str, Document]) -> None:
        """Tokenize ``doc.full_text()`` of every document and compute the weights; with ``index=``,
        check that ``corpus`` is the one the index was built from instead."""
        if self._store is not None:
            _check_corpus(self._store, corpus)
            return
        if not corpus:
            raise HarnessError("bm25: the corpus is empty; there is nothing to index")
        p = build_postings((doc.full_text() for doc in corpus.values()), self.tokenizer,
                           self.k1, self.b, self.epsilon)
        ids = [str(d) for d in corpus]
        order = sorted(range(len(ids)), key=ids.__getitem__)
        rank = np.empty(len(ids), dtype=np.int32)
        rank[order] = np.arange(len(ids), dtype=np.int32)
        self._doc_ids = ids
        self._vocab = {t: i for i, t in enumerate(p.terms)}
        self._arrays = {"weights": p.weights, "docs": p.docs, "offsets": p.offsets, "idf": p.idf, "rank": rank}
        self._nonnegative = not p.weights.size or float(p.weights.min()) >= 0.0
        self._by_rank_desc = self._matrix = None
        self._max_weight = {}
        self.avgdl, self.average_idf = p.avgdl, p.average_idf
        self._postings = (p.terms, corpus)

    def save(self, folder: str | Path, *, source: Mapping[str, Any] | None = None,
             overwrite: bool = False) -> dict[str, Any]:
        """Write the index built by :meth:`index` to ``folder`` (see :mod:`harness.retrievers.bm25_index`);
        returns the manifest."""
        if self._postings is None:
            raise HarnessError("bm25: index() a corpus before saving its index")
        terms, corpus = self._postings
        a = self._arrays
        manifest = {**self.config(), "documents": len(self._doc_ids), "terms": len(terms),
                    "postings": int(a["weights"].size), "avgdl": self.avgdl, "average_idf": self.average_idf,
                    "min_weight": float(a["weights"].min()) if a["weights"].size else 0.0,
                    "ids_sha256": disk.ids_digest(self._doc_ids),
                    "corpus_sha256": disk.corpus_digest(corpus.keys(), (d.full_text() for d in corpus.values())),
                    "source": dict(source or {})}
        return disk.write_index(folder, a, self._doc_ids, terms, manifest, overwrite=overwrite)

    # -- scoring -------------------------------------------------------------------------------

    def _rows(self, tokens: Sequence[str]) -> list[int]:
        get = self._vocab.get
        return [t for t in map(get, tokens) if t is not None]

    def get_scores(self, tokens: Sequence[str]) -> np.ndarray:
        """Score of every indexed document (index order) for an already tokenized query; equal to
        ``rank_bm25.BM25Okapi(...).get_scores(tokens)``."""
        a = self._need()
        scores = np.zeros(a["rank"].size, dtype=np.float64)
        self._accumulate(scores, self._rows(tokens))
        return scores

    def _accumulate(self, scores: np.ndarray, rows: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Add each token's row to ``scores``, token by token as rank_bm25 does; the rows' (documents,
        weights), a repeated token's the same arrays."""
        a = self._arrays
        weights, docs, offsets = a["weights"], a["docs"], a["offsets"]
        posts = []
        seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        add = np.add.at  # unbuffered, in order: the same additions as rank_bm25's, and no index cast
        for t in rows:
            row = seen.get(t)
            if row is None:
                lo, hi = offsets[t : t + 2].tolist()
                row = seen[t] = (docs[lo:hi], weights[lo:hi])
            add(scores, *row)
            posts.append(row)
        return posts

    def _maxima(self, rows: list[int], posts: list[tuple[np.ndarray, np.ndarray]]) -> list[float]:
        """Each row's largest weight, remembered per term; ``inf`` for a row too short to be worth
        setting aside (:func:`~harness.retrievers.bm25_topk.essential`)."""
        known = self._max_weight
        out = []
        for t, (docs, weights) in zip(rows, posts, strict=True):
            m = known.get(t) if docs.size >= SKIP_MIN else math.inf
            if m is None:
                m = known[t] = float(weights.max())
            out.append(m)
        return out

    def _order_desc(self) -> np.ndarray:
        """Document numbers by doc id, highest first."""
        if self._by_rank_desc is None:
            rank = self._arrays["rank"]
            out = np.empty(rank.size, dtype=np.int64)
            out[rank.size - 1 - rank.astype(np.int64)] = np.arange(rank.size)
            self._by_rank_desc = out
        return self._by_rank_desc

    def top_k(self, scores: np.ndarray, k: int) -> np.ndarray:
        """Indices of the ``k`` best documents, best first; ties: higher doc id first (one partition of
        the whole vector; :meth:`search` selects among the documents a query touches instead)."""
        return top_k_full(scores, k, self._need()["rank"])

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top ``k`` documents per query. A query with no token (empty, or only stopwords) gets an
        empty list; otherwise all documents are ranked, as rank_bm25 does, so a query matching fewer
        than ``k`` documents is padded with zero-score ones. ``k`` beyond the corpus size: all."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise HarnessError(f"bm25: k must be a positive integer, not {k!r}")
        a = self._need()
        rank, n, k = a["rank"], a["rank"].size, int(k)
        by_rank_desc = self._order_desc()
        ids = self._doc_ids
        scores = np.zeros(n, dtype=np.float64)  # shared by the queries, reset after each but the last
        out: dict[str, list[tuple[str, float]]] = {}
        last = len(queries) - 1
        for i, (qid, text) in enumerate(queries.items()):
            tokens = self.tokenizer(text or "")
            if not tokens:
                out[qid] = []
                continue
            rows = self._rows(tokens)
            posts = self._accumulate(scores, rows)
            lists = [d for d, _ in posts]
            if self._nonnegative:
                top, vals = top_k_touched(scores, k, rank, lists, self._maxima(rows, posts), by_rank_desc)
            else:
                top, vals = hits(top_k_full(scores, k, rank), scores)
            out[qid] = list(zip([ids[d] for d in top], vals, strict=True))
            if i < last:
                _reset(scores, lists)
        return Run(out, name="bm25")


def _reset(scores: np.ndarray, lists: list[np.ndarray]) -> None:
    """Zero what a query added to ``scores``: the touched entries, or the whole vector when they are many."""
    if sum(d.size for d in lists) > scores.shape[0] // 8:
        scores.fill(0.0)
    else:
        for d in lists:
            scores[d] = 0.0


def build_index(retriever: BM25Retriever, corpus: Mapping[str, Document], folder: str | Path, *,
                source: Mapping[str, Any] | None = None, overwrite: bool = False) -> disk.BuildReport:
    """Tokenize and weight ``corpus`` once with ``retriever``'s parameters and save the index to
    ``folder`` (``harness index build -r bm25``); search it with ``bm25:index=FOLDER``."""
    if retriever._store is not None:
        raise HarnessError("bm25:index=... searches an index; build one with bm25 or bm25:k1=...,b=...")
    folder = Path(folder).expanduser()
    disk.prepare_folder(folder, overwrite)  # before the work: a folder holding an index is refused
    t = time.perf_counter()
    retriever.index(corpus)
    t_index = time.perf_counter() - t
    t = time.perf_counter()
    m = retriever.save(folder, source=source, overwrite=True)
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    return disk.BuildReport(str(folder), m["documents"], m["terms"], m["postings"], t_index,
                            time.perf_counter() - t, size)


def _from_manifest(m: Mapping[str, Any], given: Mapping[str, Any]) -> tuple[Any, ...]:
    """The index's parameters; a given one that is not its default and differs is an error."""
    if m["tokenizer"] != r"lowercase \w+":
        raise HarnessError(f"bm25 index: unknown tokenizer {m['tokenizer']!r}")
    differ = [f"{key}={value!r} (the index has {m[key]!r})" for key, value in given.items()
              if value != DEFAULTS[key] and _recorded(key, value) != m[key]]
    if differ:
        raise HarnessError(f"bm25: the index was built with other parameters: {', '.join(differ)}; rebuild it "
                           f"or drop them")
    return m["k1"], m["b"], m["epsilon"], m["stopwords"], m["stemmer"]


def _recorded(key: str, value: Any) -> Any:
    """A parameter as the manifest records it."""
    if key in ("stopwords", "stemmer"):
        return Tokenizer(**{key: value}).config()[key]
    return _number(key, value)


def _check_corpus(store: disk.BM25Index, corpus: Mapping[str, Document]) -> None:
    m, folder = store.manifest, store.folder
    ids = [str(d) for d in corpus]
    if len(ids) != m["documents"] or disk.ids_digest(ids) != m["ids_sha256"]:
        raise HarnessError(f"bm25: {folder} was built from another corpus ({m['documents']} documents; this one "
                           f"has {len(ids)}, or other ids); rebuild it with `harness index build -r bm25`")
    digest = disk.corpus_digest(ids, (d.full_text() for d in corpus.values()))
    if digest != m["corpus_sha256"]:
        raise HarnessError(f"bm25: {folder} was built from other texts of these documents (corpus sha256 "
                           f"differs); rebuild it with `harness index build -r bm25`")
