"""Built-in components, registered through the same hooks as any third-party plugin.

Every factory is a :func:`lazy` reference: the module that implements a component is imported
only when the component is created, so loading plugins imports no model library.
"""

from __future__ import annotations

from harness.plugins.hookspecs import hookimpl
from harness.plugins.lazy import lazy


@hookimpl
def register_datasets(register):
    register("beir", lazy("harness.data.datasets:load_beir_dataset"),
             "BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    register("trec", lazy("harness.data.datasets:load_trec_dataset"),
             "TREC topics (qid<TAB>text) + qrels, optional run file as candidates, optional corpus")
    register("rankllm", lazy("harness.data.datasets:load_rankllm_dataset"),
             "RankGPT/rank_llm candidate JSON ([{query, hits:[...]}]) + TREC qrels")
    register("noveleval", lazy("harness.data.datasets:load_noveleval_dataset"),
             "NovelEval-2306: corpus.tsv, queries.tsv, qrels.txt; 20 candidates per query")
    register("scifact", lazy("harness.data.datasets:load_scifact_dataset"),
             "SciFact: AllenAI CSV corpus release + BEIR test topics and qrels")
    register("mteb", lazy("harness.data.mteb:load_mteb_dataset"),
             "Any MTEB-layout retrieval dataset on the Hub: repo=OWNER/NAME,revision=FULL_COMMIT[,split,subset]")
    register("demo", lazy("harness.data.datasets:load_demo_dataset"),
             "Small packaged demo with instructions (works offline, no download)")


@hookimpl
def register_tasks(register):
    from harness.concepts.task import load_task_file, task_dirs

    seen: set[str] = set()
    for folder in task_dirs():
        for path in sorted(folder.glob("*.toml")):
            if path.stem in seen:
                continue
            seen.add(path.stem)
            register(path.stem, _task_factory(path, load_task_file), _first_line(path))


def _task_factory(path, loader):
    def factory():
        return loader(path)

    factory.path = path
    return factory


def _first_line(path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("description"):
            return line.split("=", 1)[1].strip().strip('"')
    return ""


@hookimpl
def register_retrievers(register):
    register("bm25", lazy("harness.retrievers.bm25:BM25Retriever"),
             "BM25Okapi (scores identical to rank-bm25) on a sparse index")
    register("dense", lazy("harness.retrievers.dense.retriever:DenseRetriever"),
             "sentence-transformers bi-encoder; default all-MiniLM-L6-v2 (packaged weights); presets")
    register("candidates", lazy("harness.retrievers.candidates:CandidatesRetriever"),
             "The dataset's given candidate lists (re-ranking setting)")
    register("openai-embeddings", lazy("harness.apimodels.embeddings:OpenAIEmbeddingsRetriever"),
             "Any /v1/embeddings API (OpenAI text-embedding-3-*, vLLM, TEI, Ollama, llama.cpp) through the LLM layer")


@hookimpl
def register_rerankers(register):
    register("dense", lazy("harness.retrievers.dense.retriever:DenseReranker"),
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
    register("openai-embeddings", lazy("harness.apimodels.embeddings:OpenAIEmbeddingsReranker"),
             "Re-score each candidate list by similarity through a /v1/embeddings API")
    register("rerank-api", lazy("harness.apimodels.rerank:RerankAPIReranker"),
             "A Cohere-style rerank API (Cohere, Jina, Voyage, TEI, vLLM, llama.cpp --reranking, Infinity)")


@hookimpl
def register_metrics(register):
    from harness.metrics.names import STANDARD_FAMILIES

    for name, description in STANDARD_FAMILIES.items():
        register(name, lazy("harness.metrics.standard:StandardMetric"), description)
