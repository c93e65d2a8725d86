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

from typing import Any

from harness import hookimpl

__version__ = "0.1.0"

#: subset -> (description, has instruction levels)
SUBSETS: dict[str, tuple[str, bool]] = {
    "fiqa": ("Finance: FiQA questions with personal-finance instructions", True),
    "scifact_open": ("Scientific literature: SciFact-open claims", True),
    "nfcorpus": ("Scientific literature: NFCorpus", False),
    "aila": ("Legal: AILA 2019 similar prior cases", True),
    "fire": ("Legal: FIRE 2017 precedents supporting a decision", False),
    "pm": ("Health: TREC Precision Medicine 2017+2018 clinical trials", True),
    "cds": ("Health: TREC Clinical Decision Support 2015", False),
}

TASK_METRICS = ["nDCG@20", "instfol"]


def load_dataset(subset: str = "fiqa", path: str | None = None, levels: Any = None, name: str | None = None,
                 context: Any = None) -> Any:
    """Factory of the ``ifir`` datasets (see :func:`harness_ifir.data.load_ifir`)."""
    from .data import load_ifir

    return load_ifir(subset, path=path, levels=levels, name=name, context=context)


def _dataset_factory(subset: str):
    def factory(path: str | None = None, levels: Any = None, context: Any = None) -> Any:
        return load_dataset(subset, path=path, levels=levels, context=context)

    factory.__name__ = factory.__qualname__ = f"load_ifir_{subset}"
    return factory


def make_task(subset: str) -> Any:
    from harness import Task

    desc, leveled = SUBSETS[subset]
    return Task(
        name=f"ifir:{subset}",
        dataset=f"ifir:{subset}",
        description=f"IFIR-EVAL {desc}{' (levels 1-3)' if leveled else ''}: query vs query+instruction",
        metrics=list(TASK_METRICS),
        first_stage="retrieve",
        retriever="bm25",
        depth=100,
        source="harness-ifir",
    )


def make_suite() -> Any:
    from harness import Task

    return Task(name="ifir", description="IFIR-EVAL: the seven subsets (mean over subsets)",
                tasks=[f"ifir:{s}" for s in SUBSETS], metrics=list(TASK_METRICS), first_stage="retrieve",
                source="harness-ifir")


def instfol_judge(context: Any = None, **options: Any) -> Any:
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


@hookimpl
def register_tasks(register):
    for subset, (desc, leveled) in SUBSETS.items():
        register(f"ifir:{subset}", (lambda s=subset: make_task(s)),
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
