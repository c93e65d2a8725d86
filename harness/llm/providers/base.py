"""What a provider is, and helpers shared by the built-in ones.

A provider makes ONE HTTP call per :meth:`Provider.chat` and raises :mod:`harness.served.request_errors` types;
caching, retries, concurrency and usage are the client's job. Plugins register a factory with the
``register_llm_providers`` hook: ``factory(model=..., timeout=..., require_key=..., **spec_args)``.
"""

from __future__ import annotations

import ipaddress
import os
import threading
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from harness.runtime.numbers import MAX_SECONDS, finite_number
from harness.runtime.redact import redact_url
from harness.served.request_errors import (
    AuthError,
    BadRequest,
    ConnectionFailed,
    FatalLLMError,
    LLMError,
    LLMTimeout,
    MalformedReply,
    MissingKey,
    ModelNotFound,
    RateLimited,
    ServerError,
)
from harness.served.retry import parse_retry_after
from harness.served.transport import http_client, http_failure
from harness.served.types import ChatOptions, Message, Reply

DUMMY_KEY = "EMPTY"
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 10.0


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

    def chat(self, messages: list[Message], options: ChatOptions, *, timeout: float | None = None) -> Reply:
        """One HTTP call. ``timeout``: the read timeout for this attempt (the client passes what is
        left of the call's time budget); None: the provider's own."""
        ...


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


def key_source(env_name: str | None, key: str | None) -> str:
    """Where a key came from, for messages (never the key itself)."""
    if key == DUMMY_KEY or not env_name:
        return "nowhere: no key is configured, the dummy key EMPTY was sent (name a variable with api_key_env=VAR)"
    return f"${env_name}"


class BaseProvider:
    """Shared plumbing: endpoint identity, key lookup, timeouts, lazy thread-safe SDK client.

    ``timeout`` is the read timeout (seconds without a byte of the reply), ``connect_timeout`` the
    time allowed to open a connection. ``key_source`` says where the key came from, for messages."""

    name = "base"
    supports_logprobs = False

    def __init__(self, model: str, base_url: str | None, timeout: float = DEFAULT_READ_TIMEOUT,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/") if base_url else None
        # finite seconds (a NaN would pass ``<= 0`` and make every request fail as a transport error)
        self.timeout = finite_number(timeout, "timeout (seconds)", low=0.0, high=MAX_SECONDS, low_open=True)
        self.connect_timeout = finite_number(connect_timeout, "connect_timeout (seconds)", low=0.0,
                                             high=MAX_SECONDS, low_open=True)
        self._api_key: str | None = None
        self.key_source = "no key"
        self._sdk_client: Any = None
        self._http_client: Any = None  # the SDK client's httpx client (sdk_connection)
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the key, nor credentials in the URL
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.public_url!r})"

    @property
    def public_url(self) -> str | None:
        """The base URL with any user info (``user:secret@``) masked: what results and logs show."""
        return redact_url(self.base_url) if self.base_url else None

    def sdk_connection(self, sdk: Any) -> dict[str, Any]:
        """``base_url`` and ``http_client`` for the SDK client: the SDK's own client whose connections
        honour :func:`harness.served.transport.reply_deadline` (a deadline on the whole reply, set by each
        call). Credentials inside the URL (``http://user:secret@host/v1``) are taken out of it and sent
        as HTTP Basic auth, as the URL would have had them sent, so no HTTP log line ever shows them."""
        parts = urlsplit(self.base_url or "")
        if not (parts.username or parts.password):
            self._http_client = http_client(sdk)
            return {"base_url": self.base_url, "http_client": self._http_client}
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port:
            netloc += f":{parts.port}"
        from urllib.parse import unquote, urlunsplit

        auth = (unquote(parts.username or ""), unquote(parts.password or ""))
        self._http_client = http_client(sdk, auth=auth)
        return {"base_url": urlunsplit(parts._replace(netloc=netloc)), "http_client": self._http_client}

    def read_timeout(self, read: float | None = None) -> float:
        """An attempt's timeout: ``read`` (what is left of the call's budget) capped by ``self.timeout``.
        Calls bound their whole reply by it (:func:`harness.served.transport.reply_deadline`)."""
        return self.timeout if read is None else max(0.001, min(float(read), self.timeout))

    def sdk_timeout(self, sdk: Any, read: float | None = None) -> Any:
        """The SDK's timeout object: ``read`` (default: ``self.timeout``) for reading and writing,
        ``connect_timeout`` for connecting."""
        read = self.read_timeout(read)
        return sdk.Timeout(read, connect=min(self.connect_timeout, read))

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

    def sdk_call(self, fn: Any, timeout: float | None = None) -> Any:
        """``fn(sdk_client, sdk_timeout)``: one SDK call (a batch upload, create, poll...), its
        exceptions mapped to the typed errors. ``timeout``: the read timeout (default the provider's)."""
        client = self.client()
        sdk = self._sdk
        try:
            return fn(client, sdk.Timeout(timeout or self.timeout, connect=self.connect_timeout))
        except Exception as exc:
            mapped = map_sdk_error(exc, sdk, self)
            if mapped is None:
                raise
            raise mapped from exc

    def error(self, cls: type[Any], message: str, **kw: Any) -> Any:
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


def error_for_status(provider: BaseProvider, status: int, msg: str, retry_after: float | None = None
                     ) -> LLMError | FatalLLMError:
    """The typed error for an HTTP error status (a direct reply's, or one request's inside a batch):
    401/403 and 404 are fatal, 429/5xx/408 retryable, other 4xx a bad request."""
    if status == 429:
        return provider.error(RateLimited, msg, status=status, retry_after=retry_after)
    if status >= 500:
        return provider.error(ServerError, msg, status=status, retry_after=retry_after)
    if status == 408:
        return provider.error(LLMTimeout, msg, status=status)
    if status in (401, 403):
        what = "the key was rejected" if status == 401 else "the key lacks access"
        return provider.error(AuthError, f"{msg} ({what}; key from {provider.key_source})", status=status)
    if status == 404:
        return provider.error(ModelNotFound, f"{msg} (model {provider.model!r} or its route not found at "
                              f"{provider.public_url})", status=status)
    return provider.error(BadRequest, msg, status=status)


def body_error(exc: BaseException, provider: BaseProvider, timeout: float | None = None) -> LLMError | None:
    """An httpx exception raised while reading a reply's body (after the SDK handed it over) -> our typed
    error (None: not one of them): past the deadline a timeout, a cut reply a connection failure."""
    kind = http_failure(exc)
    if kind == "timeout":
        read = provider.read_timeout(timeout)
        return provider.error(LLMTimeout, f"no reply within {read:g} s (a timeout on the whole reply)")
    if kind == "connection":
        return provider.error(ConnectionFailed, f"connection to {provider.public_url} failed while reading the "
                              f"reply: {type(exc).__name__}: {exc}")
    if kind == "malformed":
        return provider.error(MalformedReply, f"the reply's body cannot be decoded: {exc}")
    return None


def map_sdk_error(exc: BaseException, sdk: Any, provider: BaseProvider, timeout: float | None = None
                  ) -> LLMError | FatalLLMError | None:
    """An openai/anthropic SDK exception -> our typed error (None: not an SDK error). 401/403 and
    404 are fatal (:class:`AuthError`, :class:`ModelNotFound`): no request of the run can succeed."""
    if isinstance(exc, sdk.APITimeoutError):
        read = provider.timeout if timeout is None else min(timeout, provider.timeout)
        return provider.error(LLMTimeout, f"no reply within {read:g} s (a timeout on the whole reply; "
                              f"connect timeout {provider.connect_timeout:g} s)")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return provider.error(ConnectionFailed, f"connection to {provider.public_url} failed: {cause or exc}")
    if isinstance(exc, sdk.APIStatusError):
        headers = getattr(exc.response, "headers", None)
        return error_for_status(provider, exc.status_code, _body_message(exc), parse_retry_after(headers))
    if isinstance(exc, sdk.APIResponseValidationError | ValueError):
        return provider.error(MalformedReply, f"invalid reply body: {exc}")
    return None
