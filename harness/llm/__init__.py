"""The LLM access layer (public: see docs/api.md): one chat interface over OpenAI, Anthropic and
OpenAI-compatible servers, with a disk cache, retries, bounded concurrency, usage/cost accounting,
a failure policy and a dry-run mode.

In a component, ask the evaluation's context for a client (``context.llm.client(spec)``); outside an
evaluation::

    from harness.llm import get_client, system, user
    client = get_client("openai:gpt-4o-mini")
    reply = client.chat([system("You rank passages."), user("...")], max_tokens=64)

Importing this package is cheap: no SDK, tenacity or diskcache is imported until first use.
See docs/llm.md.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.runtime.exports import lazy_exports

_EXPORTS = MappingProxyType({
    # sessions and clients
    "LLMSession": "harness.llm.session",
    "get_client": "harness.llm.session",
    "Client": "harness.llm.client",
    "LLMSettings": "harness.llm.settings",
    "RetryPolicy": "harness.llm.retry",
    "LLMSpec": "harness.llm.spec",
    "parse_llm_spec": "harness.llm.spec",
    # messages, options, replies
    "Message": "harness.llm.types",
    "ChatOptions": "harness.llm.types",
    "ChatRequest": "harness.llm.types",
    "Reply": "harness.llm.types",
    "TokenLogprob": "harness.llm.types",
    "TopLogprob": "harness.llm.types",
    "TokenCounts": "harness.llm.types",
    "system": "harness.llm.types",
    "user": "harness.llm.types",
    "assistant": "harness.llm.types",
    # transport failures (one request)
    "LLMError": "harness.llm.errors",
    "RateLimited": "harness.llm.errors",
    "ServerError": "harness.llm.errors",
    "LLMTimeout": "harness.llm.errors",
    "ConnectionFailed": "harness.llm.errors",
    "BadRequest": "harness.llm.errors",
    "MalformedReply": "harness.llm.errors",
    "EndpointUnavailable": "harness.llm.errors",
    "NotProcessed": "harness.llm.errors",
    # fatal errors (the run stops)
    "FatalLLMError": "harness.llm.errors",
    "AuthError": "harness.llm.errors",
    "MissingKey": "harness.llm.errors",
    "ModelNotFound": "harness.llm.errors",
    "LogprobsUnsupported": "harness.llm.errors",
    "RunStopped": "harness.llm.errors",
    # batch mode
    "BatchPending": "harness.llm.errors",
    # writing a provider
    "Provider": "harness.llm.providers.base",
    "BaseProvider": "harness.llm.providers.base",
    "map_sdk_error": "harness.llm.providers.base",
    "error_for_status": "harness.llm.providers.base",
    "resolve_key": "harness.llm.providers.base",
    # a provider's batch API
    "BatchAPI": "harness.llm.batch.api",
    "BatchCleanup": "harness.llm.batch.api",
    "BatchListing": "harness.llm.batch.api",
    "requests_digest": "harness.llm.batch.api",
    "BatchLimits": "harness.llm.batch.api",
    "RemoteStatus": "harness.llm.batch.api",
    "Unprocessed": "harness.llm.batch.api",
    # pointwise scoring
    "PointwiseScorer": "harness.llm.pointwise",
    "Item": "harness.llm.pointwise",
    "Scored": "harness.llm.pointwise",
    "order_by_scores": "harness.llm.pointwise",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.llm.batch.api import (  # noqa: F401
        BatchAPI,
        BatchCleanup,
        BatchLimits,
        BatchListing,
        RemoteStatus,
        Unprocessed,
        requests_digest,
    )
    from harness.llm.client import Client  # noqa: F401
    from harness.llm.errors import (  # noqa: F401
        AuthError,
        BadRequest,
        BatchPending,
        ConnectionFailed,
        EndpointUnavailable,
        FatalLLMError,
        LLMError,
        LLMTimeout,
        LogprobsUnsupported,
        MalformedReply,
        MissingKey,
        ModelNotFound,
        NotProcessed,
        RateLimited,
        RunStopped,
        ServerError,
    )
    from harness.llm.pointwise import Item, PointwiseScorer, Scored, order_by_scores  # noqa: F401
    from harness.llm.providers.base import BaseProvider, Provider, error_for_status, map_sdk_error, resolve_key  # noqa: F401
    from harness.llm.retry import RetryPolicy  # noqa: F401
    from harness.llm.session import LLMSession, get_client  # noqa: F401
    from harness.llm.settings import LLMSettings  # noqa: F401
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

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
