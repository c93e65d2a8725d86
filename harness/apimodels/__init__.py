"""Components that call served models through the LLM layer: ``openai-embeddings`` (an embeddings API as a
retriever and a reranker) and ``rerank-api`` (a Cohere-style rerank API). See docs/api-models.md."""
