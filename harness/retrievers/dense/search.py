"""Exact top-k search over an embedding matrix: a matrix product per block of queries and
``argpartition``; ties broken by corpus order. With normalised vectors the dot product is the cosine."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: scores held at once: about 128 MiB of float32
BLOCK_SCORES = 1 << 25


def exact_top_k(queries: np.ndarray, matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows of ``matrix`` for each row of ``queries``, as ``(indices, scores)`` arrays of
    shape ``(len(queries), k)``, best first; equal scores keep the lower row index first. Scores are
    computed ``BLOCK_SCORES`` at a time, so memory stays bounded for any number of queries."""
    n = matrix.shape[0]
    k = max(0, min(int(k), n))
    nq = queries.shape[0]
    idx = np.empty((nq, k), dtype=np.int64)
    val = np.empty((nq, k), dtype=np.result_type(queries.dtype, matrix.dtype))
    if k == 0 or nq == 0:
        return idx, val
    block = max(1, BLOCK_SCORES // n)
    for start in range(0, nq, block):
        scores = queries[start:start + block] @ matrix.T
        if k < n:
            cand = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        else:
            cand = np.broadcast_to(np.arange(n), scores.shape).copy()
        top = np.take_along_axis(scores, cand, axis=1)
        order = np.lexsort((cand, -top), axis=-1)
        idx[start:start + block] = np.take_along_axis(cand, order, axis=1)
        val[start:start + block] = np.take_along_axis(top, order, axis=1)
    return idx, val


def as_hits(ids: Sequence[str], idx: np.ndarray, val: np.ndarray) -> list[list[tuple[str, float]]]:
    """Rows of ``(doc id, score)`` pairs from :func:`exact_top_k`'s arrays."""
    return [[(ids[i], float(s)) for i, s in zip(irow, vrow, strict=True)] for irow, vrow in zip(idx, val, strict=True)]
