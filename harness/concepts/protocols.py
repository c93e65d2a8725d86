"""The small protocols components implement. Factories registered through the hooks return
objects with these methods; nothing here imports a model or an SDK.

Required: :class:`Retriever` (``index``, ``search``), :class:`Reranker` (``rerank``), :class:`Judge`
(``judge``), :class:`Metric` (``names``, ``per_mode``, ``compute``). Optional capabilities, each a
protocol the pipeline checks with ``isinstance`` (never by probing attribute names):
:class:`CandidateRetriever` (a first stage over the dataset's given candidate lists),
:class:`QueryObjectRetriever` (a first stage that needs the :class:`Query` objects, not only their
text), :class:`GivenRanking` (a first stage that gives a ranking made elsewhere), :class:`Configurable`
(``config()``, written to results.json) and :class:`Counting`
(``stats()``, written beside it). A factory that declares a ``context`` parameter receives the
evaluation's :class:`harness.Context`.
"""

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
from harness.concepts.uncertainty import Uncertainty


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


@runtime_checkable
class CandidateRetriever(Protocol):
    """A first stage over the dataset's candidate lists (the re-ranking setting of TREC DL,
    NovelEval, BIRCO): the pipeline hands it each mode's candidates (None when the dataset has
    none) before calling ``search``, and never calls ``index``."""

    def set_candidates(self, candidates: Run | None) -> None: ...

    def search(self, queries: Mapping[str, str], k: int) -> Run: ...


@runtime_checkable
class QueryObjectRetriever(Protocol):
    """A first stage that needs more than the query text (a perspective, a root query): the
    pipeline calls ``search_queries`` with the :class:`Query` objects (``text`` task-formed, the raw
    text in ``meta["query"]``) instead of ``search``."""

    def index(self, corpus: Mapping[str, Document]) -> None: ...

    def search_queries(self, queries: Mapping[str, Query], k: int) -> Run: ...


@runtime_checkable
class GivenRanking(Protocol):
    """A first stage whose ranking was made elsewhere (a TREC run file, a fusion of run files):
    ``index`` receives the corpus only to check the ranking's document ids. ``given_depth()``: how deep
    its lists go, the first stage's depth unless the caller gives one (so a run is scored whole, as
    trec_eval scores it); None when it ranks as deep as asked."""

    def index(self, corpus: Mapping[str, Document]) -> None: ...

    def search(self, queries: Mapping[str, str], k: int) -> Run: ...

    def given_depth(self) -> int | None: ...


@runtime_checkable
class Configurable(Protocol):
    """``config()``: the component's own account of its configuration (model identity, prompt
    template hashes, options), written to results.json beside its spec."""

    def config(self) -> Mapping[str, Any]: ...


@runtime_checkable
class Counting(Protocol):
    """``stats()``: what the component counted (texts encoded, cache hits, LLM calls, parse
    failures), written to results.json. LLM-backed components report requests that got no usable
    reply as ``transport_failures`` and ``transport_failures_per_query`` (qid -> count)."""

    def stats(self) -> Mapping[str, Any]: ...


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
    """``aggregate``: name -> value (metrics only); ``per_query``: qid -> name -> value;
    ``uncertainty``: name -> how sure the value is (SE, 95% interval, n, a bootstrap estimate);
    ``details``: counts that are not metrics (queries scored or skipped, positions dropped);
    ``notes``: name -> why the metric has no value (``nan``), in words a table can print."""

    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    uncertainty: dict[str, Uncertainty] = field(default_factory=dict)
    details: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class Metric(Protocol):
    """``names``: the keys this metric puts in ``aggregate``. ``per_mode``: True when it is
    computed separately for each mode's run (nDCG), False when it compares modes (WISE, p-MRR)."""

    names: list[str]
    per_mode: bool

    def compute(self, inp: MetricInput) -> MetricResult: ...


def describe(obj: Any) -> dict[str, Any]:
    """A component's own account of its configuration, for results.json (:class:`Configurable`)."""
    return dict(obj.config()) if isinstance(obj, Configurable) else {}


def counted(obj: Any) -> dict[str, Any] | None:
    """What a component counted (:class:`Counting`), or None."""
    return dict(obj.stats()) if isinstance(obj, Counting) else None
