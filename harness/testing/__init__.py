"""Helpers for testing harness and its plugins (public: see docs/api.md).

- :class:`TestServer` / :class:`ScriptedReply`: a loopback LLM server speaking the OpenAI and
  Anthropic protocols, with scripted replies, faults and counters (``harness.testing.llm_server``);
- :func:`isolated_environment`, :func:`shared_data_dir`, :func:`require_data`: a test session of
  its own (cache folder, no downloads, no keys) and the shared benchmark folder or a clear skip;
- :func:`fresh_venv`, :func:`pip`, :func:`build_wheel`: install a plugin the way users do.

Importing this package is light; each helper's module is imported when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "TestServer": ".llm_server", "ScriptedReply": ".llm_server",
    "isolated_environment": ".env", "shared_data_dir": ".env", "require_data": ".env",
    "fresh_venv": ".venv", "pip": ".venv", "build_wheel": ".venv",
}

if TYPE_CHECKING:  # pragma: no cover
    from .env import isolated_environment, require_data, shared_data_dir  # noqa: F401
    from .llm_server import ScriptedReply, TestServer  # noqa: F401
    from .venv import build_wheel, fresh_venv, pip  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness.testing' has no attribute {name!r}")


__all__ = sorted(_LAZY)
