"""Typed LLM errors, in two families.

- :class:`LLMError`: a *transport failure*, one request got no usable reply (HTTP error, timeout,
  connection failure, malformed body, or not sent because its endpoint was taken out). It belongs
  to one request: :meth:`Client.map` returns it in that request's place and the run goes on, but
  the method was not applied there, so the run is INCOMPLETE unless the user accepts a share.
  ``retryable`` ones (429, 5xx, timeouts, connection errors) are retried first.
- :class:`FatalLLMError`: nothing the run sends can succeed (a rejected key, no permission, an
  unknown model, a provider that cannot give what the method needs). It stops the run at once,
  before more calls are sent. It is a :class:`HarnessError` but *not* an :class:`LLMError`, so code
  that handles one request's failure (``except LLMError``) never swallows it.
"""

from __future__ import annotations

from harness.concepts.errors import HarnessError


class _ProviderError(HarnessError):
    """Shared shape: ``provider``, ``model``, ``status`` (HTTP status when there was one), ``detail``
    (the provider's own message)."""

    def __init__(self, message: str, *, provider: str = "", model: str = "", status: int | None = None):
        self.provider, self.model, self.status = provider, model, status
        self.detail = message
        where = f"{provider}:{model}: " if provider and model else (f"{provider}: " if provider else "")
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{where}{code}{message}")

    @property
    def kind(self) -> str:
        """The error's class name, with the HTTP status when there was one (``RateLimited 429``)."""
        return type(self).__name__ + (f" {self.status}" if self.status is not None else "")

    def as_dict(self) -> dict[str, object]:
        """For results files: the error type, status and message (never request headers)."""
        return {"error": type(self).__name__, "status": self.status, "message": str(self)}


class LLMError(_ProviderError):
    """A transport failure: this request got no usable reply."""

    retryable = False
    #: True when the failure says something about the endpoint rather than this one request
    #: (counted by the endpoint's circuit breaker)
    endpoint_level = True


class RateLimited(LLMError):
    """HTTP 429. ``retry_after``: seconds the server asked us to wait, when it said."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw):
        self.retry_after = retry_after
        super().__init__(message, **kw)


class ServerError(LLMError):
    """HTTP 5xx (Anthropic's 529 "overloaded" included)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw):
        self.retry_after = retry_after
        super().__init__(message, **kw)


class LLMTimeout(LLMError):
    """No reply within the read timeout (or HTTP 408)."""

    retryable = True


class ConnectionFailed(LLMError):
    """Could not connect, or the connection dropped. Retried briefly (a refused connection is not
    a rate limit: the long backoff meant for 429s would only hide it)."""

    retryable = True


class BadRequest(LLMError):
    """A 4xx other than 401/403/404/408/429: this request is wrong (too long a prompt, say);
    not retried, and not held against the endpoint."""

    endpoint_level = False


class MalformedReply(LLMError):
    """The provider answered with something that is not a valid reply (an HTML page, a truncated
    body, no choices, no logprobs where they were required)."""


class EndpointUnavailable(LLMError):
    """Not sent: the endpoint was taken out after its first call failed, or after too many
    consecutive failures (see :class:`harness.served.endpoint.Endpoint`)."""


class NotProcessed(LLMError):
    """A provider's batch ended without processing this request (the batch expired, was cancelled or
    failed validation), and the one resubmission did not get it processed either."""


class FatalLLMError(_ProviderError):
    """Stops the run: no request to this endpoint can succeed as configured."""


class AuthError(FatalLLMError):
    """HTTP 401/403: the key is wrong or lacks access."""


class MissingKey(AuthError):
    """No API key: raised when the client is created, before any work starts."""


class ModelNotFound(FatalLLMError):
    """HTTP 404: the model (or the endpoint path) does not exist at this base URL."""


class LogprobsUnsupported(FatalLLMError):
    """Logprobs were required but the provider (Anthropic, or a server without them) gives none.
    Pass ``logprobs="optional"`` to get ``reply.logprobs is None`` and ``reply.fallback`` instead."""


class RunStopped(FatalLLMError):
    """Raised in every other request once one request hit a :class:`FatalLLMError` (``original``)."""

    def __init__(self, message: str, *, original: FatalLLMError | None = None, **kw):
        self.original = original
        super().__init__(message, **kw)


class BatchPending(HarnessError):
    """``--no-wait``: requests were submitted to a provider's batch API (or are still processing) and
    the run stops here; the same command run again collects them and goes on (exit status 75)."""

    exit_code = 75

    def __init__(self, message: str, *, batches: int = 0, requests: int = 0):
        self.batches, self.requests = batches, requests
        super().__init__(message)


__all__ = [
    "LLMError", "RateLimited", "ServerError", "LLMTimeout", "ConnectionFailed", "BadRequest",
    "MalformedReply", "EndpointUnavailable", "NotProcessed", "FatalLLMError", "AuthError", "MissingKey",
    "ModelNotFound", "LogprobsUnsupported", "RunStopped", "BatchPending",
]
