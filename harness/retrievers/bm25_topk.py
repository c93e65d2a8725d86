"""The k best BM25 scores without partitioning the whole score vector.

Order: score descending, then document id descending (trec_eval's tie rule), given as ``rank``: each
document's position in doc-id order. A document that holds none of the query's terms scores exactly
0 (nothing is added to it), so when no weight is negative the k best are found among the documents
the query touches: a lower bound ``L`` on the k-th best score comes from documents of the rarest
query terms (whose scores are the highest as a rule), and only the documents scoring at least ``L``
are ranked. They are looked for in the postings of the terms that can lift a document to ``L``
(MaxScore's essential terms): a document outside those holds only terms whose largest weights,
added in the query's order, stay below ``L`` (float addition is monotonic, so it scores no more);
or by one pass over the score vector when those postings are long. With fewer than k positive
scores, the rest are the zero-score documents with the highest ids. With negative weights (a
negative ``epsilon`` idf floor) the full vector is partitioned, as :func:`top_k_full` does.

A single query is mostly cold calls (each several times its warm cost: ``bench/bench_bm25.py`` times
a query right after rank_bm25's pass over the corpus), so the selection makes few calls on small
arrays and ranks a small candidate set with a Python sort.
"""

from __future__ import annotations

import math

import numpy as np

#: most postings of the rarest terms scored to find the threshold
SAMPLE = 1024
#: most candidates ranked by a Python sort (more: numpy's partition and lexsort)
SMALL = 256


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


Hits = tuple[list[int], list[float]]
"""Document numbers, best first, and their scores."""


def hits(top: np.ndarray, scores: np.ndarray) -> Hits:
    """``top`` (document numbers, best first) and their scores, as lists."""
    return top.tolist(), scores[top].tolist()


def best_among(cand: np.ndarray, scores: np.ndarray, k: int, rank: np.ndarray, distinct: bool = True) -> Hits:
    """The ``k`` best of the documents ``cand`` (repeats allowed where ``distinct`` is false)."""
    if cand.size <= SMALL:  # (score, rank) is unique per document: the set drops repeats only
        best = sorted(set(zip(scores[cand].tolist(), rank[cand].tolist(), cand.tolist())), reverse=True)[:k]
        return [d for _, _, d in best], [s for s, _, _ in best]
    if not distinct:
        cand = np.unique(cand)
    if cand.size > 4 * k:
        return hits(cand[top_k_full(scores[cand], k, rank[cand])], scores)
    return hits(cand[np.lexsort((-rank[cand], -scores[cand]))[:k]], scores)


def threshold(scores: np.ndarray, lists: list[np.ndarray], k: int) -> float | None:
    """A lower bound on the k-th best score from ``lists`` (distinct postings, rarest first), or None
    when they hold too few documents: with ``m`` lists taken a document appears at most ``m`` times
    among them, so at least k distinct documents reach the (m(k-1)+1)-th best of their scores."""
    picked: list[np.ndarray] = []
    size = need = 0
    for docs in lists:
        picked.append(docs[:SAMPLE])
        size += picked[-1].size
        need = len(picked) * (k - 1) + 1
        if size >= SAMPLE or size >= max(need, 2 * k):
            break
    if size < need or not picked:
        return None
    return kth_best(scores[picked[0] if len(picked) == 1 else np.concatenate(picked)], need)


def kth_best(vals: np.ndarray, need: int) -> float:
    """The ``need``-th largest of ``vals``."""
    if vals.size <= 64:
        return sorted(vals.tolist())[vals.size - need]
    return float(np.partition(vals, vals.size - need)[vals.size - need])


def zero_fill(scores: np.ndarray, need: int, by_rank_desc: np.ndarray, touched: int) -> np.ndarray:
    """The ``need`` zero-score documents with the highest ids (at most ``touched`` are not zero)."""
    head = by_rank_desc[: need + touched]
    return head[scores[head] == 0.0][:need]


def upper_bound(maxima: list[float], skip: list[bool]) -> float:
    """The largest score a document holding only the tokens marked in ``skip`` can have: their largest
    weights added in token order, as the scores are (float addition is monotonic)."""
    total = 0.0
    for m, out in zip(maxima, skip, strict=True):
        if out:
            total += m
    return total


def essential(lists: list[np.ndarray], maxima: list[float], bound: float) -> list[np.ndarray]:
    """The distinct postings among which every document scoring at least ``bound`` is: the longest
    are set aside while a document holding only set-aside tokens stays below ``bound``. ``lists[i]``,
    ``maxima[i]``: the postings and the largest weight of the query's i-th token (``inf``: never set
    aside). A repeated token may be set aside in one place and kept in another: its postings are
    then scanned, and the bound only counts it more than needed."""
    skip = [False] * len(lists)
    for i in sorted((i for i, m in enumerate(maxima) if m < math.inf), key=lambda i: -lists[i].size):
        skip[i] = True
        if not upper_bound(maxima, skip) < bound:
            skip[i] = False
    return list({id(d): d for d, out in zip(lists, skip, strict=True) if not out}.values())


def top_k_touched(scores: np.ndarray, k: int, rank: np.ndarray, lists: list[np.ndarray], maxima: list[float],
                  by_rank_desc: np.ndarray) -> Hits:
    """The ``k`` best and their scores, best first, when no score is negative and every document
    outside ``lists`` scores 0. ``lists[i]``: the postings (distinct documents) of the query's i-th
    token, a repeated token repeating the same array; ``maxima[i]``: its largest weight (``inf``:
    never set aside)."""
    n = scores.shape[0]
    k = min(k, n)
    bound = threshold(scores, sorted({id(d): d for d in lists}.values(), key=len), k)  # rarest first
    if bound is not None and bound > 0.0:
        scan = essential(lists, maxima, bound)
        if scan and sum(d.size for d in scan) <= n // 4:
            cand = scan[0] if len(scan) == 1 else np.concatenate(scan)
            return best_among(cand[scores[cand] >= bound], scores, k, rank, distinct=len(scan) == 1)
        return best_among(np.flatnonzero(scores >= bound), scores, k, rank)
    positive = np.flatnonzero(scores > 0.0)
    if positive.size >= k:
        return best_among(positive, scores, k, rank)
    top = positive[np.lexsort((-rank[positive], -scores[positive]))]
    touched = sum(d.size for d in lists)
    return hits(np.concatenate([top, zero_fill(scores, k - top.size, by_rank_desc, touched)]), scores)
