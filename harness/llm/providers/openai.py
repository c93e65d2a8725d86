"""OpenAI Chat Completions through the official SDK (``openai.OpenAI``), and any OpenAI-compatible
server (vLLM, llama.cpp, Ollama, SGLang) by base URL. The SDK is imported on the first call."""

from __future__ import annotations

import os
import time
from typing import Any

from harness.concepts.errors import HarnessError
from harness.llm.embedding_client import parse_embedding_reply
from harness.llm.providers.base import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    DUMMY_KEY,
    BaseProvider,
    body_error,
    key_source,
    map_sdk_error,
    resolve_key,
)
from harness.llm.providers.completion import body_extra, is_raw, isolated, openai_complete
from harness.llm.providers.openai_batch import EmbeddingBatches, OpenAIBatches
from harness.llm.providers.probe import get_json as _get_json
from harness.llm.providers.probe import probe_server
from harness.llm.providers.reasoning import refuse_unsupported, require_temperature_one, split_think, value
from harness.runtime.extras import require
from harness.served.request_errors import MalformedReply
from harness.served.transport import BadReply, ReplyTooLarge, collect, reply_deadline, reply_json, response_type
from harness.served.types import ChatOptions, Message, Reply, TokenCounts, TokenLogprob, TopLogprob

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIProvider(BaseProvider):
    """``OPENAI_API_KEY`` (or ``api_key_env``) and ``OPENAI_BASE_URL`` are honoured. A loopback
    ``base_url`` needs no key. On api.openai.com ``max_tokens`` is sent as ``max_completion_tokens``
    (required by reasoning models); other servers get ``max_tokens``. ``reasoning_effort`` is sent as
    ``reasoning_effort`` (as is, to OpenAI-compatible servers too: vLLM, SGLang); on api.openai.com a
    reasoning model takes only temperature 1, so with an effort other than ``none`` the temperature is 1
    (a typed other value is refused). The reply's ``message.reasoning_content`` (vLLM, DeepSeek) or
    ``message.reasoning`` is its :attr:`Reply.reasoning`; a content that opens with ``<think>`` (a server
    that runs no reasoning parser) is split there; ``usage.completion_tokens_details.reasoning_tokens``
    counts the reasoning tokens."""

    name = "openai"
    supports_logprobs = True
    key_env = "OPENAI_API_KEY"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        require_key: bool = True,
        organization: str | None = None,
        project: str | None = None,
    ) -> None:
        require("openai", "openai", f"LLM provider {self.name!r}")  # the SDK, checked before any work
        super().__init__(model, base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL, timeout, connect_timeout)
        self.organization, self.project = organization, project
        env = api_key_env or self.key_env
        self._api_key = resolve_key(self.name, env, self.base_url, require_key=require_key,
                                    explicit_env=api_key_env is not None)
        self.key_source = key_source(env, self._api_key)

    @property
    def official(self) -> bool:
        return (self.base_url or "").startswith(OPENAI_URL)

    def _make_client(self) -> Any:
        import openai

        self._sdk = openai
        self._completion_type()  # the reply's type imported now, not inside the first (timed) call
        return openai.OpenAI(
            api_key=self._api_key, **self.sdk_connection(openai), max_retries=0, timeout=self.sdk_timeout(openai),
            organization=self.organization, project=self.project,
        )

    def _effort_on(self, options: ChatOptions) -> bool:
        return self.official and options.reasoning_effort not in (None, "none")

    def normalize_options(self, options: ChatOptions) -> ChatOptions:
        """On api.openai.com, a reasoning effort (other than ``none``) means temperature 1, the only one
        reasoning models accept (so the cache key holds what is sent)."""
        if self._effort_on(options) and options.temperature != 1.0:
            return options.merged(temperature=1.0)
        return options

    def check_settings(self, settings: Any) -> None:
        """Before any work: no ``thinking_budget`` (Anthropic's); on api.openai.com no typed temperature
        other than 1 with a reasoning effort."""
        refuse_unsupported(self.name, settings, ("thinking_budget",),
                           "OpenAI's reasoning models take reasoning_effort=minimal|low|medium|high (pass a "
                           "server's own budget field with extra={...})")
        effort = value(settings, "reasoning_effort")
        if self.official and effort not in (None, "none"):
            require_temperature_one(self.name, settings, f"a reasoning model with reasoning_effort={effort}")

    def request_body(self, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": options.temperature}
        if options.reasoning_effort is not None:
            body["reasoning_effort"] = options.reasoning_effort
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.max_tokens is not None:
            body["max_completion_tokens" if self.official else "max_tokens"] = options.max_tokens
        if options.stop:
            body["stop"] = list(options.stop)
        if options.seed is not None:
            body["seed"] = options.seed
        if options.logprobs:
            body["logprobs"] = True
            if options.top_logprobs:
                body["top_logprobs"] = options.top_logprobs
        return body

    def chat(self, messages: list[Message], options: ChatOptions, *, timeout: float | None = None) -> Reply:
        if is_raw(options):  # POST /v1/completions, the prompt as written: docs/rerankers.md (true-false)
            return openai_complete(self, messages, options, timeout)
        body = self.request_body(messages, options)
        # the body is already plain JSON: posting it skips the SDK's per-request type transform,
        # which cost ~11 ms of CPU for a 44-message RankGPT window (4x the rest of the call)
        with isolated(self, options, timeout) as left:  # a fresh prompt: docs/llm.md (prompt caching)
            resp = self._post("/chat/completions", {**body, **body_extra(self, options)}, self._completion_type(),
                              left)
        try:
            return self._parse(resp, options)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise self.error(MalformedReply, f"unexpected reply shape ({type(exc).__name__}: {exc})") from exc

    def batch_api(self) -> Any:
        """The Batch API (:class:`harness.llm.providers.openai_batch.OpenAIBatches`)."""
        return OpenAIBatches(self)

    # -- the embeddings request kind (:mod:`harness.llm.embedding_client`) ------------------------------
    def embedding_body(self, texts: list[str], dimensions: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        if dimensions is not None:
            body["dimensions"] = int(dimensions)
        return body

    def embed(self, texts: list[str], dimensions: int | None = None, *, timeout: float | None = None) -> Any:
        """One ``POST /embeddings`` of ``texts``: an :class:`~harness.llm.embedding_client.EmbeddingReply`
        (one vector per text, in order). Raises the typed errors as :meth:`chat` does; the reply body is
        read whole within the timeout, bounded and checked
        (:func:`~harness.llm.embedding_client.parse_embedding_reply`)."""
        raw = self._post_raw("/embeddings", self.embedding_body(texts, dimensions), timeout)
        try:
            resp = reply_json(raw)
        except BadReply as exc:
            raise self.error(MalformedReply, f"unexpected embeddings reply: {exc}") from None
        return parse_embedding_reply(self, resp, len(texts))

    def _post(self, path: str, body: dict[str, Any], cast_to: Any, timeout: float | None) -> Any:
        """One POST through the SDK's client, its whole reply within the attempt's timeout; its errors
        mapped to the typed ones (others raised as they are)."""
        client = self.client()
        try:
            with reply_deadline(self.read_timeout(timeout)):
                return client.post(path, body=body, cast_to=cast_to,
                                   options={"timeout": self.sdk_timeout(self._sdk, timeout)})
        except Exception as exc:
            mapped = map_sdk_error(exc, self._sdk, self, timeout)
            if mapped is None:
                raise
            raise mapped from exc

    def _post_raw(self, path: str, body: dict[str, Any], timeout: float | None) -> bytes:
        """:meth:`_post` returning the reply's bytes as they came (at most
        :data:`~harness.served.transport.MAX_REPLY_BYTES`), for a body the harness parses itself."""
        client = self.client()
        try:
            with reply_deadline(self.read_timeout(timeout)):
                resp = client.post(path, body=body, cast_to=response_type(self._http_client), stream=True,
                                   options={"timeout": self.sdk_timeout(self._sdk, timeout)})
                try:
                    return collect(resp.iter_bytes(65536))
                finally:
                    resp.close()
        except ReplyTooLarge as exc:
            raise self.error(MalformedReply, f"unexpected reply: {exc}") from None
        except Exception as exc:
            mapped = map_sdk_error(exc, self._sdk, self, timeout) or body_error(exc, self, timeout)
            if mapped is None:
                raise
            raise mapped from exc

    def embeddings_batch_api(self) -> Any:
        """The Batch API with endpoint ``/v1/embeddings`` (None where :meth:`batch_api` is None)."""
        if self.batch_api() is None:
            return None

        return EmbeddingBatches(self)

    def server_models(self) -> Any:
        """What the server reports at ``GET /models`` (one quick request, its whole reply within 10 s or
        the timeout when shorter; None when it does not answer)."""
        client = self.client()
        try:
            with reply_deadline(self.read_timeout(10.0)):
                return client.get("/models", cast_to=object, options={"timeout": self.sdk_timeout(self._sdk, 10.0)})
        except Exception:  # a probe for the record, never an error
            return None

    @staticmethod
    def _completion_type() -> Any:
        from openai.types.chat import ChatCompletion

        return ChatCompletion

    def _parse(self, resp: Any, options: ChatOptions) -> Reply:
        if isinstance(resp, str | bytes) or not resp.choices:
            raise self.error(MalformedReply, f"reply has no choices: {str(resp)[:200]!r}")
        choice = resp.choices[0]
        msg = choice.message
        text = msg.content or ""
        if not isinstance(text, str):
            raise self.error(MalformedReply, f"message content is {type(text).__name__}, not text")
        reasoning = _reasoning_field(msg)
        if reasoning is None and not self.official:  # <think> in the content: no reasoning parser ran
            text, reasoning = split_think(text)
        finish = choice.finish_reason
        if getattr(msg, "refusal", None) and not text:
            finish = "refusal"
        logprobs, fallback = None, None
        if options.logprobs:
            content = getattr(getattr(choice, "logprobs", None), "content", None)
            if content is None:
                if options.logprobs != "optional":
                    raise self.error(MalformedReply, "logprobs were required but the reply has none "
                                     "(pass logprobs='optional' to accept replies without them)")
                fallback = "no-logprobs"
            else:
                logprobs = [
                    TokenLogprob(t.token, float(t.logprob),
                                 tuple(TopLogprob(a.token, float(a.logprob)) for a in (t.top_logprobs or ())))
                    for t in content
                ]
        model = str(resp.model or self.model)
        return Reply(text, finish, logprobs, _counts(getattr(resp, "usage", None)), model, self.name,
                     fallback=fallback, reasoning=reasoning)


def _counts(usage: Any) -> TokenCounts:
    """Prompt, completion and reasoning tokens (``completion_tokens_details.reasoning_tokens``, part of the
    completion tokens) of a reply's ``usage``."""
    details = getattr(usage, "completion_tokens_details", None)
    if isinstance(details, dict):
        reasoning = details.get("reasoning_tokens")
    else:
        reasoning = getattr(details, "reasoning_tokens", None)
    return TokenCounts(int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0),
                       int(reasoning or 0))


def _reasoning_field(msg: Any) -> str | None:
    """The reasoning a server returned beside the content: ``reasoning_content`` (vLLM, DeepSeek, llama.cpp's
    ``--reasoning-format deepseek``) or ``reasoning`` (vLLM's newer name, OpenRouter); None when neither is
    text. The SDK keeps fields it does not model as extra attributes."""
    for name in ("reasoning_content", "reasoning"):
        found = getattr(msg, name, None)
        if found is None:
            found = (getattr(msg, "model_extra", None) or {}).get(name)
        if isinstance(found, str):
            return found
    return None


class OpenAICompatibleProvider(OpenAIProvider):
    """An OpenAI-compatible server at ``base_url``. Sends no real key unless ``api_key_env`` names
    one (so ``OPENAI_API_KEY`` never goes to a third-party server by accident)."""

    name = "openai-compatible"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        require_key: bool = True,
    ) -> None:
        if not base_url:
            raise HarnessError(
                f"openai-compatible:{model} needs base_url, e.g. "
                f"openai-compatible:{model}:base_url=http://127.0.0.1:8000/v1"
            )
        require("openai", "openai", f"LLM provider {self.name!r}")  # the SDK, checked before any work
        BaseProvider.__init__(self, model, base_url, timeout, connect_timeout)
        self.organization = self.project = None
        if api_key_env:
            self._api_key = resolve_key(self.name, api_key_env, self.base_url,
                                        require_key=require_key, explicit_env=True)
        else:
            self._api_key = DUMMY_KEY
        self.key_source = key_source(api_key_env, self._api_key)
        self._server_kind: str | None = None
        self._slots: int | None = None

    @property
    def official(self) -> bool:
        return False

    def batch_api(self) -> Any:
        """None: an OpenAI-compatible server (vLLM, llama.cpp, Ollama) offers no Batch API."""
        return None

    @property
    def root(self) -> str:
        base = (self.base_url or "").rstrip("/")
        return base[: -len("/v1")] if base.endswith("/v1") else base

    def server_slots(self) -> int | None:
        """How many requests the server runs at once, when it says (one quick GET, asked once):
        llama.cpp's ``llama-server`` reports ``total_slots`` at ``/props``; llama-cpp-python's server
        (its OpenAPI title names llama.cpp) runs one at a time. None: unknown (vLLM, Ollama...)."""
        if self._server_kind is None:
            self._server_kind, self._slots = probe_server(self.root)
        return self._slots

    def wait_idle(self, budget: float | None = None) -> None:
        """After a timed-out request: wait until a llama.cpp server has finished with it, so the retry
        is not queued behind the abandoned generation (llama-cpp-python's server answers a tokenize
        request only once its model is free; ``llama-server`` lists its slots). No-op elsewhere."""
        if not self._server_kind:
            return
        deadline = time.monotonic() + (budget if budget is not None else self.timeout)
        if self._server_kind == "llama-cpp-python":
            _get_json(f"{self.root}/extras/tokenize/count", max(1.0, deadline - time.monotonic()), {"input": "a"})
            return
        while time.monotonic() < deadline:
            slots = _get_json(f"{self.root}/slots", 2.0)
            if not isinstance(slots, list) or not any(isinstance(s, dict) and s.get("is_processing") for s in slots):
                return
            time.sleep(0.25)
