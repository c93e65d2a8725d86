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
    "get_client": "harness.context",  # documented here; a context from the environment
    "Client": "harness.llm.client",
    "LLMSettings": "harness.served.settings",
    "DEFAULT_MAX_CONCURRENCY": "harness.served.settings",
    "PriceTable": "harness.served.pricing",
    "RetryPolicy": "harness.served.retry",
    "LLMSpec": "harness.llm.spec",
    "parse_llm_spec": "harness.llm.spec",
    # messages, options, replies
    "Message": "harness.served.types",
    "ChatOptions": "harness.served.types",
    "ChatRequest": "harness.served.types",
    "Reply": "harness.served.types",
    "TokenLogprob": "harness.served.types",
    "TopLogprob": "harness.served.types",
    "TokenCounts": "harness.served.types",
    "system": "harness.served.types",
    "user": "harness.served.types",
    "assistant": "harness.served.types",
    # transport failures (one request)
    "LLMError": "harness.served.request_errors",
    "RateLimited": "harness.served.request_errors",
    "ServerError": "harness.served.request_errors",
    "LLMTimeout": "harness.served.request_errors",
    "ConnectionFailed": "harness.served.request_errors",
    "BadRequest": "harness.served.request_errors",
    "MalformedReply": "harness.served.request_errors",
    "EndpointUnavailable": "harness.served.request_errors",
    "NotProcessed": "harness.served.request_errors",
    # fatal errors (the run stops)
    "FatalLLMError": "harness.served.request_errors",
    "AuthError": "harness.served.request_errors",
    "MissingKey": "harness.served.request_errors",
    "ModelNotFound": "harness.served.request_errors",
    "LogprobsUnsupported": "harness.served.request_errors",
    "RunStopped": "harness.served.request_errors",
    # batch mode
    "BatchPending": "harness.served.request_errors",
    # the failure policy and usage, as the CLI prints them
    "EXIT_INCOMPLETE": "harness.served.failure_policy",
    "banner": "harness.served.failure_policy",
    "usage_table": "harness.served.usage",
    # managing the reply cache and the batch journal (`harness cache`, `harness batch`)
    "cache_path": "harness.llm.cache_admin",
    "cache_info": "harness.llm.cache_admin",
    "CacheInfo": "harness.llm.cache_admin",
    "clear_cache": "harness.llm.cache_admin",
    "ClearedCache": "harness.llm.cache_admin",
    "explain_cache_miss": "harness.llm.cache_admin",
    "Batches": "harness.llm.batches",
    "BatchStatus": "harness.llm.batches",
    "CollectOutcome": "harness.llm.batches",
    "CancelOutcome": "harness.llm.batches",
    "CleanOutcome": "harness.llm.batches",
    "endpoint_allowed": "harness.llm.batches",
    "BatchRecord": "harness.served.batch.journal",
    # writing a provider
    "Provider": "harness.llm.providers.base",
    "BaseProvider": "harness.llm.providers.base",
    "map_sdk_error": "harness.llm.providers.base",
    "error_for_status": "harness.llm.providers.base",
    "resolve_key": "harness.llm.providers.base",
    # a provider's batch API
    "BatchAPI": "harness.served.batch.protocol",
    "BatchCleanup": "harness.served.batch.protocol",
    "BatchListing": "harness.served.batch.protocol",
    "requests_digest": "harness.served.batch.protocol",
    "BatchLimits": "harness.served.batch.protocol",
    "RemoteStatus": "harness.served.batch.protocol",
    "Unprocessed": "harness.served.batch.protocol",
    # pointwise scoring
    "PointwiseScorer": "harness.llm.pointwise",
    "Item": "harness.llm.pointwise",
    "Scored": "harness.llm.pointwise",
    "order_by_scores": "harness.llm.pointwise",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.llm.batches import (  # noqa: F401
        Batches,
        BatchStatus,
        CancelOutcome,
        CleanOutcome,
        CollectOutcome,
        endpoint_allowed,
    )
    from harness.llm.cache_admin import (  # noqa: F401
        CacheInfo,
        ClearedCache,
        cache_info,
        cache_path,
        clear_cache,
        explain_cache_miss,
    )
    from harness.llm.client import Client  # noqa: F401
    from harness.llm.pointwise import Item, PointwiseScorer, Scored, order_by_scores  # noqa: F401
    from harness.llm.providers.base import BaseProvider, Provider, error_for_status, map_sdk_error, resolve_key  # noqa: F401
    from harness.llm.session import LLMSession  # noqa: F401
    from harness.llm.spec import LLMSpec, parse_llm_spec  # noqa: F401
    from harness.served.batch.journal import BatchRecord  # noqa: F401
    from harness.served.batch.protocol import (  # noqa: F401
        BatchAPI,
        BatchCleanup,
        BatchLimits,
        BatchListing,
        RemoteStatus,
        Unprocessed,
        requests_digest,
    )
    from harness.served.failure_policy import EXIT_INCOMPLETE, banner  # noqa: F401
    from harness.served.pricing import PriceTable  # noqa: F401
    from harness.served.request_errors import (  # noqa: F401
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
    from harness.served.retry import RetryPolicy  # noqa: F401
    from harness.served.settings import DEFAULT_MAX_CONCURRENCY, LLMSettings  # noqa: F401
    from harness.served.types import (  # noqa: F401
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
    from harness.served.usage import usage_table  # noqa: F401

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
