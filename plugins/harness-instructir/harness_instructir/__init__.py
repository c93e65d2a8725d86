"""harness-instructir: InstructIR (Oh et al., 2024, arXiv 2402.14334) as a harness plugin.

Registers the tasks ``instructir`` (query text ``instruction [SEP] query``, the authors') and
``instructir:mteb`` (``query instruction``, MTEB's), both on ``mteb/InstructIR-mteb`` at MTEB's pin through
the core's ``mteb`` dataset, and the metric ``instructir-Robustness`` (``Robustness@k``; ``group=id``, MTEB's,
by default, or ``group=text``, the authors'). Importing this module reads no data.
"""

from __future__ import annotations

from harness import hookimpl, lazy

from .tasks import FORMS, REPO, REVISION, ROBUSTNESS_METRIC, TASK_NAMES, task

__version__ = "0.1.0"
__all__ = ["FORMS", "REPO", "REVISION", "ROBUSTNESS_METRIC", "TASK_NAMES", "task"]


def _factory(form: str):
    def factory():
        return task(form)

    return factory


@hookimpl
def register_tasks(register):
    register(TASK_NAMES["authors"], _factory("authors"),
             "InstructIR: query text 'instruction [SEP] query' (the authors'); nDCG@10, Robustness@10")
    register(TASK_NAMES["mteb"], _factory("mteb"),
             "InstructIR with MTEB's query text 'query instruction'; nDCG@10, Robustness@10 (exports to MTEB)")


@hookimpl
def register_metrics(register):
    register(ROBUSTNESS_METRIC, lazy("harness_instructir.metric:InstructIRRobustness"),
             "InstructIR Robustness@k: mean over base queries of the min nDCG@k over instruction variants; "
             "group=id (MTEB, default) or text (authors)")
