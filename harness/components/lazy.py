"""Lazy factories for plugin registration: the module implementing a component is imported only
when the component is created, so loading plugins stays cheap (no torch, no SDK)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy(target: str) -> Callable[..., Any]:
    """``"pkg.module:attr"`` -> a factory that imports ``pkg.module`` on first call and calls ``attr``
    with the component spec's arguments, e.g. ``register("bm25", lazy("harness.retrievers.bm25:BM25Retriever"))``.

    The factory carries ``target`` (the string), ``resolve()`` (import the module and return ``attr``,
    without calling it: how the tests check every target) and ``accepts(name)`` (whether ``attr``
    declares parameter ``name``)."""
    module_name, attr = target.split(":")

    def resolve() -> Any:
        return getattr(importlib.import_module(module_name), attr)

    def factory(**kwargs: Any) -> Any:
        return resolve()(**kwargs)

    def accepts(name: str) -> bool:
        import inspect

        try:
            return name in inspect.signature(resolve()).parameters
        except (TypeError, ValueError):
            return False

    factory.__qualname__ = factory.__name__ = f"lazy[{target}]"
    factory.target = target  # type: ignore[attr-defined]
    factory.accepts = accepts  # type: ignore[attr-defined]
    factory.resolve = resolve  # type: ignore[attr-defined]
    return factory
