"""One endpoint (provider + base URL) as the clients of an evaluation see it: the bound on requests
in flight, the first-call gate, the circuit breaker and the fatal stop.

- **Bound.** At most ``max_concurrency`` HTTP requests in flight; a request waiting in a retry
  backoff holds no slot.
- **First-call gate.** Until one call to the endpoint has succeeded, calls go one at a time: a bad
  key, an unknown model or a dead server costs one request, not one per worker.
- **Circuit breaker.** A call that fails for an endpoint-level reason (timeout, connection, 5xx,
  429 past retries) before any call succeeded takes the endpoint out at once (those failures have
  already spent their retries); a malformed reply, which is cheap and may be a one-off, does so
  after :data:`PROBE_TOLERANCE` in a row. After a success, ``max_consecutive_failures``
  endpoint-level failures in a row take it out. Calls to an endpoint
  that is out are not sent: they fail at once with :class:`EndpointUnavailable`, counted as
  transport failures, so a dead endpoint costs one call budget and the run ends INCOMPLETE
  instead of waiting out every call.
- **Fatal stop.** A :class:`FatalLLMError` (401/403, 404) stops every call: the one that got it
  re-raises it, every other raises :class:`RunStopped` with the same message.

A replica set (:mod:`harness.llm.providers.replicas`) has one endpoint per replica, judged per HTTP
attempt, and one for the set (``replicas``: the members), which its clients hold. A replica taken out
is :meth:`Endpoint.readmit`-ted after a while, on probation: its next call goes alone, as a first
call does, and its failure takes the replica out again at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from harness.served.request_errors import EndpointUnavailable, FatalLLMError, LLMError, MalformedReply, RunStopped

T = TypeVar("T")

DEFAULT_MAX_CONSECUTIVE_FAILURES = 10
#: seconds before a replica taken out gets a probe request; doubled after each failed probe, up to the max
DEFAULT_REPLICA_RETRY_S = 30.0
MAX_REPLICA_RETRY_S = 600.0
#: malformed replies tolerated in a row before an endpoint that never answered well is taken out
PROBE_TOLERANCE = 3


class Endpoint:
    """Shared by every client of one (provider, base URL, bound) in one evaluation. ``replicas``: the
    member endpoints when this one stands for a replica set (listed by :meth:`describe`)."""

    def __init__(self, label: str, max_concurrency: int,
                 max_consecutive_failures: int = DEFAULT_MAX_CONSECUTIVE_FAILURES,
                 replicas: Sequence[Endpoint] = ()) -> None:
        if max_concurrency < 1 or max_consecutive_failures < 1:
            raise ValueError("max_concurrency and max_consecutive_failures must be >= 1")
        self.label = label
        self.max_concurrency = int(max_concurrency)
        self.max_consecutive_failures = int(max_consecutive_failures)
        self._slots = threading.BoundedSemaphore(self.max_concurrency)
        self._cond = threading.Condition()
        self._probing = False  # a first call is on its way
        self.probation = False  # readmitted after being taken out: judged as if no call had succeeded
        self.successes = 0
        self.failures = 0
        self.consecutive_failures = 0
        self.in_flight = 0
        self.sent = 0
        self.out_reason: str | None = None  # why the endpoint was taken out
        self.fatal: FatalLLMError | None = None
        self.replicas = tuple(replicas)

    def __repr__(self) -> str:
        state = "fatal" if self.fatal else "out" if self.out_reason else "open" if self.proven else "probing"
        return f"Endpoint({self.label!r}, {state}, in_flight={self.in_flight})"

    @property
    def proven(self) -> bool:
        """A call has succeeded since the endpoint was created or last readmitted."""
        return bool(self.successes) and not self.probation

    @property
    def available(self) -> bool:
        return self.fatal is None and self.out_reason is None

    def _check(self) -> None:
        if self.fatal is not None:
            raise RunStopped(f"not sent: {self.fatal}", original=self.fatal)
        if self.out_reason is not None:
            raise EndpointUnavailable(f"not sent: {self.out_reason}")

    @contextmanager
    def call(self) -> Iterator[None]:
        """Held for one whole call (all its attempts): waits at the first-call gate; raises when
        the endpoint is out or the run stopped."""
        with self._cond:
            while True:
                self._check()
                if self.proven or not self._probing:
                    break
                self._cond.wait()
            probe = not self.proven
            if probe:
                self._probing = True
        try:
            yield
        finally:
            if probe:
                with self._cond:
                    self._probing = False
                    self._cond.notify_all()

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Held for one HTTP attempt: one of ``max_concurrency`` slots."""
        self._slots.acquire()
        try:
            with self._cond:
                self._check()  # stopped while we waited for the slot: do not send
                self.in_flight += 1
                self.sent += 1
        except BaseException:
            self._slots.release()
            raise
        try:
            yield
        finally:
            with self._cond:
                self.in_flight -= 1
            self._slots.release()

    def succeeded(self) -> bool:
        """Record a success; True when it ended a probation (the endpoint is back)."""
        with self._cond:
            self.successes += 1
            self.consecutive_failures = 0
            back, self.probation = self.probation, False
            self._cond.notify_all()
            return back

    def readmit(self) -> str | None:
        """Put an endpoint that was taken out (not one stopped by a fatal error) back, on probation;
        returns why it had been out (None: it was not out, nothing changed)."""
        with self._cond:
            if self.out_reason is None or self.fatal is not None:
                return None
            reason, self.out_reason = self.out_reason, None
            self.consecutive_failures = 0
            self.probation = True
            self._cond.notify_all()
            return reason

    def failed(self, error: BaseException, *, may_take_out: bool = True) -> bool:
        """Record a call's final failure (after its retries); may take the endpoint out (unless
        ``may_take_out`` is False: counted only) or stop it. True when this failure took it out."""
        with self._cond:
            if isinstance(error, FatalLLMError):
                if self.fatal is None and not isinstance(error, RunStopped):
                    self.fatal = error
                self._cond.notify_all()
                return False
            if not isinstance(error, LLMError) or isinstance(error, EndpointUnavailable):
                return False
            self.failures += 1
            if not error.endpoint_level:
                return False
            self.consecutive_failures += 1
            if self.out_reason is None and may_take_out:
                self.out_reason = self._breaker(error)
                self._cond.notify_all()
                return self.out_reason is not None
            return False

    def _breaker(self, error: LLMError) -> str | None:
        """Why ``error`` (just counted) takes the endpoint out, or None."""
        quick = isinstance(error, MalformedReply) and self.consecutive_failures < PROBE_TOLERANCE
        if self.probation and not quick:
            return f"{self.label} was taken out again: its probe call failed ({error})"
        if not self.successes and not quick:
            return f"{self.label} was taken out: its first call failed ({error})"
        if self.consecutive_failures >= self.max_consecutive_failures:
            return (f"{self.label} was taken out after {self.consecutive_failures} consecutive "
                    f"failed calls (last: {error})")
        return None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "endpoint": self.label, "max_concurrency": self.max_concurrency, "sent": self.sent,
            "successes": self.successes, "failures": self.failures, "out": self.out_reason,
            "fatal": None if self.fatal is None else str(self.fatal)}
        if self.replicas:
            out["replicas"] = [r.label for r in self.replicas]
            out["replicas_out"] = sum(not r.available for r in self.replicas)
        return out


def guarded_call(endpoint: Endpoint, policy: Any, usage: Any, label: str,
                 attempt: Callable[[float | None], T], on_retry: Callable[[LLMError, int], None] | None = None
                 ) -> tuple[T, int]:
    """One call (all its attempts) through ``endpoint``'s gate and breaker, retried by ``policy`` (a
    :class:`~harness.served.retry.RetryPolicy`); each retry and a final failure are recorded in ``usage``
    under ``label``, and the failure is raised. Returns the result and the number of retries. The one
    failure policy of chat, embedding and rerank calls."""
    retries = 0

    def note(error: LLMError, n: int) -> None:
        nonlocal retries
        retries += 1
        usage.record_retry(label, error)
        if on_retry is not None:
            on_retry(error, n)

    try:
        with endpoint.call():
            result = policy.call(attempt, note)
    except (LLMError, FatalLLMError) as error:
        endpoint.failed(error)
        usage.record_failure(label, error)
        raise
    endpoint.succeeded()
    return result, retries
