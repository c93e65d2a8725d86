"""What a provider's batch API offers the harness, whatever the provider (OpenAI's Files + Batches,
Anthropic's Message Batches, a plugin's own).

A provider that has one returns a :class:`BatchAPI` from ``provider.batch_api()``. Every request of
a batch carries its cache key as ``custom_id`` (64 hex characters: within Anthropic's
``^[a-zA-Z0-9_-]{1,64}$``), so results, which come back in any order, are matched by key, and any
later process can collect them into the cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harness.served.request_errors import FatalLLMError, LLMError
from harness.served.types import ChatOptions, Message, Reply


@dataclass(frozen=True)
class BatchLimits:
    """The most requests and request bytes one batch may hold."""

    max_requests: int
    max_bytes: int


@dataclass(frozen=True)
class RemoteStatus:
    """A batch as the provider reports it. ``ended``: no request will change any more (completed,
    failed, expired, cancelled); ``status``: the provider's own word; ``done`` of ``total`` requests
    have a result (succeeded or errored)."""

    id: str
    ended: bool
    status: str
    total: int = 0
    done: int = 0
    failed: int = 0
    created_at: float = 0.0
    message: str = ""
    #: :func:`requests_digest` of its requests where the provider keeps it (OpenAI's metadata)
    digest: str | None = None


@dataclass(frozen=True)
class Unprocessed:
    """A request the batch ended without processing: ``reason`` is ``expired``, ``cancelled``,
    ``failed`` (the whole batch was rejected) or ``missing`` (no line for it in the results)."""

    reason: str
    message: str = ""


@dataclass(frozen=True)
class Pending:
    """One request no cache holds: its cache key and payload, messages, options and fallback note."""

    key: str
    payload: Mapping[str, Any]
    messages: list[Message]
    options: ChatOptions
    fallback: str | None = None


#: what a batch gives back for one request
Outcome = Reply | LLMError | FatalLLMError | Unprocessed


@runtime_checkable
class BatchAPI(Protocol):
    """One provider endpoint's batch API. Every method makes the provider's HTTP calls once (the
    runner retries them) and raises :mod:`harness.served.request_errors` types."""

    limits: BatchLimits

    def request(self, custom_id: str, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        """One request of a batch, as the provider's batch input holds it (JSON-serialisable)."""
        ...

    def submit(self, requests: list[dict[str, Any]], tag: str) -> str:
        """Create a batch of ``requests``; returns its id. ``tag`` is attached where the provider
        keeps metadata, so :meth:`find` can recognise the batch if the id never reached the journal
        (with :func:`requests_digest` of the custom_ids, for :class:`BatchListing`)."""
        ...

    def status(self, batch_id: str) -> RemoteStatus:
        ...

    def results(self, batch_id: str, options: Mapping[str, ChatOptions]) -> dict[str, Outcome]:
        """Every request's outcome of an ended batch, by custom_id (``options``: each request's chat
        options, to parse its reply as a direct call's reply is parsed)."""
        ...

    def find(self, tag: str, since: float, custom_ids: Iterable[str], known: set[str]) -> str | None:
        """The id of a batch submitted at or after ``since`` (epoch seconds) with ``tag`` (or, where
        the provider keeps no metadata, with exactly these requests), not among ``known`` ids; None
        when there is none."""
        ...

    def cancel(self, batch_id: str) -> None:
        ...


@runtime_checkable
class BatchListing(Protocol):
    """A batch API that can list recent batches. Optional: where offered, the runner recognises its
    own batches without the journal (one lost, emptied or damaged) before it submits anything, by
    :func:`requests_digest` or, where the provider keeps no metadata, by request count and custom_ids."""

    def recent(self, since: float, limit: int) -> list[RemoteStatus]:
        """Batches created at or after ``since`` (epoch seconds), newest first, at most ``limit``;
        ``digest`` set where the provider keeps the one :meth:`BatchAPI.submit` attached."""
        ...

    def custom_ids(self, batch_id: str) -> set[str] | None:
        """The custom_ids of an ended batch's requests (None where they cannot be known)."""
        ...


def requests_digest(custom_ids: Iterable[str]) -> str:
    """The tag a batch's requests give it, recomputable without the journal: sha256 of its sorted
    custom_ids (cache keys), one per line."""
    return hashlib.sha256("\n".join(sorted(custom_ids)).encode()).hexdigest()


@runtime_checkable
class BatchCleanup(Protocol):
    """A batch API that can delete what an ended batch left at the provider (its uploaded input and
    its result files, or the batch itself). Optional: ``harness batch clean`` uses it where offered."""

    def delete(self, batch_id: str) -> list[str]:
        """Delete the provider's copies of an ended batch; returns the ids of what was deleted
        (already gone is not an error)."""
        ...
