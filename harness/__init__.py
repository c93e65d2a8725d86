"""harness: evaluation of retrievers, rerankers and LLM judges on instruction-following and
complex-objective retrieval benchmarks.

Importing this package is cheap: no model library or SDK is imported until a component is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "Query": ".query",
    "Document": ".document",
    "Qrels": ".qrels",
    "Run": ".run",
    "Judgment": ".judgment",
    "Judgments": ".judgment",
    "Dataset": ".dataset",
    "Task": ".task",
    "MetricInput": ".components",
    "MetricResult": ".components",
    "hookimpl": ".hookspecs",
    "evaluate": ".api",
    "score": ".api",
    "load_task": ".api",
    "load_dataset": ".api",
    "get_registry": ".plugins",
    "HarnessError": ".errors",
    "DataError": ".errors",
}

if TYPE_CHECKING:  # pragma: no cover
    from .api import evaluate, load_dataset, load_task, score  # noqa: F401
    from .components import MetricInput, MetricResult  # noqa: F401
    from .dataset import Dataset  # noqa: F401
    from .document import Document  # noqa: F401
    from .errors import DataError, HarnessError  # noqa: F401
    from .hookspecs import hookimpl  # noqa: F401
    from .judgment import Judgment, Judgments  # noqa: F401
    from .plugins import get_registry  # noqa: F401
    from .qrels import Qrels  # noqa: F401
    from .query import Query  # noqa: F401
    from .run import Run  # noqa: F401
    from .task import Task  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = sorted(_LAZY)
