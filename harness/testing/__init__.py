"""Helpers for testing harness and its plugins (public: see docs/api.md).

- :class:`TestServer` / :class:`ScriptedReply`: a loopback LLM server speaking the OpenAI and
  Anthropic protocols, with scripted replies, faults and counters (``python -m harness.testing.llm_server``);
- :func:`isolated_environment`, :func:`shared_data_dir`, :func:`require_data`: a test session of
  its own (cache folder, no downloads, no keys) and the shared benchmark folder or a clear skip;
- :func:`fresh_venv`, :func:`pip`, :func:`build_wheel`: install a plugin the way users do;
- :func:`requires_plugin`, :func:`skip_without_plugin`, :func:`plugin_missing`: skip a test that needs a
  plugin which is not installed, saying which (never under ``CI=true``);
- :func:`plugin_registry`: a registry of the built-ins plus the plugin modules given, in-process;
- :func:`isolated_context`: a :class:`harness.Context` with its own cache, fast retries, no progress;
- :class:`LlamaServer`: a real llama.cpp server with the packaged Gemma 3 270M (the ``local`` extra);
  :class:`CountingProxy`: a reverse proxy counting what reaches a real server;
- :class:`HubServer`: a loopback imitation of the Hugging Face Hub (for ``HF_ENDPOINT``).
- :func:`parquet_bytes`: a Parquet file's bytes of some records, as a Hub repository holds a shard.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.runtime.exports import lazy_exports

_EXPORTS = MappingProxyType({
    # a loopback LLM server
    "TestServer": "harness.testing.llm_server",
    "ScriptedReply": "harness.testing.llm_server",
    "last_user_text": "harness.testing.llm_server",
    "input_tokens": "harness.testing.llm_server",
    # a test session
    "isolated_environment": "harness.testing.env",
    "shared_data_dir": "harness.testing.env",
    "require_data": "harness.testing.env",
    "plugin_registry": "harness.testing.env",
    "isolated_context": "harness.testing.env",
    # installing a plugin
    "fresh_venv": "harness.testing.venv",
    "pip": "harness.testing.venv",
    "build_wheel": "harness.testing.venv",
    # a test that needs a plugin
    "plugin_missing": "harness.testing.venv",
    "requires_plugin": "harness.testing.venv",
    "skip_without_plugin": "harness.testing.venv",
    # a real model server
    "LlamaServer": "harness.testing.llama",
    "CountingProxy": "harness.testing.proxy",
    # the Hugging Face Hub
    "HubServer": "harness.testing.hub_server",
    "parquet_bytes": "harness.testing.hub_server",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.testing.env import (  # noqa: F401
        isolated_context,
        isolated_environment,
        plugin_registry,
        require_data,
        shared_data_dir,
    )
    from harness.testing.hub_server import HubServer, parquet_bytes  # noqa: F401
    from harness.testing.llama import LlamaServer  # noqa: F401
    from harness.testing.llm_server import ScriptedReply, TestServer, input_tokens, last_user_text  # noqa: F401
    from harness.testing.proxy import CountingProxy  # noqa: F401
    from harness.testing.venv import (  # noqa: F401
        build_wheel,
        fresh_venv,
        pip,
        plugin_missing,
        requires_plugin,
        skip_without_plugin,
    )

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
