"""harness-ifir: IFIR-EVAL (instruction-following IR in expert domains) for the harness.

Registers:

- datasets and tasks ``ifir:<subset>`` for fiqa, scifact_open, nfcorpus, aila, fire, pm, cds (modes
  ``query`` and ``instructed``; instruction levels 1-3 for fiqa, scifact_open, aila, pm), and the
  suite ``ifir`` over the seven subsets;
- the judge ``instfol``: an LLM scores (query + instruction, document) 0-3, G-Eval weighted;
- the metric ``instfol`` (cross-mode INSTFOL x 100, per level and averaged over levels).

Importing this module imports no SDK (openai, anthropic) and no torch: factories import the
implementation modules, and the LLM client is created when the judge is.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from harness import ComponentContext, hookimpl

__version__ = "0.1.0"

#: subset -> (description, has instruction levels)
SUBSETS: Mapping[str, tuple[str, bool]] = MappingProxyType({
    "fiqa": ("Finance: FiQA questions with personal-finance instructions", True),
    "scifact_open": ("Scientific literature: SciFact-open claims", True),
    "nfcorpus": ("Scientific literature: NFCorpus", False),
    "aila": ("Legal: AILA 2019 similar prior cases", True),
    "fire": ("Legal: FIRE 2017 precedents supporting a decision", False),
    "pm": ("Health: TREC Precision Medicine 2017+2018 clinical trials", True),
    "cds": ("Health: TREC Clinical Decision Support 2015", False),
})

TASK_METRICS = ("nDCG@20", "instfol")

#: MTEB's IFIR tasks (mteb/tasks/instruction_retrieval/eng/ifir*_retrieval.py @ a905523d, v2.20.0): name, dataset,
#: revision (abbreviated there)
MTEB_TASKS = MappingProxyType({
    "fiqa": ("IFIRFiQA", "if-ir/fiqa", "1670fc6"), "scifact_open": ("IFIRScifact", "if-ir/scifact_open", "1690191"),
    "nfcorpus": ("IFIRNFCorpus", "if-ir/nfcorpus", "3520715"), "aila": ("IFIRAila", "if-ir/aila", "1cb8772"),
    "fire": ("IFIRFire", "if-ir/fire", "0efa7b1"), "pm": ("IFIRPm", "if-ir/pm", "559fdb6"),
    "cds": ("IFIRCds", "if-ir/cds", "9a05fd6"),
})


def mteb_block(subset: str) -> dict[str, Any]:
    """The MTEB task an IFIR subset corresponds to, and why its scores are not MTEB's (docs/mteb.md)."""
    name, repo, revision = MTEB_TASKS[subset]
    return {"task_name": name, "dataset": repo, "dataset_revision": revision, "split": "test",
            "main_score": "ndcg_at_20", "metrics": {"nDCG@20[instructed]": "ndcg_at_20"},
            "differs": f"MTEB's {name} reads {repo} at {revision} (an abbreviated id that the Hub does not resolve); "
                       "the harness reads the authors' release songtingyu/IFIR, which pins no commit (docs/ifir.md): "
                       "that the two hold the same corpus, queries and judgments is not verified"}


def load_dataset(subset: str = "fiqa", path: str | None = None, levels: Any = None, name: str | None = None,
                 context: ComponentContext | None = None, revision: str | None = None) -> Any:
    """Factory of the ``ifir`` datasets (see :func:`harness_ifir.data.load_ifir`)."""
    from .data import load_ifir

    return load_ifir(subset, path=path, levels=levels, name=name, context=context, revision=revision)


def _dataset_factory(subset: str):
    def factory(path: str | None = None, levels: Any = None, context: ComponentContext | None = None,
                revision: str | None = None) -> Any:
        return load_dataset(subset, path=path, levels=levels, context=context, revision=revision)

    factory.__name__ = factory.__qualname__ = f"load_ifir_{subset}"
    return factory


def make_task(subset: str, context: ComponentContext | None = None, revision: str | None = None) -> Any:
    """The task ``ifir:<subset>``; its ``files`` are the subset's hub files (``songtingyu/IFIR`` at the
    pinned commit, or ``revision``) while the subset's folder in the data folder lacks them."""
    from harness import Context, Task

    from .data import has_subset, hub_files, subset_folder

    desc, leveled = SUBSETS[subset]
    folder = subset_folder(subset, revision)
    present = has_subset(Context.of(context).data.locate(folder), subset)
    return Task(
        name=f"ifir:{subset}",
        dataset=f"ifir:{subset}",
        dataset_args={"revision": revision} if revision else {},
        description=f"IFIR-EVAL {desc}{' (levels 1-3)' if leveled else ''}: query vs query+instruction",
        metrics=list(TASK_METRICS),
        first_stage="retrieve",
        retriever="bm25",
        depth=100,
        source="harness-ifir",
        files=[] if present else hub_files(subset, revision),
        mteb=mteb_block(subset),
    )


def make_suite(revision: str | None = None) -> Any:
    from harness import Task

    arg = f":revision={revision}" if revision else ""
    return Task(name="ifir", description="IFIR-EVAL: the seven subsets (mean over subsets)",
                tasks=[f"ifir:{s}{arg}" for s in SUBSETS], metrics=list(TASK_METRICS), first_stage="retrieve",
                source="harness-ifir")


def instfol_judge(context: ComponentContext | None = None, **options: Any) -> Any:
    """Factory of the ``instfol`` judge (:class:`harness_ifir.judge.InstfolJudge`)."""
    from .judge import InstfolJudge

    return InstfolJudge(context=context, **options)


def instfol_metric(**options: Any) -> Any:
    """Factory of the ``instfol`` metric (:class:`harness_ifir.metric.Instfol`)."""
    from .metric import Instfol

    return Instfol(**options)


@hookimpl
def register_datasets(register):
    register("ifir", load_dataset, "IFIR-EVAL released layout (subset=NAME, path=FOLDER); see ifir:<subset>")
    for subset, (desc, _) in SUBSETS.items():
        register(f"ifir:{subset}", _dataset_factory(subset), f"IFIR-EVAL {desc}")


def _task_factory(subset: str):
    def factory(context: ComponentContext | None = None, revision: str | None = None) -> Any:
        return make_task(subset, context=context, revision=revision)

    factory.__name__ = factory.__qualname__ = f"ifir_task_{subset}"
    return factory


@hookimpl
def register_tasks(register):
    for subset, (desc, leveled) in SUBSETS.items():
        register(f"ifir:{subset}", _task_factory(subset),
                 f"IFIR-EVAL {desc}{' (levels 1-3)' if leveled else ''}; nDCG@20 + INSTFOL")
    register("ifir", make_suite, "IFIR-EVAL suite: the seven subsets, nDCG@20 and INSTFOL averaged over subsets")


@hookimpl
def register_judges(register):
    register("instfol", instfol_judge,
             "INSTFOL judge: LLM scores (query+instruction, document) 0-3, G-Eval logprob-weighted (IFIR-EVAL)")


@hookimpl
def register_metrics(register):
    register("instfol", instfol_metric,
             "INSTFOL (IFIR-EVAL): judged gain of query+instruction over query-only top-k, x100, per level")


__all__ = ["SUBSETS", "__version__", "instfol_judge", "instfol_metric", "load_dataset", "make_suite", "make_task"]
