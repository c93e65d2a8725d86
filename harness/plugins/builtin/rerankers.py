"""Built-in rerankers."""

from __future__ import annotations

from harness.components.lazy import lazy
from harness.plugins.hookspecs import hookimpl


@hookimpl
def register_rerankers(register):
    register("dense", lazy("harness.rerankers.dense:DenseReranker"),
             "Re-score each candidate list with a sentence-transformers bi-encoder")
    register("cross-encoder", lazy("harness.rerankers.cross_encoder:CrossEncoderReranker"),
             "sentence-transformers CrossEncoder (ms-marco MiniLM, mMARCO, bge-reranker); preset=monobert")
    register("monot5", lazy("harness.rerankers.monot5:MonoT5Reranker"),
             "monoT5 as pygaggle runs it: log-softmax over true/false at the first decoding step")
    register("tart", lazy("harness.rerankers.tart:TartReranker"),
             "TART-full (facebook/tart-full-flan-t5-xl): '{instruction} [SEP] {query}' + document, P(positive label)")
    register("rankllama", lazy("harness.rerankers.rankllama:RankLlamaReranker"),
             "RankLLaMA (castorini/rankllama-v1-7b-lora-passage): LoRA via peft, logit of the last token")
    register("true-false", lazy("harness.rerankers.true_false:true_false"),
             "InfoSearch's pointwise LLM rerankers (template=llama|mistral|followir): P(true); llm= or model=")
    register("openai-embeddings", lazy("harness.rerankers.embeddings_api:OpenAIEmbeddingsReranker"),
             "Re-score each candidate list by similarity through a /v1/embeddings API")
    register("pyterrier", lazy("harness.rerankers.pyterrier_transformer:PyTerrierReranker"),
             "A PyTerrier transformer as a reranker: pyterrier:MODULE:OBJECT (extra pyterrier; the module is imported)")
    register("rerank-api", lazy("harness.rerankers.rerank_api:RerankAPIReranker"),
             "A Cohere-style rerank API (Cohere, Jina, Voyage, TEI, vLLM, llama.cpp --reranking, Infinity)")
