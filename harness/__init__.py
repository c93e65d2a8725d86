"""harness: evaluation of retrievers, rerankers and LLM judges on instruction-following and
complex-objective retrieval benchmarks.

This module is the main public surface (docs/api.md): the data model, the component protocols,
the errors, the context of an evaluation, what plugins register with, and the Python API. The other
public modules are ``harness.llm``, ``harness.formats``, ``harness.metrics``,
``harness.retrievers.dense``, ``harness.testing`` and ``harness.cli``. Importing any of them is cheap:
no model library or SDK is imported until a component is used.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.runtime.about import __version__  # noqa: F401 (the package's version, for users)
from harness.runtime.exports import lazy_exports

_EXPORTS = MappingProxyType({
    # the data model
    "Query": "harness.concepts.query",
    "format_query": "harness.concepts.query",
    "Document": "harness.concepts.document",
    "Qrels": "harness.concepts.qrels",
    "Run": "harness.concepts.run",
    "Judgment": "harness.concepts.judgment",
    "Judgments": "harness.concepts.judgment",
    "Dataset": "harness.concepts.dataset",
    "Task": "harness.concepts.task",
    "DataFile": "harness.concepts.task",
    "Uncertainty": "harness.concepts.uncertainty",
    # component protocols
    "Retriever": "harness.concepts.protocols",
    "Reranker": "harness.concepts.protocols",
    "Judge": "harness.concepts.protocols",
    "Metric": "harness.concepts.protocols",
    "MetricInput": "harness.concepts.protocols",
    "MetricResult": "harness.concepts.protocols",
    "CandidateRetriever": "harness.concepts.protocols",
    "QueryObjectRetriever": "harness.concepts.protocols",
    "Configurable": "harness.concepts.protocols",
    "Counting": "harness.concepts.protocols",
    "GivenRanking": "harness.concepts.protocols",
    # errors
    "HarnessError": "harness.concepts.errors",
    "DataError": "harness.concepts.errors",
    # the context of an evaluation
    "Context": "harness.context",
    "ComponentContext": "harness.concepts.component_context",
    "DataFolder": "harness.data.folder",
    "ProgressSettings": "harness.runtime.progress",
    "progress": "harness.runtime.progress",
    # registering components
    "hookimpl": "harness.plugins.hookspecs",
    "lazy": "harness.components.lazy",
    "PluginHost": "harness.plugins.host",
    # the Python API
    "evaluate": "harness.api",
    "evaluate_sweep": "harness.api",
    "score": "harness.api",
    "load_task": "harness.api",
    "load_dataset": "harness.api",
    "list_plugins": "harness.api",
    "build_index": "harness.api",
    "index_info": "harness.api",
    "verify_index": "harness.api",
    "evaluate_runs": "harness.api",
    "fuse_runs": "harness.api",
    "task_queries": "harness.evaluation.stages",
    "EvalResult": "harness.results.result",
    "EvalOptions": "harness.evaluation.options",
    "render_table": "harness.results.table",
    "read_results": "harness.results.store",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.api import (  # noqa: F401
        build_index,
        evaluate,
        evaluate_runs,
        evaluate_sweep,
        fuse_runs,
        index_info,
        list_plugins,
        load_dataset,
        load_task,
        score,
        verify_index,
    )
    from harness.components.lazy import lazy  # noqa: F401
    from harness.concepts.dataset import Dataset  # noqa: F401
    from harness.concepts.document import Document  # noqa: F401
    from harness.concepts.errors import DataError, HarnessError  # noqa: F401
    from harness.concepts.judgment import Judgment, Judgments  # noqa: F401
    from harness.concepts.protocols import (  # noqa: F401
        CandidateRetriever,
        Configurable,
        Counting,
        GivenRanking,
        Judge,
        Metric,
        MetricInput,
        MetricResult,
        QueryObjectRetriever,
        Reranker,
        Retriever,
    )
    from harness.concepts.qrels import Qrels  # noqa: F401
    from harness.concepts.query import Query, format_query  # noqa: F401
    from harness.concepts.run import Run  # noqa: F401
    from harness.concepts.task import DataFile, Task  # noqa: F401
    from harness.concepts.uncertainty import Uncertainty  # noqa: F401
    from harness.context import Context  # noqa: F401
    from harness.data.folder import DataFolder  # noqa: F401
    from harness.evaluation.options import EvalOptions  # noqa: F401
    from harness.evaluation.stages import task_queries  # noqa: F401
    from harness.plugins.hookspecs import hookimpl  # noqa: F401
    from harness.plugins.host import PluginHost  # noqa: F401
    from harness.results.result import EvalResult  # noqa: F401
    from harness.results.store import read_results  # noqa: F401
    from harness.results.table import render_table  # noqa: F401
    from harness.runtime.progress import ProgressSettings, progress  # noqa: F401

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)  # and __version__ (harness.runtime.about)
