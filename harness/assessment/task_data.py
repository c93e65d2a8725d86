"""What the assessment commands read of a task: one mode's queries (as components see them), its human
qrels, its corpus, and the grade from which a judgment counts as relevant.

Relevance threshold, per task (``docs/judges.md``): ``--threshold`` when given; else the largest ``rel=N``
the task's default metrics name (``AP(rel=2)``); else 2 for the TREC Deep Learning passage tasks
(``trec-dl19``, ``trec-dl20``: NIST's rule for binary measures, ``trec_eval -l 2``); else 1 (trec_eval's
default: any positive grade is relevant).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.concepts.dataset import Dataset
from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.concepts.task import Task
from harness.context import Context
from harness.evaluation.stages import load_task_dataset, resolve_task, task_queries

#: tasks whose binary relevance starts at grade 2 (TREC DL passage: NIST's ``-l 2``)
GRADE_2_TASKS = frozenset({"trec-dl19", "trec-dl20"})
_REL = re.compile(r"\brel\s*=\s*([0-9]+)")


def relevance_threshold(task: Task, given: float | None = None) -> tuple[float, str]:
    """The grade from which a judgment counts as relevant for ``task``, and where that rule comes from."""
    if given is not None:
        return float(given), "--threshold"
    rels = [int(m.group(1)) for name in task.metrics for m in _REL.finditer(name)]
    if rels:
        return float(max(rels)), f"the task's metrics ({', '.join(n for n in task.metrics if 'rel' in n)})"
    if task.name in GRADE_2_TASKS:
        return 2.0, "TREC DL passage relevance (grade >= 2, trec_eval -l 2)"
    return 1.0, "trec_eval's default (grade >= 1)"


@dataclass
class TaskData:
    """One mode of a task: ``queries`` (task-formed text, raw text in ``meta['query']``), the human
    ``qrels``, the ``corpus`` and the relevance ``threshold`` (with ``threshold_rule``)."""

    task: Task
    dataset: Dataset
    mode: str
    queries: dict[str, Query]
    qrels: Qrels
    threshold: float
    threshold_rule: str

    @property
    def corpus(self) -> dict[str, Document]:
        return self.dataset.corpus

    def describe(self) -> dict[str, object]:
        """The task's account for an output file: name, mode, dataset identity, threshold and its rule."""
        return {"name": self.task.name, "mode": self.mode, "dataset": self.dataset.identity,
                "threshold": self.threshold, "threshold_rule": self.threshold_rule,
                "n_queries": len(self.queries), "n_judgments": self.qrels.n_judgments()}


def load_task_data(context: Context, task_name: str, mode: str | None = None,
                   threshold: float | None = None) -> TaskData:
    """The task's data in ``mode`` (the only mode when None; a dataset of several modes needs one named)."""
    task = resolve_task(context, task_name, None)
    if task.is_suite:
        raise HarnessError(f"{task.name!r} is a suite of {len(task.tasks)} tasks; name one of them: "
                           f"{', '.join(task.tasks)}")
    ds = load_task_dataset(context, task)
    if mode is None:
        if len(ds.modes) != 1:
            raise HarnessError(f"task {task.name!r} has {len(ds.modes)} modes ({', '.join(ds.modes)}), each with "
                               "its own qrels: choose one with --mode")
        mode = ds.modes[0]
    elif mode not in ds.modes:
        raise HarnessError(f"task {task.name!r} has no mode {mode!r}; its modes: {', '.join(ds.modes)}")
    qrels = ds.qrels.get(mode)
    if qrels is None or not len(qrels):
        raise HarnessError(f"task {task.name!r} has no qrels in mode {mode!r}: nothing was judged by people")
    value, rule = relevance_threshold(task, threshold)
    return TaskData(task, ds, mode, task_queries(ds, mode, task.query_format), qrels, value, rule)
