"""LLM settings: the defaults of an evaluation's LLM session (``--llm``, concurrency, cache, dry
run, timeouts), held by its :class:`harness.Context`. Light: imports nothing heavy."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.runtime.numbers import MAX_SECONDS, finite_number
from harness.runtime.redact import redact_url
from harness.served.endpoint import DEFAULT_MAX_CONSECUTIVE_FAILURES, DEFAULT_REPLICA_RETRY_S
from harness.served.retry import RetryPolicy

DEFAULT_MAX_CONCURRENCY = 8
#: how requests a batch did not process are sent again (once)
BATCH_RETRY = ("batch", "direct")


@dataclass(frozen=True)
class LLMSettings:
    """``llm``: the default spec for LLM components (``--llm``). ``cache_dir``: the harness cache root
    (the LLM cache is its ``llm`` subfolder; None: ``HARNESS_CACHE_DIR`` or the XDG default).
    ``prices``: a price override file. ``timeout``: read timeout in seconds per HTTP attempt and
    ``connect_timeout`` the time to connect (None: the provider's defaults, 60 s and 10 s); the
    call's budget across retries is ``retry.budget``. ``max_consecutive_failures``: an endpoint is
    taken out after this many failed calls in a row (at once when its first call fails).
    ``replica_retry``: seconds after which a replica taken out of a replica set gets one probe
    request (doubling after each failed probe, up to 10 minutes).

    ``batch``: send the requests no cache holds through the provider's batch API (``--llm-batch``);
    ``batch_wait`` False submits and stops with :class:`~harness.served.request_errors.BatchPending`
    (``--no-wait``); ``batch_poll``: seconds between status checks (None: 2 s growing to 60 s);
    ``batch_retry``: how requests an expired or failed batch did not process are sent again, once
    (``"batch"`` or ``"direct"``); ``batch_size``: most requests per batch (None: the provider's limit)."""

    llm: str | None = None
    cache_dir: str | None = None
    use_cache: bool = True
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    dry_run: bool = False
    prices: str | None = None
    timeout: float | None = None
    connect_timeout: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_consecutive_failures: int = DEFAULT_MAX_CONSECUTIVE_FAILURES
    replica_retry: float = DEFAULT_REPLICA_RETRY_S
    dry_run_output_tokens: int = 200
    batch: bool = False
    batch_wait: bool = True
    batch_poll: float | None = None
    batch_retry: str = "batch"
    batch_size: int | None = None
    #: where values came from, ``(name, source)`` pairs (``env``, ``cli option``); a value set another
    #: way is ``settings`` (:mod:`harness.served.precedence`)
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.batch_retry not in BATCH_RETRY:
            raise ValueError(f"batch_retry must be one of {', '.join(BATCH_RETRY)}, got {self.batch_retry!r}")
        if self.batch_poll is not None and self.batch_poll <= 0:
            raise ValueError(f"batch_poll must be > 0 seconds, got {self.batch_poll}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.replica_retry < 0:
            raise ValueError(f"replica_retry must be >= 0 seconds, got {self.replica_retry}")
        for name, low in (("timeout", 0.0), ("connect_timeout", 0.0), ("batch_poll", 0.0), ("replica_retry", None)):
            value = getattr(self, name)
            if value is not None:  # finite: NaN passes every comparison above
                finite_number(value, f"{name} (seconds)", low=low, high=MAX_SECONDS, low_open=low is not None)

    def merged(self, **changes: Any) -> LLMSettings:
        """A copy with ``changes`` applied; ``None`` values are ignored (options that were not given
        keep the current value); ``budget`` sets ``retry.budget``. Unknown names raise TypeError."""
        changes = {k: v for k, v in changes.items() if v is not None}
        if not changes:
            return self
        origins = tuple((k, s) for k, s in self.origins if k not in changes)  # set here: no longer theirs
        budget = changes.pop("budget", None)
        out = replace(self, **changes, origins=origins)
        return replace(out, retry=replace(out.retry, budget=float(budget))) if budget is not None else out

    def given(self, source: str, **changes: Any) -> LLMSettings:
        """:meth:`merged`, recording ``source`` as the origin of each value given (None ignored)."""
        names = [k for k, v in changes.items() if v is not None]
        out = self.merged(**changes)
        return replace(out, origins=(*((k, s) for k, s in out.origins if k not in names),
                                     *((k, source) for k in names)))

    def origin(self, name: str) -> str | None:
        """Where setting ``name`` came from: its recorded source, ``settings`` for a value that differs
        from the default, None for a default."""
        recorded = dict(self.origins).get(name)
        if recorded is not None:
            return recorded
        if name == "budget":
            return None if self.retry.budget == RetryPolicy().budget else "settings"
        return None if getattr(self, name) == getattr(LLMSettings(), name) else "settings"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **changes: Any) -> LLMSettings:
        """Defaults from the environment (``HARNESS_LLM``, ``HARNESS_MAX_CONCURRENCY``,
        ``HARNESS_PRICES``, ``HARNESS_LLM_TIMEOUT``, ``HARNESS_LLM_CONNECT_TIMEOUT``,
        ``HARNESS_LLM_BUDGET``, ``HARNESS_BATCH_POLL``, ``HARNESS_BATCH_SIZE``,
        ``HARNESS_REPLICA_RETRY``), then ``changes`` (None values ignored)."""
        env = os.environ if environ is None else environ

        def number(name: str, kind: type = float) -> Any:
            raw = env.get(name, "").strip()
            if not raw:
                return None
            try:
                value = kind(raw)
            except ValueError:
                raise ValueError(f"${name} must be a number, got {raw!r}") from None
            if kind is float:  # nan, inf: refused here, naming the variable
                finite_number(value, f"${name}", high=MAX_SECONDS)
            return value

        base = cls().given("env", llm=env.get("HARNESS_LLM") or None,
                           max_concurrency=number("HARNESS_MAX_CONCURRENCY", int),
                           prices=env.get("HARNESS_PRICES") or None, timeout=number("HARNESS_LLM_TIMEOUT"),
                           connect_timeout=number("HARNESS_LLM_CONNECT_TIMEOUT"),
                           budget=number("HARNESS_LLM_BUDGET"), batch_poll=number("HARNESS_BATCH_POLL"),
                           batch_size=number("HARNESS_BATCH_SIZE", int),
                           replica_retry=number("HARNESS_REPLICA_RETRY"))
        return base.merged(**changes)

    def as_dict(self) -> dict[str, Any]:
        """For results.json (no secrets live here: a URL's credentials are masked)."""
        return {"llm": redact_url(self.llm) if self.llm else None, "cache_dir": self.cache_dir,
                "use_cache": self.use_cache, "max_concurrency": self.max_concurrency, "dry_run": self.dry_run,
                "prices": self.prices, "timeout": self.timeout, "connect_timeout": self.connect_timeout,
                "retry": self.retry.as_dict(), "max_consecutive_failures": self.max_consecutive_failures,
                "replica_retry": self.replica_retry,
                "batch": self.batch, "batch_wait": self.batch_wait, "batch_poll": self.batch_poll,
                "batch_retry": self.batch_retry, "batch_size": self.batch_size}
