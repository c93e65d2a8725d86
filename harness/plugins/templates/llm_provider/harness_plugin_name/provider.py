"""The LLM provider: one HTTP POST per call to an OpenAI-shaped `/chat/completions` endpoint, with
the standard library only (no SDK). Adapt `request_body` and `parse` to your API.

A provider makes ONE request per `chat()` and raises the typed errors of `harness.llm`; the client
around it does caching, retries (of `RateLimited`, `ServerError`, `LLMTimeout`, `ConnectionFailed`),
concurrency, usage and dry runs. `AuthError`, `ModelNotFound` and `MissingKey` stop the run.
"""

from __future__ import annotations

import ipaddress
import json
import os
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from harness.llm import (
    AuthError,
    BadRequest,
    ChatOptions,
    ConnectionFailed,
    LLMTimeout,
    MalformedReply,
    Message,
    MissingKey,
    ModelNotFound,
    RateLimited,
    Reply,
    ServerError,
    TokenCounts,
)

from . import KEY_ENV, NAME, URL_ENV

DEFAULT_URL = "https://api.example.com/v1"  # your API's base URL


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HttpChatProvider:
    """What the client needs: `name`, `model`, `base_url`, `supports_logprobs`,
    `normalize_options(options)` and `chat(messages, options, *, timeout=None) -> Reply`.

    The factory gets `model`, `require_key` (False in dry runs), `timeout` and `connect_timeout`,
    `base_url` when the spec has one, and the spec's other arguments (`max_tokens=256` in a spec is a
    chat option, not a provider argument)."""

    name = NAME
    supports_logprobs = False

    def __init__(self, model: str, base_url: str | None = None, require_key: bool = True, timeout: float = 60.0,
                 connect_timeout: float = 10.0, default_max_tokens: int = 512):
        self.model = model
        self.base_url = (base_url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        self.timeout, self.connect_timeout = float(timeout), float(connect_timeout)
        self.default_max_tokens = int(default_max_tokens)
        self._key = os.environ.get(KEY_ENV, "").strip() or None
        if self._key is None and require_key and not _loopback(self.base_url):
            # raised when the component is created, before any work starts
            raise MissingKey(f"{KEY_ENV} is not set: export {KEY_ENV}=...", provider=self.name)

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def normalize_options(self, options: ChatOptions) -> ChatOptions:
        """Fill this provider's defaults, so the cache key holds the values in effect."""
        return options if options.max_tokens is not None else options.merged(max_tokens=self.default_max_tokens)

    def request_body(self, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": options.temperature,
                                "max_tokens": options.max_tokens}
        if options.stop:
            body["stop"] = list(options.stop)
        if options.seed is not None:
            body["seed"] = options.seed
        return body

    def parse(self, data: dict[str, Any]) -> Reply:
        try:
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            return Reply(text=choice["message"]["content"] or "", finish_reason=choice.get("finish_reason"),
                         usage=TokenCounts(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
                         model=data.get("model") or self.model, provider=self.name)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise MalformedReply(f"unexpected reply body: {exc!r}", provider=self.name, model=self.model) from exc

    def chat(self, messages: list[Message], options: ChatOptions, *, timeout: float | None = None) -> Reply:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", method="POST", headers=headers,
                                         data=json.dumps(self.request_body(messages, options)).encode())
        read = self.timeout if timeout is None else min(float(timeout), self.timeout)
        where = {"provider": self.name, "model": self.model}
        try:
            with urllib.request.urlopen(request, timeout=read) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            status, message = exc.code, exc.read().decode("utf-8", "replace")[:500]
            retry_after = exc.headers.get("Retry-After")
            if status == 429:
                seconds = float(retry_after) if retry_after and retry_after.isdigit() else None
                raise RateLimited(message, status=status, retry_after=seconds, **where) from None
            if status >= 500:
                raise ServerError(message, status=status, **where) from None
            if status in (401, 403):
                raise AuthError(f"{message} (key from ${KEY_ENV})", status=status, **where) from None
            if status == 404:
                raise ModelNotFound(message, status=status, **where) from None
            raise BadRequest(message, status=status, **where) from None
        except TimeoutError:  # socket.timeout too
            raise LLMTimeout(f"no reply within {read:g} s", **where) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ConnectionFailed(f"connection to {self.base_url} failed: {exc}", **where) from None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise MalformedReply(f"reply is not JSON: {exc}", **where) from None
        return self.parse(data)
