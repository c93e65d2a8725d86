"""The small protocols components implement. Factories registered through the hooks return
objects with these methods; nothing here imports a model or an SDK."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.concepts.dataset import Dataset
from harness.concepts.document import Document
from harness.concepts.judgment import Judgments
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.concepts.run import Run


@runtime_checkable
class Retriever(Protocol):
    """First stage. ``search`` gets each query's text as the task formed it (query and
    instruction joined by the task's ``query_format``)."""

    def index(self, corpus: Mapping[str, Document]) -> None: ...

    def search(self, queries: Mapping[str, str], k: int) -> Run: ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders each query's list. ``queries[qid].text`` is the task-formed text; the raw query
    text is in ``queries[qid].meta["query"]`` and the instruction in ``.instruction`` for
    components that place the instruction separately. The returned run's scores must be strictly
    decreasing (``Run.with_strict_scores``)."""

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run: ...


@runtime_checkable
class Judge(Protocol):
    """Scores (query, document) pairs of a run; how deep it judges is the judge's parameter."""

    def judge(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Judgments: ...


@dataclass
class MetricInput:
    """What a metric sees. Per-mode metrics get one mode at a time; cross-mode metrics get all
    modes (``runs["og"]``, ``runs["changed"]``, ...). Metrics never call models."""

    runs: dict[str, Run]
    qrels: dict[str, Qrels]
    dataset: Dataset
    judgments: dict[str, Judgments] = field(default_factory=dict)


@dataclass
class MetricResult:
    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)


@runtime_checkable
class Metric(Protocol):
    """``names``: the keys this metric puts in ``aggregate``. ``per_mode``: True when it is
    computed separately for each mode's run (nDCG), False when it compares modes (WISE, p-MRR)."""

    names: list[str]
    per_mode: bool

    def compute(self, inp: MetricInput) -> MetricResult: ...


def describe(obj: Any) -> dict[str, Any]:
    """A component's own account of its configuration, for results.json (``config()`` if it has one)."""
    cfg = getattr(obj, "config", None)
    return dict(cfg()) if callable(cfg) else {}
