"""Building BM25Okapi postings in bounded memory: tokenize the corpus in blocks of documents, keep
each block's (term, document, tf) postings compactly (2 + 2 bytes each), cut into pieces at term
boundaries shared by all blocks; then write the weights into the final term-major arrays one range of
terms at a time, dropping each piece once written.

The final arrays (one float64 weight and one int32 document per posting) are written front to back
while the pieces are dropped, so the peak is about the final arrays plus the dictionaries of words
and terms, not the final arrays plus every block. Terms get ids in order of first occurrence in the
corpus, and every weight is computed with rank_bm25's operations in its order, so the arrays equal
those of a one-block build bit for bit.
"""

from __future__ import annotations

import math
import mmap
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from harness.concepts.errors import HarnessError
from harness.retrievers.tokenize import TOKEN_RE, Tokenizer

#: documents per tokenizing block (block-local document numbers fit uint16)
BLOCK_DOCS = 65_536
#: postings weighted at a time when a block is written into the final arrays
CHUNK = 1 << 20
#: pieces each block is cut into (by term)
PIECES = 32


@dataclass
class Postings:
    """A term-major (CSR, rows = terms) matrix of BM25 weights and what it was computed from."""

    terms: list[str]  # term id -> term
    weights: np.ndarray  # float64 [postings]
    docs: np.ndarray  # int32 (int64 past 2**31) [postings], ascending within a term
    offsets: np.ndarray  # int64 [terms + 1]
    idf: np.ndarray  # float64 [terms], after the epsilon floor
    doc_len: np.ndarray  # int32 [documents], tokens per document
    avgdl: float
    average_idf: float


class _TermIds(dict):
    """lowercase word -> term id (-1: a stopword); a new word is analysed once and a new term gets
    the next id, so ids follow first occurrence."""

    def __init__(self, tokenizer: Tokenizer, vocab: dict[str, int]):
        super().__init__()
        self._term = tokenizer.term
        self._vocab = vocab

    def __missing__(self, word: str) -> int:
        term = self._term(word)
        vocab = self._vocab
        tid = -1 if term is None else vocab.setdefault(term, len(vocab))
        self[word] = tid
        return tid


@dataclass
class _Piece:
    """The postings of one block for the terms ``term`` to ``term + offsets.size - 1``."""

    start: int  # the block's first document
    term: int  # first term
    offsets: np.ndarray  # int32 (int64 past 2**31 postings) [terms + 1], from 0
    tf: np.ndarray  # uint16 (uint32 when a count exceeds 65535)
    docs: np.ndarray  # uint16, block-local document numbers


def _own_pages(tf: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copies of ``tf`` and ``docs`` in an anonymous memory map of their own, so that dropping them
    gives the memory back to the system at once (freed heap memory would stay with the process)."""
    buf = mmap.mmap(-1, max(1, tf.nbytes + docs.nbytes))
    tf_copy = np.frombuffer(buf, dtype=tf.dtype, count=tf.size)
    docs_copy = np.frombuffer(buf, dtype=docs.dtype, count=docs.size, offset=tf.nbytes)
    tf_copy[:] = tf
    docs_copy[:] = docs
    return tf_copy, docs_copy


class _Pieces:
    """Every block's postings, cut at the same terms: cuts set by the first block so that its pieces
    hold about equal postings; the last piece of each block takes every term after the last cut."""

    def __init__(self, per_block: int):
        self.per_block = per_block
        self.cuts: list[int] | None = None
        self.rows: list[list[_Piece | None]] = []
        self.df = np.zeros(0, dtype=np.int64)

    def add(self, start: int, offsets: np.ndarray, docs: np.ndarray, tf: np.ndarray) -> None:
        n_terms = offsets.size - 1
        if self.cuts is None:
            targets = np.linspace(0, int(offsets[-1]), self.per_block + 1)[1:-1]
            found = np.searchsorted(offsets, targets, side="right").tolist()
            self.cuts = sorted({0, *(c for c in found if 0 < c < n_terms)})  # later blocks know more terms
        if n_terms > self.df.size:
            self.df = np.concatenate([self.df, np.zeros(n_terms - self.df.size, dtype=np.int64)])
        self.df[:n_terms] += np.diff(offsets)
        bounds = [*self.cuts, n_terms]
        row: list[_Piece | None] = []
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            lo, hi = int(offsets[a]), int(offsets[b])
            row.append(_Piece(start, a, offsets[a : b + 1] - offsets[a], *_own_pages(tf[lo:hi], docs[lo:hi])))
        self.rows.append(row)

    def add_block(self, start: int, ids: array, raw_lens: array, n_terms: int, has_stop: bool) -> np.ndarray:
        """Add a block of tokenized documents; their lengths."""
        offsets, docs, tf, lens = _block(ids, raw_lens, n_terms, has_stop)
        self.add(start, offsets, docs, tf)
        return lens


def _block(ids: array, raw_lens: array, n_terms: int, has_stop: bool) -> tuple[np.ndarray, ...]:
    """One block's postings grouped by term (documents ascending): offsets per term, block-local
    documents, tf; and its documents' lengths."""
    tok = np.frombuffer(ids, dtype=np.int32)
    lens = np.frombuffer(raw_lens, dtype=np.int32).astype(np.int64)
    n = lens.size
    if has_stop:
        keep = tok >= 0
        doc_of = np.repeat(np.arange(n, dtype=np.int32), lens)[keep]
        tok = tok[keep]
        lens = np.bincount(doc_of, minlength=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    # Doc-by-term counts with repeated entries; the CSC conversion (a linear counting sort) groups them
    # by term with documents ascending, and summing duplicates gives tf.
    counts = sp.csr_matrix((np.ones(tok.size, dtype=np.int32), tok, ptr), shape=(n, n_terms)).tocsc()
    counts.sum_duplicates()
    tf = counts.data
    tf = tf.astype(np.uint16 if tf.size == 0 or tf.max() < 2**16 else np.uint32)
    offsets = counts.indptr.astype(np.int32 if counts.nnz < 2**31 else np.int64)
    return offsets, counts.indices.astype(np.uint16), tf, lens


def _idf(df: np.ndarray, n_docs: int, epsilon: float) -> tuple[np.ndarray, float]:
    """rank_bm25's ``_calc_idf``: the same operations in the same (first-occurrence) order."""
    idf = [0.0] * df.size
    idf_sum = 0.0
    negative: list[int] = []
    for t, freq in enumerate(df.tolist()):
        v = math.log(n_docs - freq + 0.5) - math.log(freq + 0.5)
        idf[t] = v
        idf_sum += v
        if v < 0:
            negative.append(t)
    average_idf = idf_sum / df.size
    eps = epsilon * average_idf
    for t in negative:
        idf[t] = eps
    return np.asarray(idf, dtype=np.float64), average_idf


def build_postings(texts: Iterable[str], tokenizer: Tokenizer, k1: float, b: float, epsilon: float,
                   block_docs: int = BLOCK_DOCS) -> Postings:
    """Tokenize ``texts`` (in corpus order) and compute every posting's BM25Okapi weight
    ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``."""
    if not 1 <= block_docs <= 2**16:
        raise ValueError("block_docs must be between 1 and 65536")
    vocab: dict[str, int] = {}
    lookup = _TermIds(tokenizer, vocab).__getitem__
    findall = TOKEN_RE.findall
    has_stop = bool(tokenizer.stopwords)
    pieces = _Pieces(PIECES)
    lens: list[np.ndarray] = []
    ids, raw_lens, n_docs = array("i"), array("i"), 0

    for text in texts:
        words = findall(text.lower())
        raw_lens.append(len(words))
        ids.extend(map(lookup, words))
        n_docs += 1
        if len(raw_lens) == block_docs:
            lens.append(pieces.add_block(n_docs - block_docs, ids, raw_lens, len(vocab), has_stop))
            ids, raw_lens = array("i"), array("i")
    if raw_lens:
        lens.append(pieces.add_block(n_docs - len(raw_lens), ids, raw_lens, len(vocab), has_stop))
    del ids, raw_lens
    terms = list(vocab)  # the word and term dictionaries are dropped before the weights are allocated
    del lookup, vocab
    if n_docs == 0:
        raise HarnessError("bm25: the corpus is empty; there is nothing to index")
    doc_len = np.concatenate(lens)
    total = int(doc_len.sum())
    if total == 0:
        raise HarnessError(
            f"bm25: none of the {n_docs} documents has a token after tokenization "
            f"({tokenizer.config()}); there is nothing to index"
        )
    n_terms, df = len(terms), pieces.df
    pieces.df = np.zeros(0, dtype=np.int64)
    idf, average_idf = _idf(df, n_docs, epsilon)
    avgdl = total / n_docs
    norm = k1 * (1 - b + b * doc_len / avgdl)  # rank_bm25's length norm, once per document
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=offsets[1:])
    del df
    n_post = int(offsets[-1])
    doc_dtype = np.int32 if n_docs < 2**31 else np.int64
    weights = np.empty(n_post, dtype=np.float64)
    docs = np.empty(n_post, dtype=doc_dtype)
    fill = offsets[:-1].copy()
    for g in range(len(pieces.cuts or ())):  # a range of terms at a time: the arrays fill front to back
        for row in pieces.rows:
            piece, row[g] = row[g], None
            if piece is not None:
                _scatter(piece, fill, idf, norm, k1, weights, docs)
    return Postings(terms=terms, weights=weights, docs=docs, offsets=offsets, idf=idf,
                    doc_len=doc_len.astype(np.int32), avgdl=avgdl, average_idf=average_idf)


def _scatter(piece: _Piece, fill: np.ndarray, idf: np.ndarray, norm: np.ndarray, k1: float,
             weights: np.ndarray, docs: np.ndarray) -> None:
    """Write a piece's postings after what each of its terms already holds, ``CHUNK`` postings at a
    time (bounded temporaries); advance ``fill``."""
    offsets, base = piece.offsets, piece.term
    n_p = offsets.size - 1
    cuts = np.unique(np.searchsorted(offsets, np.arange(0, int(offsets[-1]), CHUNK), side="right") - 1)
    bounds = [*cuts.tolist(), n_p]
    for t0, t1 in zip(bounds[:-1], bounds[1:], strict=True):
        lo, hi = int(offsets[t0]), int(offsets[t1])
        if lo == hi:
            continue
        counts = np.diff(offsets[t0 : t1 + 1])
        dest = np.repeat(fill[base + t0 : base + t1] - offsets[t0:t1], counts)
        dest += np.arange(lo, hi, dtype=np.int64)
        doc = piece.docs[lo:hi].astype(docs.dtype)
        doc += piece.start
        tf = piece.tf[lo:hi].astype(np.float64)
        # rank_bm25's get_scores term, element for element
        w = tf * (k1 + 1)
        w /= tf + norm[doc]
        w *= np.repeat(idf[base + t0 : base + t1], counts)
        weights[dest] = w
        docs[dest] = doc
        fill[base + t0 : base + t1] += counts
