"""What a provider is, and helpers shared by the built-in ones.

A provider makes ONE HTTP call per :meth:`Provider.chat` and raises :mod:`harness.llm.errors` types;
caching, retries, concurrency and usage are the client's job. Plugins register a factory with the
``register_llm_providers`` hook: ``factory(model=..., timeout=..., require_key=..., **spec_args)``.
"""

from __future__ import annotations

import ipaddress
import os
import threading
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from ..errors import (
    AuthError,
    BadRequest,
    ConnectionFailed,
    LLMError,
    LLMTimeout,
    MalformedReply,
    MissingKey,
    RateLimited,
    ServerError,
)
from ..retry import parse_retry_after
from ..types import ChatOptions, Message, Reply

DUMMY_KEY = "EMPTY"


@runtime_checkable
class Provider(Protocol):
    """``name``/``model``/``base_url`` identify the endpoint in cache keys and usage."""

    name: str
    model: str
    base_url: str | None
    supports_logprobs: bool

    def normalize_options(self, options: ChatOptions) -> ChatOptions:
        """Fill provider defaults (so the cache key holds the effective values)."""
        ...

    def chat(self, messages: list[Message], options: ChatOptions) -> Reply: ...


def is_loopback(url: str | None) -> bool:
    if not url:
        return False
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_key(
    provider: str, env_name: str, base_url: str | None, *, require_key: bool, explicit_env: bool = False
) -> str | None:
    """The API key from ``env_name``. A loopback base URL needs none (a dummy is sent) unless the
    user named the variable explicitly; ``require_key=False`` (dry runs) never raises."""
    key = os.environ.get(env_name, "").strip()
    if key:
        return key
    if is_loopback(base_url) and not explicit_env:
        return DUMMY_KEY
    if not require_key:
        return None
    raise MissingKey(
        f"{env_name} is not set: export {env_name}=... (or name another variable with "
        f"api_key_env=VAR in the LLM spec)",
        provider=provider,
    )


class BaseProvider:
    """Shared plumbing: endpoint identity, key lookup, lazy thread-safe SDK client."""

    name = "base"
    supports_logprobs = False

    def __init__(self, model: str, base_url: str | None, timeout: float) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.timeout = float(timeout)
        self._api_key: str | None = None
        self._sdk_client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def normalize_options(self, options: ChatOptions) -> ChatOptions:
        return options

    def client(self) -> Any:
        if self._sdk_client is None:
            with self._lock:
                if self._sdk_client is None:
                    if self._api_key is None:
                        raise LLMError("no API key (dry-run client used for a real call)", provider=self.name)
                    self._sdk_client = self._make_client()
        return self._sdk_client

    def _make_client(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def error(self, cls: type[LLMError], message: str, **kw: Any) -> LLMError:
        return cls(message, provider=self.name, model=self.model, **kw)


def _body_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return str(getattr(exc, "message", None) or exc)


def map_sdk_error(exc: BaseException, sdk: Any, provider: BaseProvider) -> LLMError | None:
    """An openai/anthropic SDK exception -> our typed error (None: not an SDK error)."""
    if isinstance(exc, sdk.APITimeoutError):
        return provider.error(LLMTimeout, f"no reply within {provider.timeout:g} s")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return provider.error(ConnectionFailed, f"connection failed: {cause or exc}")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        msg = _body_message(exc)
        headers = getattr(exc.response, "headers", None)
        if status == 429:
            return provider.error(RateLimited, msg, status=status, retry_after=parse_retry_after(headers))
        if status >= 500:
            return provider.error(ServerError, msg, status=status, retry_after=parse_retry_after(headers))
        if status == 408:
            return provider.error(LLMTimeout, msg, status=status)
        if status in (401, 403):
            return provider.error(AuthError, msg, status=status)
        return provider.error(BadRequest, msg, status=status)
    if isinstance(exc, sdk.APIResponseValidationError | ValueError):
        return provider.error(MalformedReply, f"invalid reply body: {exc}")
    return None
