"""Exact top-k search by inner product, in bounded memory: the documents come in blocks (one in-memory
matrix cut into rows, or the shards of an index on disk read through ``mmap``), each block is scored
against the queries a slice at a time, and a running top-k per query is merged with each block's.
Peak memory is one block (converted to float32) plus one slice of scores plus the running top-k,
whatever the corpus size. Equal scores keep the lower document position first (corpus order). With
normalised vectors the inner product is the cosine. A score that is not finite (a NaN or infinite
vector) is an error, never ranked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from harness.concepts.errors import HarnessError

#: scores held at once: about 128 MiB of float32
BLOCK_SCORES = 1 << 25
#: document rows scored at once (MTEB's chunk size)
CHUNK_ROWS = 50_000


class NonFiniteScore(HarnessError):
    """A score is NaN or infinite: ``position`` is the document's (None: the queries are not finite)."""

    def __init__(self, position: int | None) -> None:
        self.position = position
        super().__init__("the query vectors are not finite" if position is None else
                         f"the vector of the document at position {position} gives a non-finite score")


def merge_top_k(idx: np.ndarray, val: np.ndarray, new_idx: np.ndarray, new_val: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of two candidate sets per row: higher score first, then lower position."""
    idx = np.concatenate([idx, new_idx], axis=1)
    val = np.concatenate([val, new_val], axis=1)
    order = np.lexsort((idx, -val), axis=-1)[:, :k]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(val, order, axis=1)


def _block_top_k(scores: np.ndarray, offset: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    n = scores.shape[1]
    if k < n:
        cand = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    else:
        cand = np.broadcast_to(np.arange(n), scores.shape).copy()
    return cand + offset, np.take_along_axis(scores, cand, axis=1)


def top_k_blocks(queries: np.ndarray, blocks: Iterable[tuple[int, np.ndarray]], k: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best document positions for each row of ``queries`` over ``blocks`` (pairs
    ``(position of the block's first row, rows)``, rows in any dtype, scored as float32, at most
    :data:`CHUNK_ROWS` each for the memory bound), as ``(positions, scores)`` arrays of shape
    ``(len(queries), <= k)``, best first. A non-finite score raises :class:`NonFiniteScore`."""
    queries = np.asarray(queries, dtype=np.float32)
    nq = queries.shape[0]
    if not np.isfinite(queries).all():
        raise NonFiniteScore(None)
    if k <= 0 or nq == 0:
        return np.empty((nq, 0), dtype=np.int64), np.empty((nq, 0), dtype=np.float32)
    step = max(1, BLOCK_SCORES // CHUNK_ROWS)  # queries per slice: one slice's scores stay within BLOCK_SCORES
    slices = [(s, min(s + step, nq)) for s in range(0, nq, step)]
    best = [(np.empty((e - s, 0), dtype=np.int64), np.empty((e - s, 0), dtype=np.float32)) for s, e in slices]
    for offset, rows in blocks:
        block = np.asarray(rows, dtype=np.float32)
        if not len(block):
            continue
        for i, (s, e) in enumerate(slices):
            scores = queries[s:e] @ block.T
            if not np.isfinite(scores).all():
                raise NonFiniteScore(offset + int(np.flatnonzero(~np.isfinite(scores).all(axis=0))[0]))
            cand_idx, cand_val = _block_top_k(scores, offset, k)
            best[i] = merge_top_k(*best[i], cand_idx, cand_val.astype(np.float32, copy=False), k)
    return np.concatenate([b[0] for b in best]), np.concatenate([b[1] for b in best])


def row_blocks(matrix: np.ndarray, offset: int = 0, rows: int = CHUNK_ROWS) -> Iterable[tuple[int, np.ndarray]]:
    """``matrix`` cut into blocks of ``rows`` (views: nothing is copied until a block is scored)."""
    for start in range(0, matrix.shape[0], rows):
        yield offset + start, matrix[start:start + rows]


def exact_top_k(queries: np.ndarray, matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows of an in-memory ``matrix`` for each query (see :func:`top_k_blocks`)."""
    return top_k_blocks(queries, row_blocks(matrix), min(int(k), matrix.shape[0]))


def as_hits(ids: Sequence[str], idx: np.ndarray, val: np.ndarray) -> list[list[tuple[str, float]]]:
    """Rows of ``(doc id, score)`` pairs from :func:`top_k_blocks`'s arrays."""
    return [[(ids[i], float(s)) for i, s in zip(irow, vrow, strict=True)] for irow, vrow in zip(idx, val, strict=True)]
