"""Anthropic Messages through the official SDK (``anthropic.Anthropic``), imported on the first call.

System messages go to the ``system`` parameter; ``max_tokens`` (required by the API) defaults to
1024; ``stop`` becomes ``stop_sequences``; sampling fields are sent in the request body; ``seed`` is
not supported by the API and is not sent. Anthropic returns no logprobs: the client raises
:class:`LogprobsUnsupported` before calling, or falls back when ``logprobs="optional"``.

Extended thinking (``thinking_budget=N``, N >= 1024): the request carries ``thinking: {"type": "enabled",
"budget_tokens": N}`` and ``max_tokens`` = N + the answer's cap (``max_tokens`` as set, else 1024: the API
needs ``max_tokens`` above the budget). With thinking on, the API accepts temperature 1 only and ``top_p``
from 0.95 to 1, and no ``top_k``: the temperature is 1 (a typed other value, a typed ``top_p`` below 0.95
or a ``top_k`` is refused before any work). The reply's ``thinking`` blocks are its
:attr:`Reply.reasoning`; only its ``text`` blocks are the answer. ``output_tokens`` include the thinking
tokens (Anthropic bills them as output); ``usage.output_tokens_details.thinking_tokens``, where the reply
has it, says how many.
"""

from __future__ import annotations

import os
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError
from harness.llm.providers.anthropic_batch import AnthropicBatches
from harness.llm.providers.base import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    BaseProvider,
    key_source,
    map_sdk_error,
    resolve_key,
)
from harness.llm.providers.reasoning import refuse_unsupported, require_temperature_one, typed
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
        """The answer's cap (1024 when none is set); with thinking, temperature 1 (the only one the API
        takes then), so the cache key holds what is sent."""
        if options.max_tokens is None:
            options = options.merged(max_tokens=self.default_max_tokens)
        if options.thinking_budget is not None and options.temperature != 1.0:
            options = options.merged(temperature=1.0)
        return options

    def check_settings(self, settings: Any) -> None:
        """Before any work: no ``reasoning_effort`` (OpenAI's); with thinking, no typed temperature other
        than 1, no typed ``top_p`` below 0.95, no ``top_k`` (Anthropic's rules with thinking on)."""
        refuse_unsupported(self.name, settings, ("reasoning_effort",),
                           "Anthropic's extended thinking takes thinking_budget=N (tokens, >= 1024)")
        budget = settings.get("thinking_budget")
        if budget is None or budget.value is None:
            return
        why = f"extended thinking (thinking_budget={budget.value})"
        require_temperature_one(self.name, settings, why)
        top_p = typed(settings, "top_p")
        if top_p is not None and not 0.95 <= float(top_p) <= 1:
            raise HarnessError(f"LLM provider 'anthropic': {why} accepts top_p from 0.95 to 1 only; drop "
                               f"top_p={top_p}")
        extra = typed(settings, "extra") or {}
        if "top_k" in extra:
            raise HarnessError(f"LLM provider 'anthropic': {why} takes no top_k; drop it from extra")

    def _make_client(self) -> Any:
        import anthropic

        self._sdk = anthropic
        return anthropic.Anthropic(
            api_key=self._api_key, **self.sdk_connection(anthropic), max_retries=0, timeout=self.sdk_timeout(anthropic)
        )

    def request_body(self, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
        cap = options.max_tokens or self.default_max_tokens
        body: dict[str, Any] = {"model": self.model, "max_tokens": cap, "messages": turns}
        if options.thinking_budget is not None:  # max_tokens must exceed the budget: the answer's cap on top
            body["thinking"] = {"type": "enabled", "budget_tokens": options.thinking_budget}
            body["max_tokens"] = options.thinking_budget + cap
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
            thoughts = [b.thinking if b.type == "thinking" else "[redacted thinking]" for b in blocks
                        if getattr(b, "type", None) in ("thinking", "redacted_thinking")]
            finish = STOP_REASONS.get(resp.stop_reason, resp.stop_reason)
            counts = _counts(getattr(resp, "usage", None))
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise self.error(MalformedReply, f"unexpected reply shape ({type(exc).__name__}: {exc})") from exc
        reasoning = "\n\n".join(str(t) for t in thoughts) if thoughts else None
        return Reply(text, finish, None, counts, str(resp.model or self.model), self.name, reasoning=reasoning)

    def batch_api(self) -> Any:
        """Message Batches (:class:`harness.llm.providers.anthropic_batch.AnthropicBatches`)."""
        return AnthropicBatches(self)


def _counts(usage: Any) -> TokenCounts:
    """Input and output tokens; the thinking tokens (part of the output) from
    ``output_tokens_details.thinking_tokens`` where the reply has it."""
    details = getattr(usage, "output_tokens_details", None)
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else getattr(details, "thinking_tokens",
                                                                                          None)
    return TokenCounts(int(getattr(usage, "input_tokens", 0) or 0), int(getattr(usage, "output_tokens", 0) or 0),
                       int(thinking or 0))
