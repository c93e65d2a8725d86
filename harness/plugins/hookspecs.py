"""Plugin hooks. Every ``register_*`` hook receives a ``register(name, factory, description)``
callable; ``factory`` is called only when the component is used, so it must import its heavy
dependencies (torch, an SDK) inside its body, never at module level.

Documented, with an example each, in ``docs/plugin_hooks.md``; a test fails when a hook lacks docs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import pluggy

PROJECT = "harness"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class Register(Protocol):
    def __call__(self, name: str, factory: Callable[..., Any], description: str = "") -> None: ...


@hookspec
def register_datasets(register: Register) -> None:
    """Register dataset loaders: ``factory(**args) -> harness.Dataset``."""


@hookspec
def register_tasks(register: Register) -> None:
    """Register tasks: ``factory() -> harness.Task`` (dataset, modes, default metrics, first stage)."""


@hookspec
def register_retrievers(register: Register) -> None:
    """Register first-stage retrievers: ``factory(**args) -> Retriever`` (``index``, ``search``)."""


@hookspec
def register_rerankers(register: Register) -> None:
    """Register rerankers: ``factory(**args) -> Reranker`` (``rerank``)."""


@hookspec
def register_judges(register: Register) -> None:
    """Register judges: ``factory(**args) -> Judge`` (``judge``)."""


@hookspec
def register_metrics(register: Register) -> None:
    """Register metrics: ``factory(**args) -> Metric`` (``compute``)."""


@hookspec
def register_llm_providers(register: Register) -> None:
    """Register LLM providers: ``factory(**args) -> provider`` used by LLM-backed components."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add click commands to the ``harness`` CLI group ``cli``."""
