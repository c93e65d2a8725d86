"""Retries with tenacity: bounded attempts, exponential backoff with jitter, ``Retry-After`` honoured
(capped), and a time budget per call across all its attempts. Only :class:`LLMError` subclasses with
``retryable = True`` are retried (429, 5xx, timeouts, connection errors); a refused or dropped
connection is retried briefly (``connect_attempts``, short waits), not with the backoff meant for
rate limits. The SDKs' own retries are off (``max_retries=0``), so this is the one layer."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.runtime.numbers import MAX_SECONDS, finite_number
from harness.served.request_errors import ConnectionFailed, LLMError

T = TypeVar("T")
#: an attempt is not started with less than this many seconds of the budget left
MIN_ATTEMPT_S = 0.5


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` counts the first try. Waits grow ``initial_wait * exp_base**n`` up to
    ``max_wait``, plus up to ``jitter`` seconds of random jitter; a ``Retry-After`` from the server
    replaces the computed wait, capped at ``retry_after_cap``. ``budget``: seconds one call may take
    in all, attempts and waits together (None: unbounded); no attempt starts, and no wait is made,
    past it. ``connect_attempts``/``connect_wait``: a connection failure is tried at most this many
    times, waiting ``connect_wait * 2**n`` in between."""

    max_attempts: int = 6
    initial_wait: float = 1.0
    max_wait: float = 60.0
    exp_base: float = 2.0
    jitter: float = 1.0
    retry_after_cap: float = 60.0
    budget: float | None = 120.0
    connect_attempts: int = 3
    connect_wait: float = 0.5

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.connect_attempts < 1:
            raise ValueError("max_attempts and connect_attempts must be >= 1")
        if self.budget is not None:  # finite: NaN passes every comparison
            finite_number(self.budget, "budget (seconds)", low=0.0, high=MAX_SECONDS, low_open=True)

    @classmethod
    def fast(cls, max_attempts: int = 6, budget: float | None = 120.0) -> RetryPolicy:
        """Millisecond waits, for tests against the loopback server."""
        return cls(max_attempts, initial_wait=0.001, max_wait=0.01, jitter=0.002, retry_after_cap=0.01,
                   budget=budget, connect_wait=0.001)

    def as_dict(self) -> dict[str, Any]:
        return {"max_attempts": self.max_attempts, "budget_s": self.budget, "max_wait_s": self.max_wait,
                "connect_attempts": self.connect_attempts}

    def call(self, fn: Callable[[float | None], T], on_retry: Callable[[LLMError, int], None] | None = None,
             *, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> T:
        """Run ``fn(time_left)`` with retries; ``time_left`` is what remains of the budget (None when
        unbounded), for the attempt's own timeout. ``on_retry(error, attempt_number)`` is called
        before each wait. When the budget ends the last error is raised, saying so. ``sleep`` and
        ``clock`` are injectable (tests)."""
        import tenacity

        plan = _Schedule(self, _exp_wait(tenacity, self), clock, on_retry)
        retrying = tenacity.Retrying(
            stop=plan.stop,
            wait=plan.wait,
            retry=tenacity.retry_if_exception(lambda e: isinstance(e, LLMError) and e.retryable),
            before_sleep=plan.before_sleep,
            sleep=sleep,
            reraise=True,
        )
        return retrying(lambda: fn(plan.left()))


class _Schedule:
    """The waits and the stop rule of one :meth:`RetryPolicy.call`, as tenacity callbacks: the budget
    runs from the call's start; the wait planned when deciding to go on is the one made."""

    def __init__(self, policy: RetryPolicy, exp: Any, clock: Callable[[], float],
                 on_retry: Callable[[LLMError, int], None] | None) -> None:
        self.policy = policy
        self.exp = exp
        self.clock = clock
        self.on_retry = on_retry
        self.start = clock()
        self.deadline = None if policy.budget is None else self.start + policy.budget
        self.waits: dict[int, float] = {}

    def left(self) -> float | None:
        """Seconds left of the budget (None: unbounded)."""
        return None if self.deadline is None else self.deadline - self.clock()

    def planned_wait(self, state: Any) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ConnectionFailed):
            return self.policy.connect_wait * (2 ** (state.attempt_number - 1))
        after = getattr(exc, "retry_after", None)
        if after is not None:
            return max(0.0, min(float(after), self.policy.retry_after_cap))
        return self.exp(state)

    def wait(self, state: Any) -> float:
        return self.waits.pop(state.attempt_number, None) or self.planned_wait(state)

    def stop(self, state: Any) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if state.attempt_number >= self.policy.max_attempts:
            return True
        if isinstance(exc, ConnectionFailed) and state.attempt_number >= self.policy.connect_attempts:
            return True
        w = self.planned_wait(state)
        remaining = self.left()
        if remaining is not None and remaining - w < MIN_ATTEMPT_S:
            if isinstance(exc, LLMError):
                exc.args = (f"{exc.args[0]} (gave up after {state.attempt_number} attempt(s) in "
                            f"{self.clock() - self.start:.1f} s: the call's time budget is {self.policy.budget:g} s)",)
            return True
        self.waits[state.attempt_number] = w
        return False

    def before_sleep(self, state: Any) -> None:
        if self.on_retry is not None and state.outcome is not None:
            self.on_retry(state.outcome.exception(), state.attempt_number)  # type: ignore[arg-type]


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
