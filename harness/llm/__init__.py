"""The LLM access layer: one chat interface over OpenAI, Anthropic and OpenAI-compatible servers,
with a disk cache, retries, bounded concurrency, usage/cost accounting and a dry-run mode.

    from harness.llm import get_client, system, user
    client = get_client("openai:gpt-4o-mini")
    reply = client.chat([system("You rank passages."), user("...")], max_tokens=64)

Importing this package is cheap: no SDK, tenacity or diskcache is imported until first use.
See docs/llm.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    # client and session
    "get_client": ".client", "Client": ".client", "session_usage": ".client", "session_clients": ".client",
    "resolve_provider": ".client", "reset_clients": ".client",
    "configure": ".settings", "current": ".settings", "LLMSettings": ".settings",
    # types
    "Message": ".types", "ChatOptions": ".types", "ChatRequest": ".types", "Reply": ".types",
    "TokenLogprob": ".types", "TopLogprob": ".types", "TokenCounts": ".types",
    "system": ".types", "user": ".types", "assistant": ".types",
    # errors
    "LLMError": ".errors", "RateLimited": ".errors", "ServerError": ".errors", "LLMTimeout": ".errors",
    "ConnectionFailed": ".errors", "BadRequest": ".errors", "AuthError": ".errors", "MissingKey": ".errors",
    "MalformedReply": ".errors", "LogprobsUnsupported": ".errors", "FatalLLMError": ".errors",
    "ModelNotFound": ".errors", "EndpointUnavailable": ".errors", "RunStopped": ".errors",
    "Endpoint": ".endpoint", "session_endpoints": ".client",
    # pieces
    "LLMSpec": ".spec", "parse_llm_spec": ".spec",
    "RetryPolicy": ".retry", "Usage": ".usage", "PriceTable": ".pricing",
    "LLMCache": ".cache", "llm_cache_dir": ".cache", "DryRun": ".dryrun",
}

if TYPE_CHECKING:  # pragma: no cover
    from harness.llm.cache import LLMCache, llm_cache_dir  # noqa: F401
    from harness.llm.client import (  # noqa: F401
        Client,
        get_client,
        reset_clients,
        resolve_provider,
        session_clients,
        session_endpoints,
        session_usage,
    )
    from harness.llm.dryrun import DryRun  # noqa: F401
    from harness.llm.endpoint import Endpoint  # noqa: F401
    from harness.llm.errors import (  # noqa: F401
        AuthError,
        BadRequest,
        ConnectionFailed,
        EndpointUnavailable,
        FatalLLMError,
        LLMError,
        LLMTimeout,
        LogprobsUnsupported,
        MalformedReply,
        MissingKey,
        ModelNotFound,
        RateLimited,
        RunStopped,
        ServerError,
    )
    from harness.llm.pricing import PriceTable  # noqa: F401
    from harness.llm.retry import RetryPolicy  # noqa: F401
    from harness.llm.settings import LLMSettings, configure, current  # noqa: F401
    from harness.llm.spec import LLMSpec, parse_llm_spec  # noqa: F401
    from harness.llm.types import (  # noqa: F401
        ChatOptions,
        ChatRequest,
        Message,
        Reply,
        TokenCounts,
        TokenLogprob,
        TopLogprob,
        assistant,
        system,
        user,
    )
    from harness.llm.usage import Usage  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness.llm' has no attribute {name!r}")


def reset() -> None:
    """Forget clients, usage and settings (tests; between runs in one process)."""
    from harness.llm.client import reset_clients
    from harness.llm.settings import reset_settings

    reset_clients()
    reset_settings()


__all__ = sorted([*_LAZY, "reset"])
