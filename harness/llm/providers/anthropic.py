"""Anthropic Messages through the official SDK (``anthropic.Anthropic``), imported on the first call.

System messages go to the ``system`` parameter; ``max_tokens`` (required by the API) defaults to
1024; ``stop`` becomes ``stop_sequences``; sampling fields are sent in the request body; ``seed`` is
not supported by the API and is not sent. Anthropic returns no logprobs: the client raises
:class:`LogprobsUnsupported` before calling, or falls back when ``logprobs="optional"``.
"""

from __future__ import annotations

import os
from types import MappingProxyType
from typing import Any

from harness.llm.providers.anthropic_batch import AnthropicBatches
from harness.llm.providers.base import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    BaseProvider,
    key_source,
    map_sdk_error,
    resolve_key,
)
from harness.runtime.extras import require
from harness.served.request_errors import MalformedReply
from harness.served.transport import reply_deadline
from harness.served.types import ChatOptions, Message, Reply, TokenCounts

ANTHROPIC_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 1024
STOP_REASONS = MappingProxyType({"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                                 "refusal": "refusal", "tool_use": "tool_calls", "pause_turn": "pause"})


class AnthropicProvider(BaseProvider):
    """``ANTHROPIC_API_KEY`` (or ``api_key_env``) and ``ANTHROPIC_BASE_URL`` are honoured."""

    name = "anthropic"
    supports_logprobs = False

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        require_key: bool = True,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        require("anthropic", "anthropic", f"LLM provider {self.name!r}")  # the SDK, checked before any work
        super().__init__(model, base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL, timeout,
                         connect_timeout)
        self.default_max_tokens = int(max_tokens)
        env = api_key_env or "ANTHROPIC_API_KEY"
        self._api_key = resolve_key(self.name, env, self.base_url, require_key=require_key,
                                    explicit_env=api_key_env is not None)
        self.key_source = key_source(env, self._api_key)

    def normalize_options(self, options: ChatOptions) -> ChatOptions:
        if options.max_tokens is None:
            return options.merged(max_tokens=self.default_max_tokens)
        return options

    def _make_client(self) -> Any:
        import anthropic

        self._sdk = anthropic
        return anthropic.Anthropic(
            api_key=self._api_key, **self.sdk_connection(anthropic), max_retries=0, timeout=self.sdk_timeout(anthropic)
        )

    def request_body(self, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": options.max_tokens or self.default_max_tokens,
            "messages": turns,
        }
        if system:
            body["system"] = system
        if options.stop:
            body["stop_sequences"] = list(options.stop)
        # sampling fields travel in the body: recent SDKs dropped them from the signature
        extra: dict[str, Any] = {"temperature": options.temperature}
        if options.top_p is not None:
            extra["top_p"] = options.top_p
        extra.update(options.extra)
        body["extra_body"] = extra
        return body

    def chat(self, messages: list[Message], options: ChatOptions, *, timeout: float | None = None) -> Reply:
        client = self.client()
        body = self.request_body(messages, options)
        try:
            with reply_deadline(self.read_timeout(timeout)):  # the whole reply within the attempt's timeout
                resp = client.messages.create(**body, timeout=self.sdk_timeout(self._sdk, timeout))
        except Exception as exc:
            mapped = map_sdk_error(exc, self._sdk, self, timeout)
            if mapped is None:
                raise
            raise mapped from exc
        return self._parse(resp)

    def _parse(self, resp: Any) -> Reply:
        """A :class:`Reply` from a Messages API message (a direct reply, or one inside a batch)."""
        try:
            if isinstance(resp, str | bytes):
                raise self.error(MalformedReply, f"reply is not a message: {str(resp)[:200]!r}")
            blocks = resp.content
            if blocks is None:
                raise self.error(MalformedReply, "reply has no content")
            text = "".join(b.text for b in blocks if getattr(b, "type", None) == "text")
            finish = STOP_REASONS.get(resp.stop_reason, resp.stop_reason)
            usage = getattr(resp, "usage", None)
            counts = TokenCounts(int(getattr(usage, "input_tokens", 0) or 0),
                                 int(getattr(usage, "output_tokens", 0) or 0))
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise self.error(MalformedReply, f"unexpected reply shape ({type(exc).__name__}: {exc})") from exc
        return Reply(text, finish, None, counts, str(resp.model or self.model), self.name)

    def batch_api(self) -> Any:
        """Message Batches (:class:`harness.llm.providers.anthropic_batch.AnthropicBatches`)."""
        return AnthropicBatches(self)
