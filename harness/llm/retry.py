"""Retries with tenacity: bounded attempts, exponential backoff with jitter, ``Retry-After`` honoured
(capped). Only :class:`LLMError` subclasses with ``retryable = True`` are retried (429, 5xx, timeouts,
connection errors). The SDKs' own retries are off (``max_retries=0``), so this is the one layer."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import LLMError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` counts the first try. Waits grow ``initial_wait * exp_base**n`` up to
    ``max_wait``, plus up to ``jitter`` seconds of random jitter; a ``Retry-After`` from the server
    replaces the computed wait, capped at ``retry_after_cap``."""

    max_attempts: int = 6
    initial_wait: float = 1.0
    max_wait: float = 60.0
    exp_base: float = 2.0
    jitter: float = 1.0
    retry_after_cap: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")

    @classmethod
    def fast(cls, max_attempts: int = 6) -> RetryPolicy:
        """Millisecond waits, for tests against the loopback server."""
        return cls(max_attempts, initial_wait=0.001, max_wait=0.01, jitter=0.002, retry_after_cap=0.01)

    def call(self, fn: Callable[[], T], on_retry: Callable[[LLMError, int], None] | None = None) -> T:
        """Run ``fn`` with retries; ``on_retry(error, attempt_number)`` is called before each wait."""
        import tenacity

        exp = _exp_wait(tenacity, self)
        cap = self.retry_after_cap

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            after = getattr(exc, "retry_after", None)
            if after is not None:
                return max(0.0, min(float(after), cap))
            return exp(state)

        def before_sleep(state: tenacity.RetryCallState) -> None:
            if on_retry is not None and state.outcome is not None:
                on_retry(state.outcome.exception(), state.attempt_number)  # type: ignore[arg-type]

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_attempts),
            wait=wait,
            retry=tenacity.retry_if_exception(lambda e: isinstance(e, LLMError) and e.retryable),
            before_sleep=before_sleep,
            reraise=True,
        )
        return retrying(fn)


@functools.lru_cache(maxsize=1)
def _first_wait_name() -> str:
    import inspect

    import tenacity

    # tenacity >= 9.1 calls it "multiplier" (and warns on "initial"); older releases only know "initial"
    params = inspect.signature(tenacity.wait_exponential_jitter).parameters
    return "multiplier" if "multiplier" in params else "initial"


def _exp_wait(tenacity: Any, p: RetryPolicy) -> Any:
    return tenacity.wait_exponential_jitter(
        **{_first_wait_name(): p.initial_wait}, max=p.max_wait, exp_base=p.exp_base, jitter=p.jitter
    )


def parse_retry_after(headers: Mapping[str, str] | Any, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    get = headers.get
    ms = get("retry-after-ms") or get("Retry-After-Ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    raw = get("retry-after") or get("Retry-After")
    if not raw:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
