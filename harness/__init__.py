"""harness: evaluation of retrievers, rerankers and LLM judges on instruction-following and
complex-objective retrieval benchmarks.

Importing this package is cheap: no model library or SDK is imported until a component is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "Query": "harness.concepts.query",
    "Document": "harness.concepts.document",
    "Qrels": "harness.concepts.qrels",
    "Run": "harness.concepts.run",
    "Judgment": "harness.concepts.judgment",
    "Judgments": "harness.concepts.judgment",
    "Dataset": "harness.concepts.dataset",
    "Task": "harness.concepts.task",
    "MetricInput": "harness.concepts.protocols",
    "MetricResult": "harness.concepts.protocols",
    "hookimpl": "harness.plugins.hookspecs",
    "evaluate": "harness.api",
    "score": "harness.api",
    "load_task": "harness.api",
    "load_dataset": "harness.api",
    "get_registry": "harness.plugins.host",
    "HarnessError": "harness.concepts.errors",
    "DataError": "harness.concepts.errors",
}

if TYPE_CHECKING:  # pragma: no cover
    from harness.api import evaluate, load_dataset, load_task, score  # noqa: F401
    from harness.concepts.dataset import Dataset  # noqa: F401
    from harness.concepts.document import Document  # noqa: F401
    from harness.concepts.errors import DataError, HarnessError  # noqa: F401
    from harness.concepts.judgment import Judgment, Judgments  # noqa: F401
    from harness.concepts.protocols import MetricInput, MetricResult  # noqa: F401
    from harness.concepts.qrels import Qrels  # noqa: F401
    from harness.concepts.query import Query  # noqa: F401
    from harness.concepts.run import Run  # noqa: F401
    from harness.concepts.task import Task  # noqa: F401
    from harness.plugins.hookspecs import hookimpl  # noqa: F401
    from harness.plugins.host import get_registry  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = sorted(_LAZY)
