"""The k best BM25 scores without partitioning the whole score vector.

Order: score descending, then document id descending (trec_eval's tie rule), given as ``rank``: each
document's position in doc-id order. A document that holds none of the query's terms scores exactly
0 (nothing is added to it), so when no weight is negative the k best are found among the documents
the query touches: a lower bound ``L`` on the k-th best score comes from k distinct touched documents
(those of the rarest query terms, whose scores are the highest as a rule); only the documents
scoring at least ``L`` are then ranked. With fewer than k positive scores, the rest are the
zero-score documents with the highest ids. With negative weights (a negative ``epsilon`` idf floor)
the full vector is partitioned, as :func:`top_k_full` does.
"""

from __future__ import annotations

import numpy as np

#: most postings of the rarest terms scored to find the threshold
SAMPLE = 1024


def top_k_full(scores: np.ndarray, k: int, rank: np.ndarray) -> np.ndarray:
    """Indices of the ``k`` best, best first, by one partition of the whole vector (the reference
    method, and the baseline of ``bench/bench_bm25.py``)."""
    n = scores.shape[0]
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


def best_among(cand: np.ndarray, scores: np.ndarray, k: int, rank: np.ndarray) -> np.ndarray:
    """The ``k`` best of the distinct documents ``cand``, best first."""
    if cand.size > 4 * k:
        sub = top_k_full(scores[cand], k, rank[cand])
        return cand[sub]
    order = np.lexsort((-rank[cand], -scores[cand]))
    return cand[order[:k]]


def threshold(scores: np.ndarray, lists: list[np.ndarray], k: int) -> float | None:
    """A lower bound on the k-th best score: the k-th best of k or more distinct documents taken from
    ``lists`` (postings of the query's terms, rarest first), or None when they hold fewer than k."""
    picked: list[np.ndarray] = []
    size = 0
    for docs in lists:
        picked.append(docs[:SAMPLE])
        size += min(docs.size, SAMPLE)
        if size >= 2 * k or size >= SAMPLE:
            break
    if not picked:
        return None
    sample = picked[0] if len(picked) == 1 else np.unique(np.concatenate(picked))
    if sample.size < k:
        return None
    vals = scores[sample]
    return float(np.partition(vals, vals.size - k)[vals.size - k])


def zero_fill(scores: np.ndarray, need: int, by_rank_desc: np.ndarray, touched: int) -> np.ndarray:
    """The ``need`` zero-score documents with the highest ids (at most ``touched`` are not zero)."""
    head = by_rank_desc[: need + touched]
    return head[scores[head] == 0.0][:need]


def top_k_touched(scores: np.ndarray, k: int, rank: np.ndarray, lists: list[np.ndarray],
                  by_rank_desc: np.ndarray) -> np.ndarray:
    """The ``k`` best, best first, when no score is negative and every document outside ``lists``
    (the query terms' postings, rarest first) scores 0."""
    n = scores.shape[0]
    k = min(k, n)
    bound = threshold(scores, lists, k)
    if bound is not None and bound > 0.0:
        return best_among(np.flatnonzero(scores >= bound), scores, k, rank)
    positive = np.flatnonzero(scores > 0.0)
    if positive.size >= k:
        return best_among(positive, scores, k, rank)
    top = positive[np.lexsort((-rank[positive], -scores[positive]))]
    touched = sum(d.size for d in lists)
    return np.concatenate([top, zero_fill(scores, k - top.size, by_rank_desc, touched)])
