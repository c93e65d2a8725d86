"""harness-pir: perspective-aware retrieval (PIR; Zhao et al., COLM 2024) for harness.

Registers

- datasets ``pir-demo`` (the authors' demo JSON, ``task=perspectrum|agnews|story|ambigqa|allsides|exfever``)
  and ``pir-beir`` (the hub release in BEIR format: ``path=FOLDER``);
- tasks ``pir:agnews``, ``pir:story``, ``pir:perspectrum``, ``pir:ambigqa``, ``pir:allsides``,
  ``pir:exfever`` (full-corpus retrieval on the demo release) and the suite ``pir`` of all six;
- the metric family ``p-recall`` (``p-recall@5`` = family ``p-recall`` with ``cutoff=5``): p-Recall@k,
  hit Recall@k, per-label recall and the root-query recall with its perspective bias;
- retrievers ``pap`` and ``pap+`` (perspective-aware projection over any dense retriever; the Table 4
  baselines through ``method=``).

Importing this module is light: loaders, metric and retrievers are imported when first used. See
``docs/pir.md`` in the harness repository.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from harness import hookimpl, lazy

__version__ = "0.1.0"

#: the six tasks, in the paper's table order (AGNews, Story, Perspectrum, AmbigQA, AllSides, Ex-FEVER)
TASKS = ("agnews", "story", "perspectrum", "ambigqa", "allsides", "exfever")

DEMO_PATH = "pir/demo_pir_dataset.json"
DEMO_URL = "https://raw.githubusercontent.com/colinzhaoust/pir/cad87350f445eb535712efbd1373fd3f72152ec1/demo_pir_dataset.json"
DEMO_SHA256 = "6f1a07a86499072f164a7fc37860dc5559ede8a0f2848ae0edd1ae879c3bd2c5"
DEMO_SIZE = 4061371

DEFAULT_METRICS = ("p-recall@5", "p-recall@10:details=false")
DEFAULT_RETRIEVER = "dense"

_DESCRIPTIONS = MappingProxyType({
    "agnews": "synthetic AGNews: news similar to a story, from a subtopic vs a location perspective",
    "story": "StoryAnalogy: an analogous story vs a story with similar entities",
    "perspectrum": "Perspectrum: claims supporting / opposing / relating to an argument",
    "ambigqa": "AmbigQA: the passage answering one disambiguation of an ambiguous question",
    "allsides": "AllSides: news on a topic from the left / right / centre",
    "exfever": "Ex-FEVER: claims an explanation supports / refutes / says nothing about",
})


def demo_file() -> Any:
    from harness import DataFile

    return DataFile(path=DEMO_PATH, url=DEMO_URL, sha256=DEMO_SHA256, size=DEMO_SIZE)


def pir_task(name: str) -> Any:
    """The task ``pir:<name>`` on the demo release (100 queries, 500 documents per task)."""
    from harness import Task

    return Task(
        name=f"pir:{name}",
        dataset="pir-demo",
        dataset_args={"task": name},
        description=f"PIR demo, {_DESCRIPTIONS[name]}",
        metrics=list(DEFAULT_METRICS),
        first_stage="retrieve",
        retriever=DEFAULT_RETRIEVER,
        depth=100,
        query_format="{text}",
        files=[demo_file()],
    )


def pir_suite() -> Any:
    from harness import Task

    return Task(name="pir", tasks=[f"pir:{t}" for t in TASKS], metrics=list(DEFAULT_METRICS),
                first_stage="retrieve", retriever=DEFAULT_RETRIEVER, files=[demo_file()],
                description="PIR demo: all six tasks; reports the unweighted mean over tasks")


@hookimpl
def register_datasets(register):
    register("pir-demo", lazy("harness_pir.data:load_demo_dataset"),
             "PIR demo JSON (colinzhaoust/pir): task=perspectrum|agnews|story|ambigqa|allsides|exfever")
    register("pir-beir", lazy("harness_pir.data:load_beir_dataset"),
             "PIR hub release in BEIR format (queries.jsonl meta: src_query, perspective): path=FOLDER")


@hookimpl
def register_tasks(register):
    for name in TASKS:
        register(f"pir:{name}", (lambda n=name: pir_task(n)), f"PIR demo, {_DESCRIPTIONS[name]}")
    register("pir", pir_suite, "PIR demo suite: the six perspective tasks, mean over tasks")


@hookimpl
def register_metrics(register):
    register("p-recall", lazy("harness_pir.metric:PRecall"),
             "PIR p-Recall@k (hit per query, mean per root, mean over roots) + hit/label/root-query recall and bias")


@hookimpl
def register_retrievers(register):
    register("pap", lazy("harness_pir.pap:make_pap"),
             "Perspective-aware projection over a dense retriever (base=dense); method=add|dual-sum|... baselines")
    register("pap+", lazy("harness_pir.pap:make_pap_plus"),
             "PAP+: query and documents projected off the query's perspective (base=dense)")


__all__ = ["DEMO_PATH", "DEMO_SHA256", "DEMO_URL", "TASKS", "pir_suite", "pir_task"]
