"""An LLM session: the clients, endpoints, caches and usage of one evaluation.

Every LLM-backed component of an evaluation asks the session of the evaluation's
:class:`harness.Context` for its client (``context.llm.client(spec, temperature=0)``); clients with
the same arguments are shared, clients of one endpoint share its concurrency bound, first-call gate
and circuit breaker, and :meth:`LLMSession.usage` merges what they all did. Nothing here is
process-wide: two sessions (two evaluations) never see each other's clients or counters.

Code outside an evaluation (a notebook, a test) gets a client with :func:`harness.llm.get_client`: the
session of a context made from the environment (:func:`harness.context.get_client`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.components.registry import Registry, accepts_parameter
from harness.concepts.errors import HarnessError, UnknownComponentError
from harness.llm.client import Client
from harness.llm.providers import builtin_registry
from harness.llm.providers.replicas import ReplicaSet
from harness.llm.spec import ALIASES, COMPAT, LLMSpec, parse_llm_spec
from harness.runtime.progress import ProgressSettings
from harness.runtime.redact import redact_url
from harness.served.batch.journal import FILENAME, BatchJournal
from harness.served.batch.runner import BatchRunner
from harness.served.dryrun import DryRun
from harness.served.endpoint import Endpoint
from harness.served.precedence import (
    ARGUMENT,
    CLIENT_DEFAULT,
    COMPONENT_DEFAULT,
    COMPONENT_SPEC,
    LLM_SPEC,
    Layer,
    Setting,
    chat_settings,
    resolve,
    typed_options,
)
from harness.served.pricing import PriceTable
from harness.served.reply_cache import LLMCache, llm_cache_dir
from harness.served.retry import RetryPolicy
from harness.served.settings import LLMSettings
from harness.served.usage import Usage

if TYPE_CHECKING:
    from harness.llm.providers.replicas import ReplicaSet
    from harness.served.batch.journal import BatchJournal
    from harness.served.batch.runner import BatchRunner


class LLMSession:
    """Clients of one evaluation. ``settings``: the defaults (``--llm``, concurrency, cache, dry run,
    timeouts); ``registry``: where providers are looked up, the context's (None, a session outside any
    context: the built-in providers alone, :data:`harness.llm.providers.BUILTIN_PROVIDERS`);
    ``progress``: how client batches report progress."""

    def __init__(self, settings: LLMSettings | None = None, registry: Registry | None = None,
                 progress: ProgressSettings | None = None, stop: threading.Event | None = None) -> None:
        self.settings = settings or LLMSettings()
        #: set by whoever runs this session's evaluation (a suite waiting on its tasks together):
        #: batch waits then stop at once with :class:`BatchPending`, leaving the batches in the journal
        self.stop = stop
        self._registry = registry if registry is not None else builtin_registry()
        self.progress = progress
        self._lock = threading.Lock()
        self._clients: dict[tuple, Client] = {}
        self._all: list[Client] = []
        self._endpoints: dict[tuple, Endpoint] = {}
        self._caches: dict[Path, LLMCache] = {}
        self._journals: dict[Path, BatchJournal] = {}
        self._prices: dict[str | None, PriceTable] = {}
        self._building = threading.local()  # per thread: the argument names typed in the specs being built

    def __repr__(self) -> str:
        return f"LLMSession(llm={self.settings.llm!r}, clients={len(self._all)}, dry_run={self.settings.dry_run})"

    # -- precedence ---------------------------------------------------------------------------
    @contextmanager
    def component_args(self, typed: Mapping[str, object]) -> Iterator[None]:
        """While a component is built from its spec (:meth:`harness.components.registry.Registry.build`):
        the arguments the user typed in it. A chat option the component passes to :meth:`client` is then
        the ``component spec``'s when typed, else a ``component default`` (harness.served.precedence)."""
        stack = self._building.__dict__.setdefault("stack", [])
        stack.append(frozenset(typed))
        try:
            yield
        finally:
            stack.pop()

    def _typed(self) -> frozenset[str] | None:
        stack = self._building.__dict__.get("stack")
        return stack[-1] if stack else None

    def _settings_layers(self, name: str) -> list[Layer]:
        """The settings' value of ``name`` as a layer named for its origin (none when left at the default)."""
        origin = self.settings.origin(name)
        if origin is None:
            return []
        value = self.settings.retry.budget if name == "budget" else getattr(self.settings, name)
        return [(origin, {name: value})]

    def _chat_layers(self, spec: LLMSpec, options: Mapping[str, object],
                     component_defaults: Mapping[str, object] | None) -> tuple[list[Layer], bool]:
        """The layers of a client's chat options, highest first, and whether a component is being built."""
        typed = self._typed()
        if typed is None:  # not inside a registry build: the caller's arguments are what they typed
            first: list[Layer] = [(ARGUMENT, options)]
            fallback = dict(component_defaults or {})
        else:
            first = [(COMPONENT_SPEC, {k: v for k, v in options.items() if k in typed})]
            fallback = {**(component_defaults or {}), **{k: v for k, v in options.items() if k not in typed}}
        return [*first, (LLM_SPEC, spec.options), (COMPONENT_DEFAULT, fallback)], typed is not None

    def _transport_settings(self, spec: LLMSpec, provider: object, retry: RetryPolicy | None) -> dict[str, Setting]:
        out = {name: resolve(name, [(LLM_SPEC, spec.provider_args), *self._settings_layers(name)],
                             getattr(provider, name, None)) for name in ("timeout", "connect_timeout")}
        if retry is not None:
            out["budget"] = Setting(retry.budget, ARGUMENT)
        else:
            out["budget"] = resolve("budget", self._settings_layers("budget"), RetryPolicy().budget)
        return out

    # -- pieces ------------------------------------------------------------------------------
    def registry(self) -> Registry:
        """Where providers come from: the context's registry, or the built-in providers alone."""
        return self._registry

    def resolve_provider(self, spec: LLMSpec, *, require_key: bool = True) -> Any:
        """Create the provider a spec names (kind ``llm_provider``), with the session's timeouts."""
        registry = self._registry
        known = set(registry.names("llm_provider"))
        if spec.provider not in known:
            raise UnknownComponentError("llm_provider", spec.provider, known | set(ALIASES))
        component = registry.lookup("llm_provider", spec.provider)
        kwargs: dict[str, Any] = {"model": spec.model, "require_key": require_key, **spec.provider_args}
        if spec.base_url:
            kwargs["base_url"] = spec.base_url
        for name in ("timeout", "connect_timeout"):  # the spec's, else the settings' (harness.served.precedence)
            got = resolve(name, [(LLM_SPEC, spec.provider_args), *self._settings_layers(name)])
            if got.source != CLIENT_DEFAULT and got.value is not None:
                kwargs[name] = got.value
        if accepts_parameter(component.factory, "cache_dir"):  # a provider keeping files (a model) in the cache root
            kwargs.setdefault("cache_dir", self.settings.cache_dir)
        try:
            return component.factory(**kwargs)
        except (TypeError, ValueError) as exc:  # an unknown argument, a timeout of nan, ...
            raise HarnessError(f"LLM {redact_url(str(spec))}: bad arguments for provider {spec.provider!r}: "
                               f"{exc}") from exc

    def prices(self, path: str | None = None) -> PriceTable:
        path = path if path is not None else self.settings.prices
        with self._lock:
            if path not in self._prices:
                self._prices[path] = PriceTable.load(path)
            return self._prices[path]

    def cache(self, root: str | Path | None = None) -> LLMCache:
        """The reply cache under ``root`` (default: the settings' cache root), one per folder."""
        path = llm_cache_dir(root if root is not None else self.settings.cache_dir).expanduser().resolve()
        with self._lock:
            if path not in self._caches:
                self._caches[path] = LLMCache(path)
            return self._caches[path]

    def journal(self, cache: LLMCache) -> BatchJournal:
        """The batch journal beside ``cache`` (``<cache>/batches.db``), one per folder."""
        path = cache.path / FILENAME
        with self._lock:
            if path not in self._journals:
                self._journals[path] = BatchJournal(path)
            return self._journals[path]

    def batch_runner(self, client: Client) -> BatchRunner:
        """The batch side of ``client`` (``--llm-batch``): its provider's batch API, the journal beside
        its cache, the settings' waiting, polling and resend rules."""
        api = getattr(client.provider, "batch_api", lambda: None)()
        if api is None:
            raise HarnessError(f"--llm-batch: provider {client.provider.name!r} has no batch API (openai and "
                               f"anthropic have one); drop --llm-batch or use one of those")
        if client.cache is None:
            raise HarnessError("--llm-batch needs the LLM reply cache (batch results are collected into it, so a "
                               "later run can pick them up); drop --no-llm-cache")
        s = self.settings
        return BatchRunner(api, self.journal(client.cache), client.cache, client.usage, client.label,
                           endpoint_identity(client.provider), retry=client.retry, wait=s.batch_wait,
                           poll=s.batch_poll, resend=s.batch_retry, max_requests=s.batch_size,
                           send_direct=client.send_direct, progress=self.progress, stop=self.stop)

    # -- clients -----------------------------------------------------------------------------
    def client(
        self,
        spec: str | LLMSpec | None = None,
        *,
        cache_dir: str | Path | None = None,
        use_cache: bool | None = None,
        max_concurrency: int | None = None,
        dry_run: bool | None = None,
        retry: RetryPolicy | None = None,
        prices: str | Path | None = None,
        shared: bool = True,
        component_defaults: Mapping[str, Any] | None = None,
        **defaults: Any,
    ) -> Client:
        """A client for ``spec`` (default: the settings' ``llm``, i.e. ``--llm``). Arguments left None
        take the session's settings; ``defaults`` are chat options applied to every call
        (``temperature=0.7``...): while a component is built from its spec, those the user typed in it
        (``component spec``) beat the LLM spec's, the others are ``component defaults`` as are
        ``component_defaults``, which the LLM spec's options beat (docs/llm.md, "Precedence of
        settings"). With ``shared`` the same arguments return the same client. A
        missing API key raises :class:`MissingKey` here, before any work starts (not in dry runs,
        not for loopback URLs). A spec with a list of base URLs gets a :meth:`replica_set`."""
        s = self.settings
        spec = spec if spec is not None else s.llm
        if spec is None:
            raise HarnessError("no LLM given: pass --llm PROVIDER:MODEL (e.g. --llm openai:gpt-4o-mini)")
        parsed = spec if isinstance(spec, LLMSpec) else parse_llm_spec(spec)
        dry = s.dry_run if dry_run is None else dry_run
        use_cache = s.use_cache if use_cache is None else use_cache
        root = cache_dir if cache_dir is not None else s.cache_dir
        conc = int(max_concurrency or parsed.client_args.get("max_concurrency") or s.max_concurrency)
        given_retry, retry = retry, retry or s.retry
        price_path = str(prices) if prices is not None else s.prices
        layers, building = self._chat_layers(parsed, defaults, component_defaults)
        opts, resolved = chat_settings(layers)
        pinned = typed_options(resolved) if building else {}  # the user's choices beat per-request options
        ident = (str(parsed), str(root), use_cache, conc, dry, retry, price_path, repr(opts),
                 tuple((k, v.source) for k, v in resolved.items()), repr(pinned))
        with self._lock:
            if shared and ident in self._clients:
                return self._clients[ident]
        if parsed.replicas:
            provider, endpoint = self.replica_set(parsed, conc, require_key=not dry)
        else:
            provider = self.resolve_provider(parsed, require_key=not dry)
            explicit = bool(max_concurrency or parsed.client_args.get("max_concurrency"))
            endpoint = self.endpoint(provider, self.fitted_concurrency(provider, parsed, conc, explicit, dry))
        check_reasoning(provider, resolved, str(parsed))  # a setting the provider cannot send: refused now
        cache = None
        if use_cache:
            cache = self.cache(root)
            if retry.budget:
                cache.claim_ttl = retry.budget + 60.0
        client = Client(
            provider,
            cache=cache,
            retry=retry,
            max_concurrency=endpoint.max_concurrency,  # a replica set's: the sum of its replicas' bounds
            usage=Usage(self.prices(price_path), dry_run=dry),
            dry_run=DryRun(output_tokens=s.dry_run_output_tokens) if dry else False,
            defaults=opts,
            spec=str(parsed),
            endpoint=endpoint,
            progress=self.progress,
            pinned=pinned,
            settings={**chat_settings(layers, provider)[1], **self._transport_settings(parsed, provider, given_retry)},
        )
        if s.batch:
            runner = self.batch_runner(client)  # checks the provider has a batch API, also in a dry run
            client.batch = True if dry else runner
        with self._lock:
            if shared:
                client = self._clients.setdefault(ident, client)
            if client not in self._all:
                self._all.append(client)
        return client

    @staticmethod
    def fitted_concurrency(provider: Any, spec: LLMSpec, wanted: int, explicit: bool, dry: bool) -> int:
        """Requests in flight for ``provider``: at most what it serves at once when it says so (the
        embedded model: its instances; a llama.cpp server: its slots), so the client never builds a
        queue it would time out of; 1 for a ``llamacpp:`` server that does not say. ``max_concurrency``
        given in the spec or the call is kept as given for servers, never above the embedded pool."""
        slots = getattr(provider, "slots", None)
        if slots is None and not dry and hasattr(provider, "server_slots") and not explicit:
            slots = provider.server_slots()
        if slots is None and spec.alias in ("llamacpp", "llama.cpp") and not explicit:
            slots = 1
        if slots is None or (explicit and getattr(provider, "slots", None) is None):
            return wanted
        return max(1, min(wanted, int(slots)))

    def endpoint(self, provider: Any, max_concurrency: int, replicas: list[Endpoint] | None = None) -> Endpoint:
        """The endpoint of ``provider``'s base URL with this bound: clients of one endpoint share the
        in-flight limit, the gate and the breaker. ``replicas``: the members of a replica set."""
        url = getattr(provider, "base_url", None)
        where = (provider.name, url, max_concurrency, tuple(sorted(e.label for e in replicas or ())))
        with self._lock:
            endpoint = self._endpoints.get(where)
            if endpoint is None:
                if replicas:
                    label = f"{provider.name} on {len(replicas)} replicas"
                else:
                    label = f"{provider.name} at {redact_url(url)}" if url else provider.name
                endpoint = self._endpoints[where] = Endpoint(label, max_concurrency,
                                                             self.settings.max_consecutive_failures, replicas or ())
            return endpoint

    def replica_set(self, spec: LLMSpec, max_concurrency: int, *, require_key: bool = True
                    ) -> tuple[ReplicaSet, Endpoint]:
        """A spec's replica set (``base_url=[...]``) and the endpoint of the set: one provider and one
        endpoint per URL, each bounded by ``max_concurrency``; the set's bound is their sum."""
        if spec.provider != COMPAT:
            raise HarnessError(f"LLM {redact_url(str(spec))}: only {COMPAT} servers take several base URLs (replicas)")
        providers = [self.resolve_provider(replace(spec, base_url=url, replicas=()), require_key=require_key)
                     for url in spec.replicas]
        members = [self.endpoint(p, max_concurrency) for p in providers]
        replicas = ReplicaSet(providers, members, retry_after=self.settings.replica_retry)
        return replicas, self.endpoint(replicas, max_concurrency * len(members), members)

    def add_client(self, client: Any) -> None:
        """Count another kind of client (an :class:`~harness.llm.embedding_client.EmbeddingClient`, a rerank
        client: anything with ``usage``) in this session's usage, so the failure policy sees its failures."""
        with self._lock:
            if client not in self._all:
                self._all.append(client)

    @property
    def clients(self) -> list[Client]:
        with self._lock:
            return list(self._all)

    @property
    def endpoints(self) -> list[Endpoint]:
        with self._lock:
            return list(self._endpoints.values())

    def usage(self) -> Usage:
        """Usage of every client of this session, merged (for results.json)."""
        clients = self.clients
        if not clients:
            return Usage(self.prices(), dry_run=self.settings.dry_run)
        return Usage.merged([c.usage for c in clients], self.prices())

    def report(self) -> dict[str, Any]:
        """Settings, usage and endpoints for results.json; empty when no client was created."""
        if not self.clients:
            return {}
        return {"settings": self.settings.as_dict(), **self.usage().as_dict(),
                "endpoints": [e.describe() for e in self.endpoints]}

    def close(self) -> None:
        with self._lock:
            caches = list(self._caches.values())
            journals = list(self._journals.values())
        for cache in caches:
            cache.close()
        for journal in journals:
            journal.close()


def check_reasoning(provider: Any, resolved: Mapping[str, Setting], spec: str) -> None:
    """The reasoning settings (``reasoning_effort``, ``thinking_budget``) checked by the provider's own rule
    (``check_settings``: a field it has no place for, a typed value its API refuses with reasoning on); a
    provider without one takes neither: one message, before any work (docs/llm.md, "Reasoning models")."""
    check = getattr(provider, "check_settings", None)
    if check is not None:
        check(resolved)
        return
    for name in ("reasoning_effort", "thinking_budget"):
        if resolved.get(name) is not None and resolved[name].value is not None:
            raise HarnessError(f"LLM {redact_url(spec)}: provider {getattr(provider, 'name', '?')!r} does not say how "
                               f"it sends {name} (no check_settings); drop {name}, or give the provider that rule")


def endpoint_identity(provider: Any) -> dict[str, Any]:
    """Where a provider's batches live, as the journal records it (credentials in a URL masked)."""
    base_url = getattr(provider, "base_url", None)
    url = redact_url(base_url) if base_url else None
    return {"endpoint": f"{provider.name}:{provider.model}@{url or ''}", "provider": provider.name,
            "model": provider.model, "base_url": url}

