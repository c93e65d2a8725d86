"""Process-wide LLM settings, set once from the CLI options (:func:`configure`) and used as the
defaults of :func:`harness.llm.get_client`. Light: imports nothing heavy."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any

from harness.llm.endpoint import DEFAULT_MAX_CONSECUTIVE_FAILURES
from harness.llm.retry import RetryPolicy

DEFAULT_MAX_CONCURRENCY = 8


@dataclass(frozen=True)
class LLMSettings:
    """``llm``: the default spec for LLM components (``--llm``). ``cache_dir``: the harness cache root
    (the LLM cache is its ``llm`` subfolder; None: ``HARNESS_CACHE_DIR`` or the XDG default).
    ``prices``: a price override file. ``timeout``: read timeout in seconds per HTTP attempt and
    ``connect_timeout`` the time to connect (None: the provider's defaults, 60 s and 10 s); the
    call's budget across retries is ``retry.budget``. ``max_consecutive_failures``: an endpoint is
    taken out after this many failed calls in a row (at once when its first call fails)."""

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
    dry_run_output_tokens: int = 200

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")

    def as_dict(self) -> dict[str, Any]:
        """For results.json (no secrets live here: a URL's credentials are masked)."""
        from harness.runtime.redact import redact_url

        return {"llm": redact_url(self.llm) if self.llm else None, "cache_dir": self.cache_dir,
                "use_cache": self.use_cache, "max_concurrency": self.max_concurrency, "dry_run": self.dry_run,
                "prices": self.prices, "timeout": self.timeout, "connect_timeout": self.connect_timeout,
                "retry": self.retry.as_dict(), "max_consecutive_failures": self.max_consecutive_failures}


_settings = LLMSettings()
_lock = threading.Lock()


def configure(**changes: Any) -> LLMSettings:
    """Change the process-wide defaults (unknown names raise TypeError); returns the new settings.
    ``None`` values are ignored, so CLI options that were not given keep the defaults."""
    global _settings
    with _lock:
        _settings = replace(_settings, **{k: v for k, v in changes.items() if v is not None})
        return _settings


def current() -> LLMSettings:
    return _settings


def reset_settings() -> None:
    global _settings
    with _lock:
        _settings = LLMSettings()
