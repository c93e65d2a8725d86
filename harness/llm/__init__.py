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
    "DEFAULT_MAX_CONCURRENCY": "harness.llm.settings",
    "PriceTable": "harness.llm.pricing",
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
    # the failure policy and usage, as the CLI prints them
    "EXIT_INCOMPLETE": "harness.llm.failures",
    "banner": "harness.llm.failures",
    "usage_table": "harness.llm.usage",
    # managing the reply cache and the batch journal (`harness cache`, `harness batch`)
    "cache_path": "harness.llm.manage",
    "cache_info": "harness.llm.manage",
    "CacheInfo": "harness.llm.manage",
    "clear_cache": "harness.llm.manage",
    "ClearedCache": "harness.llm.manage",
    "explain_cache_miss": "harness.llm.manage",
    "Batches": "harness.llm.batch.manage",
    "BatchStatus": "harness.llm.batch.manage",
    "CollectOutcome": "harness.llm.batch.manage",
    "CancelOutcome": "harness.llm.batch.manage",
    "CleanOutcome": "harness.llm.batch.manage",
    "endpoint_allowed": "harness.llm.batch.manage",
    "BatchRecord": "harness.llm.batch.journal",
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
    from harness.llm.batch.journal import BatchRecord  # noqa: F401
    from harness.llm.batch.manage import (  # noqa: F401
        Batches,
        BatchStatus,
        CancelOutcome,
        CleanOutcome,
        CollectOutcome,
        endpoint_allowed,
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
    from harness.llm.failures import EXIT_INCOMPLETE, banner  # noqa: F401
    from harness.llm.manage import (  # noqa: F401
        CacheInfo,
        ClearedCache,
        cache_info,
        cache_path,
        clear_cache,
        explain_cache_miss,
    )
    from harness.llm.pointwise import Item, PointwiseScorer, Scored, order_by_scores  # noqa: F401
    from harness.llm.pricing import PriceTable  # noqa: F401
    from harness.llm.providers.base import BaseProvider, Provider, error_for_status, map_sdk_error, resolve_key  # noqa: F401
    from harness.llm.retry import RetryPolicy  # noqa: F401
    from harness.llm.session import LLMSession, get_client  # noqa: F401
    from harness.llm.settings import DEFAULT_MAX_CONCURRENCY, LLMSettings  # noqa: F401
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
    from harness.llm.usage import usage_table  # noqa: F401

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
