"""Typed LLM errors. ``retryable`` errors (429, 5xx, timeouts, connection errors) are retried by
:mod:`harness.llm.retry`; the others fail at once with the provider's message."""

from __future__ import annotations

from ..errors import HarnessError


class LLMError(HarnessError):
    """A failed LLM call. ``status``: the HTTP status when there was one."""

    retryable = False

    def __init__(self, message: str, *, provider: str = "", model: str = "", status: int | None = None):
        self.provider, self.model, self.status = provider, model, status
        self.detail = message
        where = f"{provider}:{model}: " if provider and model else (f"{provider}: " if provider else "")
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{where}{code}{message}")

    def as_dict(self) -> dict[str, object]:
        """For results files: the error type, status and message (never request headers)."""
        return {"error": type(self).__name__, "status": self.status, "message": str(self)}


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
    """No reply within the client's timeout (or HTTP 408)."""

    retryable = True


class ConnectionFailed(LLMError):
    """Could not connect, or the connection dropped."""

    retryable = True


class BadRequest(LLMError):
    """A 4xx other than 401/403/408/429: the request itself is wrong; not retried."""


class AuthError(LLMError):
    """HTTP 401/403: the key is wrong or lacks access."""


class MissingKey(AuthError):
    """No API key: raised when the client is created, before any work starts."""


class MalformedReply(LLMError):
    """The provider answered with something that is not a valid reply; counted as a failure."""


class LogprobsUnsupported(LLMError):
    """Logprobs were required but the provider (Anthropic, or a server without them) gives none.
    Pass ``logprobs="optional"`` to get ``reply.logprobs is None`` and ``reply.fallback`` instead."""


__all__ = [
    "LLMError", "RateLimited", "ServerError", "LLMTimeout", "ConnectionFailed", "BadRequest",
    "AuthError", "MissingKey", "MalformedReply", "LogprobsUnsupported",
]
