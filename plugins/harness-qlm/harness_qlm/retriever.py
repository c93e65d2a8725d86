"""The `qlm` retriever: query likelihood with Dirichlet smoothing (Zhai & Lafferty, SIGIR 2001),
written on the public harness surface with numpy only (no core internals).

A document's score is the log-probability of the query under the document's language model,
smoothed with the collection's:

    log p(q | d) = sum over query terms w of  c(w, q) * log( (c(w, d) + mu * p(w | C)) / (|d| + mu) )

``p(w | C)`` is the term's share of all tokens in the corpus. Query terms that occur nowhere in the
corpus are left out (their probability is 0 under every document, so they cannot change the
ranking). Only documents that contain at least one query term are returned, as Lucene's
``LMDirichletSimilarity`` (Anserini's ``-qld``) does. Text goes through a simple tokenizer: lowercase,
``\\w+`` tokens, Lucene's 33 English stopwords removed, Porter stems (PyStemmer), the same steps as
the core's ``bm25`` defaults.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping

import numpy as np
from harness import Document, HarnessError, Run

TOKEN = re.compile(r"\w+")
#: Lucene's default English stop set (EnglishAnalyzer), 33 words
ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then
    there these they this to was will with""".split()
)


class Tokenizer:
    """``text -> tokens``: lowercase ``\\w+``, optional stopword removal, optional Porter stems."""

    def __init__(self, stopwords: str = "english", stemmer: str = "porter"):
        if stopwords not in ("english", "none"):
            raise HarnessError(f"qlm: stopwords must be 'english' or 'none', not {stopwords!r}")
        if stemmer not in ("porter", "none"):
            raise HarnessError(f"qlm: stemmer must be 'porter' or 'none', not {stemmer!r}")
        self.stopwords, self.stemmer = stopwords, stemmer
        self._stop = ENGLISH_STOPWORDS if stopwords == "english" else frozenset()
        self._stems: dict[str, str] = {}
        self._stem_words = None
        if stemmer == "porter":
            import Stemmer  # PyStemmer: a C Porter stemmer, a dependency of harness-ir too

            self._stem_words = Stemmer.Stemmer("porter").stemWords

    def __call__(self, text: str) -> list[str]:
        tokens = [t for t in TOKEN.findall(text.lower()) if t not in self._stop]
        if self._stem_words is None:
            return tokens
        new = [t for t in set(tokens) if t not in self._stems]
        if new:
            self._stems.update(zip(new, self._stem_words(new), strict=True))
        return [self._stems[t] for t in tokens]


class QueryLikelihood:
    """Retriever protocol: ``index(corpus)`` once, then ``search(queries, k)`` -> Run.

    Options (``qlm:mu=1000,stemmer=none``): ``mu`` (Dirichlet prior, default 2000), ``stopwords``
    (``english`` or ``none``), ``stemmer`` (``porter`` or ``none``)."""

    def __init__(self, mu: float = 2000.0, stopwords: str = "english", stemmer: str = "porter"):
        try:
            self.mu = float(mu)
        except (TypeError, ValueError):
            self.mu = math.nan
        if not (math.isfinite(self.mu) and self.mu > 0):
            raise HarnessError(f"qlm: mu must be a positive number, not {mu!r}")
        self.tokenizer = Tokenizer(stopwords, stemmer)
        self.doc_ids: list[str] = []
        self.vocab: dict[str, int] = {}
        self.doc_len = np.zeros(0)
        self.p_collection = np.zeros(0)
        self._offsets = np.zeros(1, dtype=np.int64)
        self._post_docs = np.zeros(0, dtype=np.int64)
        self._post_tf = np.zeros(0)
        self.total_tokens = 0

    # -- indexing ----------------------------------------------------------------------------
    def index(self, corpus: Mapping[str, Document]) -> None:
        """Count every term of ``doc.full_text()``; postings are stored term by term (CSR layout)."""
        self.doc_ids = list(corpus)
        self.vocab = {}
        docs: list[int] = []
        terms: list[int] = []
        counts: list[int] = []
        lengths = np.zeros(len(self.doc_ids))
        for i, doc_id in enumerate(self.doc_ids):
            tokens = self.tokenizer(corpus[doc_id].full_text())
            lengths[i] = len(tokens)
            for term, tf in Counter(tokens).items():
                docs.append(i)
                terms.append(self.vocab.setdefault(term, len(self.vocab)))
                counts.append(tf)
        term_arr = np.asarray(terms, dtype=np.int64)
        order = np.argsort(term_arr, kind="stable")  # postings grouped by term, documents in corpus order
        self._post_docs = np.asarray(docs, dtype=np.int64)[order]
        self._post_tf = np.asarray(counts, dtype=np.float64)[order]
        self._offsets = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_arr, minlength=len(self.vocab)), out=self._offsets[1:])
        self.doc_len = lengths
        self.total_tokens = int(lengths.sum())
        cf = np.bincount(term_arr, weights=np.asarray(counts, dtype=np.float64), minlength=len(self.vocab))
        self.p_collection = cf / max(self.total_tokens, 1)

    # -- scoring -----------------------------------------------------------------------------
    def scores(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """``(indices of the documents matching a query term, their log p(q|d))``."""
        query = Counter(t for t in self.tokenizer(text) if t in self.vocab)  # unseen terms: left out
        if not query:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        q_len = sum(query.values())
        matched = np.zeros(len(self.doc_ids), dtype=bool)
        score = np.zeros(len(self.doc_ids))
        constant = 0.0
        for term, qtf in query.items():
            t = self.vocab[term]
            lo, hi = self._offsets[t], self._offsets[t + 1]
            docs, tf = self._post_docs[lo:hi], self._post_tf[lo:hi]
            prior = self.mu * self.p_collection[t]
            score[docs] += qtf * np.log1p(tf / prior)  # the part only documents holding the term get
            matched[docs] = True
            constant += qtf * math.log(prior)
        idx = np.flatnonzero(matched)
        # log((tf + mu p) / (|d| + mu)) = log1p(tf / (mu p)) + log(mu p) - log(|d| + mu)
        return idx, score[idx] + constant - q_len * np.log(self.doc_len[idx] + self.mu)

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top ``k`` documents per query by log p(q|d); equal scores keep corpus order."""
        k = max(0, int(k))
        out: dict[str, list[tuple[str, float]]] = {}
        for qid, text in queries.items():
            idx, score = self.scores(text)
            if k < len(idx):
                keep = np.argpartition(-score, k - 1)[:k] if k else np.zeros(0, dtype=np.int64)
                idx, score = idx[keep], score[keep]
            order = np.lexsort((idx, -score))
            out[qid] = [(self.doc_ids[i], float(s)) for i, s in zip(idx[order], score[order], strict=True)]
        return Run(out)

    def config(self) -> dict:
        return {"model": "query likelihood, Dirichlet smoothing", "mu": self.mu,
                "tokenizer": r"lowercase \w+", "stopwords": self.tokenizer.stopwords,
                "stemmer": self.tokenizer.stemmer, "unseen_query_terms": "left out",
                "returns": "documents holding a query term"}

    def stats(self) -> dict:
        return {"documents": len(self.doc_ids), "vocabulary": len(self.vocab), "tokens": self.total_tokens}
