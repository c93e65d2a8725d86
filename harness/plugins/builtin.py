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


@hookimpl
def register_rerankers(register):
    register("dense", lazy("harness.retrievers.dense.retriever:DenseReranker"),
             "Re-score each candidate list with a sentence-transformers bi-encoder")


@hookimpl
def register_metrics(register):
    from harness.metrics.names import STANDARD_FAMILIES

    for name, description in STANDARD_FAMILIES.items():
        register(name, lazy("harness.metrics.standard:StandardMetric"), description)
