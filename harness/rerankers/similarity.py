"""Re-ranking by embedding similarity, the rule the dense and the embeddings-API rerankers share: each
query's candidates scored by the inner product of their vectors (normalised vectors: cosine), the
order stable (equal similarities keep the incoming order), candidates missing from the corpus or
without a vector last in their incoming order, scores strictly decreasing by the one rule
(:func:`harness.concepts.run.strictly_decreasing`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from harness.concepts.document import Document
from harness.concepts.query import Query
from harness.concepts.run import Run, strictly_decreasing

#: ``vectors(texts, role)`` -> (one row per text, a boolean mask of the texts that got no vector)
Vectors = Callable[[list[str], str], tuple[np.ndarray, np.ndarray]]


@dataclass
class Reranked:
    """The new run, the candidates that got no vector and the queries that got none (kept as they came)."""

    run: Run
    failed_documents: list[str] = field(default_factory=list)
    failed_queries: list[str] = field(default_factory=list)


def rerank_by_similarity(queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document],
                         vectors: Vectors) -> Reranked:
    """Each query of ``run`` (and of ``queries``) re-ranked by similarity (module docstring)."""
    qids = [q for q in run if q in queries]
    doc_ids = list(dict.fromkeys(d for q in qids for d, _ in run[q] if d in corpus))
    dmat, dfail = vectors([corpus[d].full_text() for d in doc_ids], "document")
    qmat, qfail = vectors([queries[q].text for q in qids], "query")
    pos = {d: i for i, d in enumerate(doc_ids) if not dfail[i]}
    out: dict[str, list[tuple[str, float]]] = {q: list(hits) for q, hits in run.items()}
    failed_queries = []
    for row, qid in enumerate(qids):
        if qfail[row]:
            failed_queries.append(qid)  # kept as it came
            continue
        out[qid] = _ranked(list(dict.fromkeys(d for d, _ in run[qid])), pos, dmat, qmat[row])
    failed_documents = [d for d, f in zip(doc_ids, dfail, strict=True) if f]
    return Reranked(Run(out, name=run.name), failed_documents, failed_queries)


def _ranked(hits: list[str], pos: Mapping[str, int], dmat: np.ndarray, qvec: np.ndarray) -> list[tuple[str, float]]:
    known = [d for d in hits if d in pos]
    rest = [d for d in hits if d not in pos]
    ranked: list[tuple[str, float]] = []
    if known:
        scores = (dmat[[pos[d] for d in known]] @ qvec).astype(np.float64)
        order = sorted(range(len(known)), key=lambda i: -scores[i])  # stable: ties keep the incoming order
        ranked = [(known[i], float(scores[i])) for i in order]
    floor = ranked[-1][1] if ranked else 0.0
    ranked += [(d, floor - 1.0 - i) for i, d in enumerate(rest)]
    return list(zip([d for d, _ in ranked], strictly_decreasing([x for _, x in ranked]), strict=True))
