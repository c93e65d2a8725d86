"""``dense`` as a reranker: each query's candidates re-scored by similarity to ``queries[qid].text``
with a sentence-transformers bi-encoder (the dense retriever's encoder and options,
:class:`harness.retrievers.dense.retriever.DenseComponent`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.concepts.document import Document
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.rerankers.similarity import rerank_by_similarity
from harness.retrievers.dense.retriever import DenseComponent


class DenseReranker(DenseComponent):
    """Re-scores each query's candidates by similarity to ``queries[qid].text``.

    Same options as :class:`~harness.retrievers.dense.retriever.DenseRetriever`. Scores decrease
    strictly; equal similarities keep the incoming order; candidates missing from the corpus go last,
    in their incoming order (:mod:`harness.rerankers.similarity`).
    """

    default_label = "dense reranker"

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        return rerank_by_similarity(queries, run, corpus, self._vectors).run

    def _vectors(self, texts: list[str], role: str) -> tuple[np.ndarray, np.ndarray]:
        """Every text gets a vector (a local model has no transport failure)."""
        matrix = self.encoder.embed(texts, role) if texts else np.zeros((0, 0), dtype=np.float32)
        return matrix, np.zeros(len(texts), dtype=bool)
