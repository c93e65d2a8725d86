"""Built-in first-stage retrievers."""

from __future__ import annotations

from harness.components.lazy import lazy
from harness.plugins.hookspecs import hookimpl


@hookimpl
def register_retrievers(register):
    register("bm25", lazy("harness.retrievers.bm25:BM25Retriever"),
             "BM25Okapi (scores identical to rank-bm25) on a sparse index")
    register("dense", lazy("harness.retrievers.dense.retriever:DenseRetriever"),
             "sentence-transformers bi-encoder; default all-MiniLM-L6-v2 (packaged weights); presets")
    register("candidates", lazy("harness.retrievers.candidates:CandidatesRetriever"),
             "The dataset's given candidate lists (re-ranking setting)")
    register("run-file", lazy("harness.retrievers.run_file:RunFileRetriever"),
             "A TREC run file made elsewhere as the first stage (run-file:PATH; harness eval --run FILE)")
    register("fuse", lazy("harness.retrievers.fused:FusionRetriever"),
             "Fusion of first stages: fuse:retrievers=[bm25,dense],method=rrf|combsum|combmnz|max|wsum,k=60")
    register("openai-embeddings", lazy("harness.retrievers.embeddings_api:OpenAIEmbeddingsRetriever"),
             "Any /v1/embeddings API (OpenAI text-embedding-3-*, vLLM, TEI, Ollama, llama.cpp) through the LLM layer")
