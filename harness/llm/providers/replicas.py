"""Several endpoints (replicas) serving one OpenAI-compatible model, as one provider.

``vllm:MODEL:base_url=["http://h1:8000/v1","http://h2:8000/v1"]`` gives a :class:`ReplicaSet` over one
:class:`~harness.llm.providers.openai.OpenAICompatibleProvider` and one
:class:`~harness.served.endpoint.Endpoint` per URL (its bound, first-call gate and breaker):

- **Routing.** A request goes to the live replica with the fewest of this set's requests in flight
  (ties: round robin), preferring one with a free slot that is not waiting for its first reply.
- **Failover.** A 429, 5xx, timeout or dropped/refused connection sends the request at once to another
  live replica it has not tried, inside one attempt of the client's retry policy (no backoff, no
  attempt spent); when every live replica failed it, the client retries as usual.
- **Taking out.** A replica's breaker judges each HTTP attempt (a 429 aside): its first call failing,
  or ``max_consecutive_failures`` in a row, takes it out, with one warning line. The last live replica
  is not taken out that way: it is then judged like a single endpoint, by the client's retries and the
  set's own endpoint. With every replica out, requests fail at once with :class:`EndpointUnavailable`.
- **Coming back.** ``retry_after`` seconds (``LLMSettings.replica_retry``, 30 by default) after it was
  taken out, a replica is readmitted on probation: one request goes to it alone; its success brings
  the replica back (one warning line), its failure takes it out again and the wait doubles (up to
  10 minutes). A replica restarted during a long run rejoins it.
- **Fatal errors** (401/403/404 from any replica) stop every replica and the run.
- **Cache key.** :attr:`ReplicaSet.base_url` is :data:`KEY_MARKER`, not a replica's URL: which replica
  answered, and which replicas are listed, never changes a key.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.served.endpoint import DEFAULT_REPLICA_RETRY_S, MAX_REPLICA_RETRY_S, Endpoint
from harness.served.request_errors import EndpointUnavailable, FatalLLMError, LLMError, RateLimited, RunStopped
from harness.served.retry import MIN_ATTEMPT_S
from harness.served.types import ChatOptions, Message, Reply

#: the ``base_url`` of a replica set in cache keys (a single URL keeps its own, so old caches stay valid)
KEY_MARKER = "replicas"
log = logging.getLogger("harness.llm")


@dataclass(eq=False)
class Replica:
    """One replica: its provider and endpoint, and this set's counters for it."""

    index: int
    provider: Any
    endpoint: Endpoint
    load: int = 0  # this set's requests routed here and not finished
    failovers: int = 0  # requests that failed here and went to another replica
    out_at: float | None = None  # when it was (last) taken out (time.monotonic)
    wait_s: float = 0.0  # how long it stays out before a probe (0: never taken out yet)
    returns: int = 0  # times it came back after being taken out

    @property
    def url(self) -> str:
        return str(self.provider.public_url)

    def describe(self) -> dict[str, Any]:
        e = self.endpoint
        return {"url": self.url, "sent": e.sent, "successes": e.successes, "failures": e.failures,
                "failovers": self.failovers, "out": e.out_reason, "returns": self.returns}


class ReplicaSet:
    """A :class:`~harness.llm.providers.base.Provider` over replicas of one model (module docstring)."""

    name = "openai-compatible"
    base_url = KEY_MARKER
    supports_logprobs = True

    def __init__(self, providers: Sequence[Any], endpoints: Sequence[Endpoint],
                 retry_after: float = DEFAULT_REPLICA_RETRY_S) -> None:
        if not providers or len(providers) != len(endpoints):
            raise ValueError("a replica set needs one endpoint per provider, and at least one")
        self.replicas = [Replica(i, p, e) for i, (p, e) in enumerate(zip(providers, endpoints, strict=True))]
        first = providers[0]
        self.name, self.model = first.name, first.model
        self.timeout, self.connect_timeout = first.timeout, first.connect_timeout
        self._lock = threading.Lock()
        self._next = 0  # where round robin starts among equally loaded replicas
        self._warm = False
        self.retry_after = float(retry_after)

    def __repr__(self) -> str:  # the URLs with credentials masked
        return f"ReplicaSet({self.label}, {[r.url for r in self.replicas]})"

    def normalize_options(self, options: ChatOptions) -> ChatOptions:
        return self.replicas[0].provider.normalize_options(options)

    def check_settings(self, settings: Mapping[str, Any]) -> None:
        """The members' rule for the reasoning settings (every member is the same kind of server)."""
        self.replicas[0].provider.check_settings(settings)

    def batch_api(self) -> None:
        """None: OpenAI-compatible servers offer no Batch API."""
        return None

    def describe(self) -> list[dict[str, Any]]:
        """Per replica: URL (masked), requests sent, successes, failures, failovers, why it is out."""
        return [r.describe() for r in self.replicas]

    # -- one attempt -------------------------------------------------------------------------------
    def chat(self, messages: list[Message], options: ChatOptions, *, timeout: float | None = None) -> Reply:
        """One attempt of the client: the request on the least loaded live replica, failing over to the
        others on a transient endpoint-level error. Raises the last replica's error when all failed,
        :class:`EndpointUnavailable` when none is live."""
        return self.route(lambda p, left: p.chat(messages, options, timeout=left), timeout)

    def embed(self, texts: list[str], dimensions: int | None = None, *, timeout: float | None = None) -> Any:
        """One embeddings attempt, routed and failed over as :meth:`chat`."""
        return self.route(lambda p, left: p.embed(texts, dimensions, timeout=left), timeout)

    def server_models(self) -> Any:
        """What the first replica reports at ``GET /models``."""
        return self.replicas[0].provider.server_models()

    def embedding_body(self, texts: list[str], dimensions: int | None) -> dict[str, Any]:
        return self.replicas[0].provider.embedding_body(texts, dimensions)

    def route(self, send: Any, timeout: float | None) -> Any:
        """``send(provider, time_left)`` on the least loaded live replica, with failover (see :meth:`chat`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._warm_up()
        tried: set[int] = set()
        error: LLMError | None = None
        while (replica := self._pick(tried)) is not None:
            tried.add(replica.index)
            left = None if deadline is None else deadline - time.monotonic()
            try:
                return self._send(replica, send, left)
            except LLMError as exc:
                if not (exc.retryable or isinstance(exc, EndpointUnavailable)):
                    raise
                if not isinstance(exc, EndpointUnavailable):
                    error = exc
                    if deadline is not None and deadline - time.monotonic() < MIN_ATTEMPT_S:
                        raise
                with self._lock:
                    replica.failovers += 1
                log.debug("%s: %s failed (%s); trying another replica", self.label, replica.url, exc)
        raise error or self._unavailable()

    @property
    def label(self) -> str:
        return f"{self.name}:{self.model}"

    def _warm_up(self) -> None:
        """Make every replica's SDK client at the first call, so a replica's first request is not
        slower than the others' (which would skew the load for a while)."""
        if self._warm:
            return
        for r in self.replicas:
            make = getattr(r.provider, "client", None)
            if callable(make):
                make()
        self._warm = True

    def _pick(self, tried: set[int]) -> Replica | None:
        """The live replica (not in ``tried``) with the fewest requests in flight, ties in turn: one
        with a free slot and not waiting behind its first call if there is one."""
        with self._lock:
            self._check_fatal()
            self._readmit_due()
            live = [r for r in self.replicas if r.endpoint.available and r.index not in tried]
            if not live:
                return None
            ready = [r for r in live if r.load < r.endpoint.max_concurrency and (r.endpoint.proven or not r.load)]
            n = len(self.replicas)
            best = min(ready or live, key=lambda r: (r.load, (r.index - self._next) % n))
            self._next = (best.index + 1) % n
            best.load += 1
            return best

    def _send(self, replica: Replica, send: Any, timeout: float | None) -> Any:
        """One HTTP attempt on ``replica``, through its gate and bound, recorded by its breaker."""
        endpoint = replica.endpoint
        try:
            with endpoint.call():
                try:
                    with endpoint.slot():
                        reply = send(replica.provider, timeout)
                except FatalLLMError as exc:
                    self._stop_all(exc)
                    raise
                except LLMError as exc:
                    self._failed(replica, exc)
                    raise
                if endpoint.succeeded():
                    self._back(replica)
                return reply
        finally:
            with self._lock:
                replica.load -= 1

    def _failed(self, replica: Replica, error: LLMError) -> None:
        """Count ``error`` against ``replica``; take it out (one warning; a failed probe: one info
        line) when its breaker says so, unless it is the last live one."""
        if isinstance(error, RateLimited | EndpointUnavailable):  # busy or already out: not a broken replica
            return
        with self._lock:
            others = sum(r.endpoint.available for r in self.replicas if r is not replica)
            again = replica.endpoint.probation  # a failed probe
            took_out = replica.endpoint.failed(error, may_take_out=others > 0)
            if took_out:
                replica.out_at = time.monotonic()
                replica.wait_s = min(replica.wait_s * 2, MAX_REPLICA_RETRY_S) if again else self.retry_after
        if took_out:
            (log.info if again else log.warning)(
                "%s: replica %s; the run goes on with %d of %d replicas (a probe in %.0f s)", self.label,
                replica.endpoint.out_reason, others, len(self.replicas), replica.wait_s)

    def _readmit_due(self) -> None:
        """Readmit, on probation, each replica whose time out is over (under the lock)."""
        now = time.monotonic()
        for r in self.replicas:
            if r.out_at is not None and now - r.out_at >= r.wait_s and r.endpoint.readmit() is not None:
                r.out_at = None
                log.info("%s: replica %s gets a probe request", self.label, r.url)

    def _back(self, replica: Replica) -> None:
        """A probe succeeded: the replica is back (one warning line, as its taking out had)."""
        with self._lock:
            replica.returns += 1
            replica.wait_s = 0.0
            live = sum(r.endpoint.available for r in self.replicas)
        log.warning("%s: replica %s is back; the run goes on with %d of %d replicas", self.label, replica.url,
                    live, len(self.replicas))

    def _stop_all(self, error: FatalLLMError) -> None:
        """A fatal error on one replica (a rejected key, an unknown model) stops them all."""
        if not isinstance(error, RunStopped):
            for r in self.replicas:
                r.endpoint.failed(error)

    def _check_fatal(self) -> None:
        fatal = next((r.endpoint.fatal for r in self.replicas if r.endpoint.fatal is not None), None)
        if fatal is not None:
            raise RunStopped(f"not sent: {fatal}", original=fatal)

    def _unavailable(self) -> EndpointUnavailable:
        reasons = "; ".join(str(r.endpoint.out_reason) for r in self.replicas)
        return EndpointUnavailable(f"not sent: all {len(self.replicas)} replicas are out ({reasons})",
                                   provider=self.name, model=self.model)
