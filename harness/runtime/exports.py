"""Lazy exports for the public modules (``harness``, ``harness.llm``, ``harness.formats``...): a
name is imported from the module that defines it on first access, so importing a public module
costs nothing."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(module: str, table: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``table`` (public name -> defining module), caching each
    value in ``namespace`` (the public module's globals)."""

    def __getattr__(name: str) -> Any:
        if name in table:
            value = getattr(importlib.import_module(table[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
