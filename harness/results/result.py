"""What an evaluation produced: :class:`EvalResult`, one type for a task and for a suite (whose
members it holds). ``to_dict`` is what results.json holds; ``harness/results/store.py`` writes it with the
schema version and the list of files (``docs/architecture.md``, "Results contract")."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from harness.concepts.dataset import Dataset
from harness.concepts.judgment import Judgments
from harness.concepts.run import Run
from harness.concepts.task import Task
from harness.concepts.uncertainty import Uncertainty
from harness.results.layout import RESULTS, member_folder
from harness.runtime.about import __version__


def _header() -> dict[str, Any]:
    return {"harness_version": __version__, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def uncertainty_dict(uncertainty: dict[str, Uncertainty]) -> dict[str, dict[str, Any]]:
    return {name: u.to_dict() for name, u in uncertainty.items()}


@dataclass
class EvalResult:
    """What one evaluation produced (the only result type): for a task, its metrics, runs,
    judgments and accounts; for a suite, its ``members`` (task name -> their results) and, per
    metric, the unweighted mean over the members that report it. ``to_dict`` is what results.json
    holds.

    ``metrics``: name -> value (metrics only); ``uncertainty``: name -> :class:`Uncertainty` of that
    value; ``metric_details``: counts the metrics report that are not metrics (queries skipped...);
    ``metric_notes``: name -> why a metric has no value."""

    task: Task
    dataset: Dataset | None = None
    components: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)
    judgments: dict[str, Judgments] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    command: list[str] | None = None
    llm_failures: dict[str, Any] = field(default_factory=dict)  # harness.served.failure_policy.failure_report
    uncertainty: dict[str, Uncertainty] = field(default_factory=dict)
    metric_details: dict[str, float] = field(default_factory=dict)
    metric_notes: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)  # the context's plugin and library versions
    members: dict[str, EvalResult] = field(default_factory=dict)  # a suite's member results
    # the first stage's ranking per mode, kept when rerankers changed it (written as run.first_stage.trec)
    first_stage_runs: dict[str, Run] = field(default_factory=dict)
    #: each query's LLM calls, tokens, USD and seconds (``per_query.jsonl``'s field ``llm``;
    #: :mod:`harness.served.query_usage`), for the queries of :attr:`per_query`
    query_llm: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the values of a sweep's combination (``harness eval --sweep``; results.json ``sweep``), else None
    sweep: dict[str, Any] | None = None

    @property
    def is_suite(self) -> bool:
        return bool(self.members)

    @property
    def complete(self) -> bool:
        """False when LLM requests got no usable reply beyond the accepted share (INCOMPLETE); a
        suite is complete when every member is."""
        if self.members:
            return all(r.complete for r in self.members.values())
        return self.llm_failures.get("complete", True)

    @property
    def incomplete_members(self) -> list[str]:
        return [name for name, r in self.members.items() if not r.complete]

    @property
    def per_task(self) -> dict[str, dict[str, float]]:
        """A suite's metrics per member task (a task: its own, under its name)."""
        if not self.members:
            return {self.task.name: self.metrics}
        return {name: r.metrics for name, r in self.members.items()}

    @property
    def per_task_uncertainty(self) -> dict[str, dict[str, Uncertainty]]:
        if not self.members:
            return {self.task.name: self.uncertainty}
        return {name: r.uncertainty for name, r in self.members.items()}

    @property
    def system_components(self) -> dict[str, Any]:
        """The components (for a suite: the first member's; every member runs the same)."""
        return self.components or (next(iter(self.members.values())).components if self.members else {})

    def dataset_dict(self) -> dict[str, Any]:
        if self.dataset is None:
            return {}
        return {
            **self.dataset.identity,
            "name": self.dataset.name,
            "modes": self.dataset.modes,
            "n_docs": len(self.dataset.corpus),
            "n_queries": {m: len(q) for m, q in self.dataset.queries.items()},
            "n_qrels": {m: r.n_judgments() for m, r in self.dataset.qrels.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        if self.members:
            return self._suite_dict()
        return {
            **_header(),
            "status": "complete" if self.complete else "incomplete",
            "command": self.command,
            "task": self.task.as_dict(),
            "components": self.components,
            "versions": self.versions,
            "dataset": self.dataset_dict(),
            "metrics": self.metrics,
            "uncertainty": uncertainty_dict(self.uncertainty),
            "metric_details": self.metric_details,
            "metric_notes": self.metric_notes,
            "counts": self.counts,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "usage": self.usage,
            "llm_failures": self.llm_failures,
            **({"sweep": self.sweep} if self.sweep is not None else {}),
        }

    def _suite_dict(self) -> dict[str, Any]:
        first = next(iter(self.members.values()))
        return {
            **_header(),
            "status": "complete" if self.complete else "incomplete",
            "incomplete_tasks": self.incomplete_members,
            "command": self.command,
            "task": self.task.as_dict(),
            "components": self.system_components,
            "versions": self.versions or first.versions,
            "tasks": {name: {"metrics": r.metrics, "uncertainty": uncertainty_dict(r.uncertainty),
                             "metric_details": r.metric_details, "metric_notes": r.metric_notes,
                             "results": f"{member_folder(name)}/{RESULTS}",
                             "dataset": r.dataset_dict()} for name, r in self.members.items()},
            "metrics": self.metrics,
            "uncertainty": {},
            "aggregation": "unweighted mean over member tasks",
            "usage": self.usage,
            **({"sweep": self.sweep} if self.sweep is not None else {}),
        }
