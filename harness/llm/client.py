"""The one chat interface every LLM-backed component uses.

    client = harness.llm.get_client("openai:gpt-4o-mini")          # in the component's __init__
    reply = client.chat([system("..."), user("...")], max_tokens=50)
    replies = client.map(requests)                                 # independent calls, concurrent
    results = client.run_sequences(rank_one_query, queries)        # sequential per item, parallel across

Order of work in :meth:`Client.chat`: cache lookup -> (dry run: placeholder) -> claim the request
(another thread or process sending the same one: wait for its reply) -> the endpoint's first-call
gate and circuit breaker -> HTTP attempts under the endpoint's concurrency bound, with retries
inside the call's time budget -> usage -> cache write (at once, before returning).

In batch mode (a :class:`~harness.served.batch.runner.BatchRunner`), the requests of a stage that no
cache holds go out together through the provider's batch API instead: every request of one
:meth:`Client.map`, each round of :meth:`Client.run_sequences`, a lone :meth:`Client.chat` alone.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from harness.runtime.progress import ProgressSettings
from harness.runtime.redact import redact_url
from harness.served.batch.protocol import Pending
from harness.served.batch.rounds import Rounds, deliver
from harness.served.dryrun import DryRun, placeholder
from harness.served.endpoint import Endpoint, guarded_call
from harness.served.pool import bounded_map
from harness.served.precedence import Setting, apply_typed
from harness.served.precedence import describe as describe_settings
from harness.served.reply_cache import CACHE_FORMAT, LLMCache, key_of
from harness.served.request_errors import FatalLLMError, LLMError, LLMTimeout, LogprobsUnsupported, RunStopped
from harness.served.retry import RetryPolicy
from harness.served.types import ChatOptions, ChatRequest, Message, Messages, Reply, normalize_messages
from harness.served.usage import Usage

if TYPE_CHECKING:
    from harness.served.batch.runner import BatchRunner

T = TypeVar("T")
R = TypeVar("R")
log = logging.getLogger("harness.llm")


class ChatFn(Protocol):
    def __call__(
        self, messages: Messages, options: ChatOptions | None = None, /, **overrides: Any
    ) -> Reply: ...


class Client:
    """Chat with one provider endpoint and model; owns its concurrency bound and usage counters."""

    def __init__(
        self,
        provider: Any,
        *,
        cache: LLMCache | None = None,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
        usage: Usage | None = None,
        dry_run: bool | DryRun = False,
        defaults: ChatOptions | Mapping[str, Any] | None = None,
        spec: str | None = None,
        endpoint: Endpoint | None = None,
        progress: ProgressSettings | None = None,
        batch: BatchRunner | bool | None = None,
        pinned: Mapping[str, Any] | None = None,
        settings: Mapping[str, Setting] | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.provider = provider
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.max_concurrency = int(max_concurrency)
        self.dry_run: DryRun | None = None
        if dry_run:
            self.dry_run = dry_run if isinstance(dry_run, DryRun) else DryRun()
        self.usage = usage or Usage(dry_run=self.dry_run is not None)
        if isinstance(defaults, ChatOptions):
            self.defaults = defaults
        else:
            self.defaults = ChatOptions().merged(**dict(defaults or {}))
        self.label = f"{provider.name}:{provider.model}"
        self.spec = redact_url(spec or self.label)
        self.endpoint = endpoint or Endpoint(self.label, self.max_concurrency)
        self.progress = progress
        try:
            self._timeout_arg = "timeout" in inspect.signature(provider.chat).parameters
        except (TypeError, ValueError):
            self._timeout_arg = False
        self._dry_seen: set[str] = set()
        self._dry_lock = threading.Lock()
        #: batch mode: a :class:`BatchRunner` (True in a dry run: stages are counted, nothing is sent)
        self.batch = batch or None
        #: every call (:meth:`chat`, each request of :meth:`map`, each call of :meth:`run_sequences`), one row
        #: each (:func:`call_row`): the query it was made for (a :meth:`run_sequences` item that is a query id,
        #: ``map(..., query_ids=...)``, :meth:`attributed`; None: no query), its cache key, whether the cache
        #: answered, its error, reasoning, tokens, USD and seconds; ``llm_calls.jsonl`` and the per-query
        #: accounting (``per_query.jsonl``) are made of it
        self.call_log: list[dict[str, Any]] = []
        self._log_lock = threading.Lock()
        self._query = threading.local()  # the query this thread's calls are made for
        #: chat options the user chose (spec arguments) that a request's own options do not override
        self.pinned = dict(pinned or {})
        #: every setting's value and where it came from (:mod:`harness.served.precedence`), for results.json
        self.settings = dict(settings or {})

    def __repr__(self) -> str:
        dry = self.dry_run is not None
        batch = ", batch=True" if self.batch is not None else ""
        return f"Client({self.spec!r}, max_concurrency={self.max_concurrency}, dry_run={dry}{batch})"

    # -- request preparation ---------------------------------------------------------------
    def options(self, options: ChatOptions | None = None, **overrides: Any) -> ChatOptions:
        """The client's defaults (or ``options``) with ``overrides`` applied, then the options the user
        chose (:attr:`pinned`) put back: a component's per-request options are its defaults."""
        base = options if options is not None else self.defaults
        opts = base.merged(**overrides) if overrides else base
        return apply_typed(opts, self.pinned) if opts is not self.defaults else opts

    def _prepare(self, messages: Messages, options: ChatOptions | None, overrides: dict[str, Any]
                 ) -> tuple[list[Message], ChatOptions, str | None, dict[str, Any]]:
        msgs = normalize_messages(messages)
        opts = self.provider.normalize_options(self.options(options, **overrides))
        fallback = None
        if opts.logprobs and not getattr(self.provider, "supports_logprobs", False):
            if opts.logprobs != "optional":
                raise LogprobsUnsupported(
                    "this provider returns no logprobs; pass logprobs='optional' to get replies without "
                    "them (reply.fallback == 'no-logprobs')",
                    provider=self.provider.name, model=self.provider.model,
                )
            opts, fallback = opts.merged(logprobs=False, top_logprobs=0), "no-logprobs"
        return msgs, opts, fallback, self._payload(msgs, opts)

    def _payload(self, msgs: list[Message], opts: ChatOptions) -> dict[str, Any]:
        base_url = getattr(self.provider, "base_url", None)
        return {
            "v": CACHE_FORMAT,
            "provider": self.provider.name,
            # a provider whose model name is only a label (a GGUF's file name) keys on the weights instead
            "model": getattr(self.provider, "key_model", self.provider.model),
            "base_url": redact_url(base_url) if base_url else None,  # credentials in a URL never enter a key
            "options": opts.key_dict(),
            "messages": msgs,
        }

    def key_payload(self, messages: Messages, options: ChatOptions | None = None, **overrides: Any
                    ) -> dict[str, Any]:
        """What the cache key of this request is made of (no API key, ever)."""
        return self._prepare(messages, options, overrides)[3]

    def cache_key(self, messages: Messages, options: ChatOptions | None = None, **overrides: Any) -> str:
        return key_of(self.key_payload(messages, options, **overrides))

    def explain_miss(self, messages: Messages, options: ChatOptions | None = None, **overrides: Any
                     ) -> dict[str, Any]:
        """Is this request cached? If not, which fields differ from the nearest cached entry."""
        if self.cache is None:
            return {"hit": False, "note": "caching is off"}
        return self.cache.explain(self.key_payload(messages, options, **overrides))

    # -- calls -----------------------------------------------------------------------------
    @contextmanager
    def attributed(self, query_id: str | None) -> Iterator[None]:
        """The calls this thread makes inside the block are made for query ``query_id`` (:attr:`call_log`,
        the per-query accounting); None: for no query."""
        before = getattr(self._query, "id", None)
        self._query.id = query_id
        try:
            yield
        finally:
            self._query.id = before

    def chat(self, messages: Messages, options: ChatOptions | None = None, /, **overrides: Any) -> Reply:
        """One reply. Raises an :class:`LLMError` (a transport failure of this request) once
        retries are spent, or a :class:`FatalLLMError` that stops the run (a rejected key, an
        unknown model); every failure is counted in :attr:`usage` with its message. The call is
        noted in :attr:`call_log`, for the query :meth:`attributed` names."""
        start = time.monotonic()
        key, found = self._find(messages, options, overrides)
        try:
            reply = found if isinstance(found, Reply) else self._answer(found)
        except LLMError as error:
            self._note(getattr(self._query, "id", None), key, error, time.monotonic() - start)
            raise
        self._note(getattr(self._query, "id", None), key, reply, time.monotonic() - start)
        return reply

    def _answer(self, found: Pending) -> Reply:
        if self.batch is not None:  # a stage of one request
            reply = self._round([found])[0]
            if isinstance(reply, BaseException):
                raise reply
            return reply
        if self.dry_run is not None:
            return self._placeholder(found)
        return self.send_direct(found)

    def _note(self, query_id: str | None, key: str, outcome: Reply | BaseException, seconds: float) -> None:
        """One row of :attr:`call_log` (:func:`call_row`)."""
        price = self.usage.prices.lookup(self.provider.name, self.provider.model)
        row = call_row(query_id, key, outcome, seconds, price)
        if query_id is None:  # never written to llm_calls.jsonl: its reasoning stays in the cache alone
            row["reasoning"] = None
        with self._log_lock:
            self.call_log.append(row)

    def _placeholder(self, request: Pending, batch: bool = False) -> Reply:
        """A dry run's reply, counted as a call the first time the request is seen, then as a hit."""
        reply = placeholder(request.messages, request.options, self.provider.name, self.provider.model, self.dry_run)
        with self._dry_lock:
            seen = request.key in self._dry_seen
            self._dry_seen.add(request.key)
        if seen:
            self.usage.record_hit(self.label, reply)
        else:
            self.usage.record_call(self.label, reply, batch=batch)
        return replace(reply, fallback=request.fallback, cached=seen, batch=batch and not seen)

    def send_direct(self, request: Pending) -> Reply:
        """Send one request no cache holds, as one HTTP call (also batch mode's direct resend). Another
        thread or process sending the same request first: wait for its reply instead."""
        key, payload, msgs, opts, fallback = (request.key, dict(request.payload), request.messages, request.options,
                                              request.fallback)
        if self.cache is None:
            return self._send(key, payload, msgs, opts, fallback)
        with self.cache.claim(key) as entry:
            reply = self._hit(entry, opts, fallback)
            if reply is not None:
                return reply
            return self._send(key, payload, msgs, opts, fallback)

    def _hit(self, entry: dict[str, Any] | None, opts: ChatOptions, fallback: str | None) -> Reply | None:
        if entry is None:
            return None
        reply = Reply.from_dict(entry["reply"], cached=True, fallback=fallback)
        if opts.logprobs is True and reply.logprobs is None:
            return None  # cached without logprobs (asked as optional then): not what this request needs
        self.usage.record_hit(self.label, reply)
        return reply

    def _send(self, key: str, payload: dict[str, Any], msgs: list[Message], opts: ChatOptions,
              fallback: str | None) -> Reply:
        retries = 0
        timed_out = False
        latency = 0.0  # the attempts' own seconds: no queue, no gate, no SDK start-up (Reply.latency)

        def attempt(time_left: float | None) -> Reply:
            nonlocal latency
            with self.endpoint.slot():
                if timed_out and hasattr(self.provider, "wait_idle"):
                    self.provider.wait_idle(time_left)  # not queued behind the abandoned generation
                if callable(getattr(self.provider, "client", None)):
                    self.provider.client()  # the SDK's client made (once) before the attempt is timed
                started = time.monotonic()
                try:
                    if self._timeout_arg:
                        return self.provider.chat(msgs, opts, timeout=time_left)
                    return self.provider.chat(msgs, opts)
                finally:
                    latency += time.monotonic() - started

        def on_retry(error: LLMError, attempt_number: int) -> None:
            nonlocal retries, timed_out
            retries += 1
            timed_out = isinstance(error, LLMTimeout)
            log.debug("%s: attempt %d failed (%s); retrying", self.label, attempt_number, error)

        try:
            reply, _ = guarded_call(self.endpoint, self.retry, self.usage, self.label, attempt, on_retry)
        except (LLMError, FatalLLMError) as error:
            log.info("%s: call failed after %d attempt(s): %s", self.label, retries + 1, error)
            raise
        reply = replace(reply, retries=retries, fallback=reply.fallback or fallback, latency=latency)
        self.usage.record_call(self.label, reply)
        if self.cache is not None and reply.cacheable:
            self.cache.set(key, payload, reply)
        return reply

    def map(
        self,
        requests: Iterable[ChatRequest | Mapping[str, Any] | Messages],
        *,
        max_concurrency: int | None = None,
        on_result: Callable[[int, Reply | LLMError], None] | None = None,
        query_ids: Iterable[str | None] | None = None,
    ) -> list[Reply | LLMError]:
        """Independent requests, concurrently, results in input order. A request is a
        :class:`ChatRequest`, ``{"messages": [...], **options}`` or bare messages. A failed item
        holds its :class:`LLMError`; the others go on. ``requests`` may be a lazy iterator.
        ``query_ids``: the query each request is made for, in order (None: no query), for :attr:`call_log`."""
        pairs: Iterable[tuple[Any, str | None]] = zip(requests, query_ids) if query_ids is not None else (
            (r, None) for r in requests)
        if isinstance(requests, Sized):  # the count, for the progress bar (a lazy iterator stays lazy)
            pairs = list(pairs)
        if self.batch is not None:
            return self._map_batch(pairs, on_result)

        def one(pair: tuple[Any, str | None]) -> Reply | LLMError:
            req = ChatRequest.coerce(pair[0])
            try:
                with self.attributed(pair[1]):
                    return self.chat(req.messages, **dict(req.options))
            except LLMError as error:
                return error

        with _original_fatal():
            return bounded_map(one, pairs, max_concurrency or self.max_concurrency, on_result, progress=self.label,
                               settings=self.progress)

    def run_sequences(
        self,
        fn: Callable[[T, ChatFn], R],
        items: Iterable[T],
        *,
        max_workers: int | None = None,
        on_result: Callable[[int, R | LLMError], None] | None = None,
    ) -> list[R | LLMError]:
        """Call ``fn(item, chat)`` for every item on a bounded pool: the calls inside one item run in
        order (a sliding window: call N sees reply N-1), items run in parallel. An item whose ``fn``
        lets an :class:`LLMError` escape holds that error; other exceptions stop the run. In batch
        mode every item runs at once (``max_workers``: at most this many) and their requests go out in
        rounds (:mod:`harness.served.batch.rounds`)."""

        if self.batch is not None:
            return Rounds(self._lookup, self._round).run(
                lambda item, chat: fn(item, self._logged_chat(item if isinstance(item, str) else None, chat)),
                items, max_workers, on_result)

        def one(item: T) -> R | LLMError:
            try:
                with self.attributed(item if isinstance(item, str) else None):
                    return fn(item, self.chat)
            except LLMError as error:
                return error

        with _original_fatal():
            return bounded_map(one, items, max_workers or self.max_concurrency, on_result, progress=self.label,
                               settings=self.progress)

    def _logged_chat(self, query_id: str | None, chat: ChatFn) -> ChatFn:
        """A round's ``chat`` (batch mode: it bypasses :meth:`chat`) that notes each call in :attr:`call_log`."""

        def logged(messages: Messages, options: ChatOptions | None = None, /, **overrides: Any) -> Reply:
            start, key = time.monotonic(), self.cache_key(messages, options, **overrides)
            try:
                reply = chat(messages, options, **overrides)
            except LLMError as error:
                self._note(query_id, key, error, time.monotonic() - start)
                raise
            self._note(query_id, key, reply, time.monotonic() - start)
            return reply

        return logged

    # -- batch mode --------------------------------------------------------------------------
    def _lookup(self, messages: Messages, options: ChatOptions | None, overrides: dict[str, Any]) -> Reply | Pending:
        """The cached reply, or the request to send (batch mode)."""
        return self._find(messages, options, overrides)[1]

    def _find(self, messages: Messages, options: ChatOptions | None, overrides: dict[str, Any]
              ) -> tuple[str, Reply | Pending]:
        """The request's cache key, and its cached reply or the request to send."""
        msgs, opts, fallback, payload = self._prepare(messages, options, overrides)
        key = key_of(payload)
        if self.cache is not None:
            reply = self._hit(self.cache.get(key), opts, fallback)
            if reply is not None:
                return key, reply
        return key, Pending(key, payload, msgs, opts, fallback)

    def _round(self, requests: list[Pending]) -> list[Reply | LLMError]:
        """One stage through the batch API (placeholders in a dry run), answers in request order."""
        if self.dry_run is not None:
            answers = self._placeholders(requests)
        elif hasattr(self.batch, "resolve"):
            answers = self.batch.resolve(requests)
        else:
            raise RuntimeError("batch mode without a batch runner outside a dry run")

        def again(reply: Reply) -> Reply:  # the same request twice in one stage: sent once
            self.usage.record_hit(self.label, reply)
            return replace(reply, cached=True)

        return deliver(requests, answers, again)

    def _placeholders(self, requests: list[Pending]) -> dict[str, Reply]:
        """A dry run's stage: a placeholder per request, priced as a batch call the first time."""
        self.usage.record_round(self.label)
        out: dict[str, Reply] = {}
        for p in requests:
            if p.key not in out:
                out[p.key] = self._placeholder(p, batch=True)
        return out

    def _map_batch(self, pairs: Iterable[tuple[Any, str | None]],
                   on_result: Callable[[int, Reply | LLMError], None] | None) -> list[Reply | LLMError]:
        """One round for every request no cache holds; each call's seconds are its round's (it waited for it)."""
        start = time.monotonic()
        qids, found = [], []
        for item, qid in pairs:
            req = ChatRequest.coerce(item)
            qids.append(qid)
            found.append(self._find(req.messages, None, dict(req.options)))
        todo = [f for _, f in found if not isinstance(f, Reply)]
        answers = iter(self._round(todo)) if todo else iter(())
        out = [f if isinstance(f, Reply) else next(answers) for _, f in found]
        seconds = time.monotonic() - start
        for qid, (key, first), result in zip(qids, found, out):
            self._note(qid, key, result, 0.0 if isinstance(first, Reply) else seconds)
        if on_result is not None:
            for i, r in enumerate(out):
                on_result(i, r)
        return out

    def describe(self) -> dict[str, Any]:
        """The client's configuration for results.json (never the key, nor credentials in a URL)."""
        base_url = getattr(self.provider, "base_url", None)
        return {
            "spec": self.spec, "provider": self.provider.name, "model": self.provider.model,
            "base_url": redact_url(base_url) if base_url else None, "defaults": self.defaults.key_dict(),
            "max_concurrency": self.max_concurrency, "dry_run": self.dry_run is not None,
            "batch": self.batch is not None,
            "cache": None if self.cache is None else str(self.cache.path),
            "retry": self.retry.as_dict(),
            "timeouts": {"read_s": getattr(self.provider, "timeout", None),
                         "connect_s": getattr(self.provider, "connect_timeout", None)},
            **({"replicas": self.provider.describe()} if hasattr(self.provider, "replicas") else {}),
            **({"settings": describe_settings(self.settings)} if self.settings else {}),
        }


@contextmanager
def _original_fatal() -> Iterator[None]:
    """A pool stopped by a fatal error raises the request's own error, not a bystander's copy."""
    try:
        yield
    except RunStopped as stopped:
        if stopped.original is None:
            raise
        raise stopped.original from None


def call_row(query_id: str | None, key: str, outcome: Reply | BaseException, seconds: float, price: Any
             ) -> dict[str, Any]:
    """One call as :attr:`Client.call_log` notes it: ``query_id``, ``key`` (the reply cache's), ``cached``
    (the cache answered: it cost nothing), ``error``, ``reasoning`` (the reply's, never parsed), the reply's
    ``input_tokens``/``output_tokens``/``reasoning_tokens`` (of a call sent: what usage counts; the reasoning
    tokens are part of the output tokens), ``price_usd`` (what the reply cost when it was made, at its price:
    the batch price through a batch API; None when the model has no price), ``cost_usd`` (what this call
    cost now: the price of a call sent, 0 for a hit), ``seconds`` (the call as its caller waited for it now),
    ``latency_s`` (how long the call that made the reply took, a hit's too; None when unknown), ``batch``,
    ``retries``."""
    if isinstance(outcome, BaseException):
        return {"query_id": query_id, "key": key, "cached": False, "error": f"{type(outcome).__name__}: {outcome}",
                "reasoning": None, "input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0, "price_usd": 0.0,
                "cost_usd": 0.0, "seconds": round(seconds, 6), "latency_s": None, "batch": False, "retries": 0}
    u = outcome.usage
    made = None if price is None else price.cost(u.input_tokens, u.output_tokens, batch=outcome.batch)
    return {"query_id": query_id, "key": key, "cached": bool(outcome.cached), "error": None,
            "reasoning": outcome.reasoning, "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "reasoning_tokens": u.reasoning_tokens, "price_usd": made, "cost_usd": 0.0 if outcome.cached else made,
            "seconds": round(seconds, 6),
            "latency_s": None if outcome.latency is None else round(outcome.latency, 6),
            "batch": bool(outcome.batch), "retries": int(outcome.retries)}
