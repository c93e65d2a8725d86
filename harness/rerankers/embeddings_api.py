"""``openai-embeddings`` as a reranker: each query's candidates re-scored by similarity through an
embeddings API, with the retriever's encoder (:class:`harness.retrievers.embeddings_api.APIEncoder`: the
LLM layer's cache, endpoints, retries, failure policy, usage, prices, dry run and Batch API)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.concepts.component_context import ComponentContext
from harness.concepts.document import Document
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.rerankers.similarity import rerank_by_similarity
from harness.retrievers.embeddings_api import MAX_NAMED, NAME, APIEncoder


class OpenAIEmbeddingsReranker:
    """Re-scores each query's candidates by similarity through an embeddings API (the retriever's options,
    ``index`` aside). Scores decrease strictly; ties keep the incoming order; candidates missing from the
    corpus, and those that could not be embedded (counted, named), go last in their incoming order."""

    def __init__(self, model: str | None = None, label: str | None = None, context: ComponentContext | None = None,
                 **options: Any) -> None:
        self.encoder = APIEncoder(model, label=label or f"{NAME} reranker", context=context, **options)
        self.failed_documents: list[str] = []
        self.failed_queries: dict[str, int] = {}

    def config(self) -> dict[str, Any]:
        return self.encoder.config()

    def stats(self) -> dict[str, Any]:
        out = {**self.encoder.stats(), "failed_documents": len(self.failed_documents)}
        if self.failed_documents:
            out["failed_document_ids"] = self.failed_documents[:MAX_NAMED]
        if self.failed_queries:
            out["transport_failures_per_query"] = dict(self.failed_queries)
        return out

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        done = rerank_by_similarity(queries, run, corpus, self.encoder.vectors)
        self.failed_documents = done.failed_documents
        self.failed_queries.update(dict.fromkeys(done.failed_queries, 1))  # kept as they came (INCOMPLETE)
        return done.run
