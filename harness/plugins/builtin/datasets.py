"""Built-in dataset loaders (``harness.data``)."""

from __future__ import annotations

from harness.components.lazy import lazy
from harness.plugins.hookspecs import hookimpl


@hookimpl
def register_datasets(register):
    register("beir", lazy("harness.datasets.loaders:load_beir_dataset"),
             "BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    register("trec", lazy("harness.datasets.loaders:load_trec_dataset"),
             "TREC topics (qid<TAB>text) + qrels, optional run file as candidates, optional corpus")
    register("rankllm", lazy("harness.datasets.loaders:load_rankllm_dataset"),
             "RankGPT/rank_llm candidate JSON ([{query, hits:[...]}]) + TREC qrels")
    register("noveleval", lazy("harness.datasets.loaders:load_noveleval_dataset"),
             "NovelEval-2306: corpus.tsv, queries.tsv, qrels.txt; 20 candidates per query")
    register("scifact", lazy("harness.datasets.loaders:load_scifact_dataset"),
             "SciFact: AllenAI CSV corpus release + BEIR test topics and qrels")
    register("mteb", lazy("harness.datasets.mteb:load_mteb_dataset"),
             "Any MTEB-layout retrieval dataset on the Hub: repo=OWNER/NAME,revision=FULL_COMMIT[,split,subset]")
    register("irds", lazy("harness.datasets.irds:load_irds_dataset"),
             "Any ir_datasets id: irds:beir/scifact/test (extra irds; files under IR_DATASETS_HOME)")
    register("demo", lazy("harness.datasets.loaders:load_demo_dataset"),
             "Small packaged demo with instructions (works offline, no download)")
