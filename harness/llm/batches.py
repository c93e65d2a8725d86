"""Managing the batches ``--llm-batch`` runs left at the providers (``harness batch``; public through
:mod:`harness.llm`), from the journal beside the LLM cache: :class:`Batches` lists them and asks
the providers how far each is, collects what has ended into the cache, cancels, and deletes the
provider's copies of collected batches.

The journal is a file the user may not have written: a batch's base URL receives the user's key only
when :func:`endpoint_allowed` says so."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.concepts.errors import HarnessError
from harness.llm.providers.anthropic import ANTHROPIC_URL
from harness.llm.providers.openai import OPENAI_URL
from harness.llm.spec import LLMSpec, normalize_url
from harness.runtime.redact import MASK, redact_url
from harness.served.batch.journal import LIVE
from harness.served.batch.protocol import BatchCleanup
from harness.served.batch.runner import unknown_batch
from harness.served.request_errors import LLMError, ModelNotFound

if TYPE_CHECKING:  # pragma: no cover
    from harness.llm.session import LLMSession
    from harness.served.batch.journal import BatchRecord
    from harness.served.batch.protocol import RemoteStatus

#: the hosts a journal's endpoint may name without being allowed explicitly: this machine
LOOPBACK = ("127.0.0.1", "localhost", "::1")
Echo = Callable[[str], None]


def endpoint_allowed(base_url: str | None, endpoints: Iterable[str] = ()) -> bool:
    """Whether a journal's ``base_url`` may receive the user's key: the provider's default (None), the
    providers' own endpoints, the base URLs of the user's environment (``OPENAI_BASE_URL``,
    ``ANTHROPIC_BASE_URL``), loopback, or one of ``endpoints`` (``--endpoint``)."""
    import os
    from urllib.parse import urlsplit

    if not base_url:
        return True
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return False
    if host in LOOPBACK:
        return True
    mine = [OPENAI_URL, ANTHROPIC_URL, os.environ.get("OPENAI_BASE_URL", ""),
            os.environ.get("ANTHROPIC_BASE_URL", ""), *endpoints]
    return normalize_url(base_url) in {normalize_url(u) for u in mine if u}


def _silent(line: str) -> None:
    """The default ``echo``: progress lines are dropped."""


@dataclass(frozen=True)
class BatchStatus:
    """One journal record and what its provider says of it: ``remote`` (None when not asked: the
    batch is not pending, ``offline``, or asking failed) and ``problem`` (why asking failed)."""

    record: BatchRecord
    remote: RemoteStatus | None = None
    problem: str = ""

    def describe(self) -> str:
        """The provider column of ``harness batch status``: ``in_progress 3/10``, the problem, or ``-``."""
        if self.remote is not None:
            return f"{self.remote.status} {self.remote.done}/{self.remote.total}"
        return self.problem or "-"


@dataclass(frozen=True)
class CollectOutcome:
    """What :meth:`Batches.collect` did: ``running`` batches still pending, ``unknown`` (batches the
    provider does not know, marked abandoned: one line each), ``usage`` (the usage table, "" when no
    provider was asked)."""

    running: int = 0
    unknown: list[str] = field(default_factory=list)
    usage: str = ""


@dataclass(frozen=True)
class CancelOutcome:
    """What :meth:`Batches.cancel` did: ``requested`` (batch ids), ``unknown`` (marked abandoned) and
    ``refused`` (e.g. already ended), one line each."""

    requested: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CleanOutcome:
    """What :meth:`Batches.clean` did: ``deleted`` (batch id -> what was deleted at the provider) and
    ``kept`` (batch ids whose provider offers no delete)."""

    deleted: dict[str, list[str]] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)


class Batches:
    """The batches in the journal of ``session``'s cache (``Batches(context.llm)``; the session's
    settings should have ``batch=True``). ``endpoints``: base URLs the journal may name beyond
    :func:`endpoint_allowed`'s defaults. Methods that report progress take ``echo`` (called with
    each line as it happens)."""

    def __init__(self, session: LLMSession, endpoints: Iterable[str] = ()) -> None:
        self.session = session
        self.endpoints = tuple(endpoints)
        self.journal = session.journal(session.cache())

    @property
    def path(self) -> Path:
        """The journal file (``<cache>/llm/batches.db``)."""
        return Path(self.journal.path)

    def records(self, include_ended: bool = False) -> list[BatchRecord]:
        """The pending batches (reserved or submitted); with ``include_ended``, also the collected,
        abandoned and cancelled ones."""
        return self.journal.batches(None if include_ended else LIVE)

    def runner(self, rec: BatchRecord) -> Any:
        """The batch runner of a record's endpoint (its provider, model and base URL), refused with a
        :class:`~harness.HarnessError` when the base URL is not allowed or held credentials."""
        if rec.base_url and MASK in rec.base_url:
            raise HarnessError(f"batch {rec.remote_id}: its base URL held credentials, which the journal does not "
                               f"keep; collect it by running the `harness eval` command that submitted it")
        if not endpoint_allowed(rec.base_url, self.endpoints):
            shown = redact_url(rec.base_url)
            raise HarnessError(f"batch {rec.remote_id or '#' + str(rec.id)}: its endpoint {shown} comes from the "
                               f"batch journal, not from your settings, so your API key is not sent there; if you "
                               f"submitted it, allow it with --endpoint {shown}")
        spec = LLMSpec(rec.provider, rec.model, rec.base_url, text=f"{rec.provider}:{rec.model}")
        return self.session.client(spec).batch

    def status(self, include_ended: bool = False, offline: bool = False) -> list[BatchStatus]:
        """Each record of :meth:`records` with, for submitted ones (unless ``offline``), the provider's status."""
        return [self._status(rec, offline) for rec in self.records(include_ended)]

    def _status(self, rec: BatchRecord, offline: bool) -> BatchStatus:
        if rec.state != "submitted" or offline:
            return BatchStatus(rec)
        try:
            return BatchStatus(rec, self.runner(rec).api.status(rec.remote_id))
        except ModelNotFound:
            return BatchStatus(rec, problem="unknown to the provider (404)")
        except HarnessError as exc:  # e.g. an endpoint only the journal names: not asked
            return BatchStatus(rec, problem="not asked: endpoint from the journal (--endpoint)"
                               if "--endpoint" in str(exc) else f"unknown ({type(exc).__name__})")
        except LLMError as exc:
            return BatchStatus(rec, problem=f"unknown ({type(exc).__name__})")

    def _abandon(self, rec: BatchRecord) -> str:
        """Mark a batch the provider answered 404 for as abandoned; returns the line that lists it."""
        note = unknown_batch(rec)
        self.journal.mark_abandoned(rec.id, note)
        return f"{rec.remote_id}: {note}"

    def collect(self, wait: bool = False, echo: Echo = _silent,
                sleep: Callable[[float], None] = time.sleep) -> CollectOutcome:
        """Gather the results of every ended batch into the cache; with ``wait``, poll (2 s, growing
        to 60 s) until none is running. An intent whose owner stopped is looked for at the provider."""
        pause, unknown = 2.0, []
        while True:
            running = sum(self._collect_one(rec, echo, unknown) for rec in self.records())
            if not running or not wait:
                break
            sleep(pause)
            pause = min(pause * 1.5, 60.0)
        usage = self.session.usage().table() if self.session.clients else ""
        return CollectOutcome(running, unknown, usage)

    def _collect_one(self, rec: BatchRecord, echo: Echo, unknown: list[str]) -> int:
        """Collect one live batch if it has ended; returns 1 while it is still running."""
        runner = self.runner(rec)
        if rec.state == "intent":
            if not rec.owner_gone:
                return 1
            rec = runner.recover(rec)
            if rec.state != "submitted":
                echo(f"#{rec.id}: {rec.note}")
                return 0
        try:
            status = runner.retrying(lambda: runner.api.status(rec.remote_id))
            if not status.ended:
                echo(f"{rec.remote_id}: {status.status}, {status.done}/{status.total} requests done")
                return 1
            runner.collect(self.journal.get(rec.id))
        except ModelNotFound:
            unknown.append(self._abandon(rec))
            return 0
        echo(f"{rec.remote_id}: {status.status}; collected ({self.journal.get(rec.id).note})")
        return 0

    def cancel(self, batch_ids: Iterable[str] = (), cancel_all: bool = False, echo: Echo = _silent) -> CancelOutcome:
        """Ask the providers to cancel pending batches (by id, or every one with ``cancel_all``); an id
        that names no pending batch is a :class:`~harness.HarnessError` before anything is sent."""
        batch_ids = tuple(batch_ids)
        live = [r for r in self.records() if r.state == "submitted"]
        chosen = live if cancel_all else [r for r in live if r.remote_id in batch_ids]
        missing = sorted(set(batch_ids) - {r.remote_id for r in chosen})
        if missing:
            raise HarnessError(f"no pending batch {', '.join(missing)} in {self.path} (`harness batch status`)")
        out = CancelOutcome()
        for rec in chosen:
            runner = self.runner(rec)
            try:
                runner.retrying(lambda r=rec, x=runner: x.api.cancel(r.remote_id))
            except ModelNotFound:
                out.unknown.append(self._abandon(rec))
                continue
            except LLMError as exc:  # already ended, say: the others are still cancelled
                out.refused.append(f"{rec.remote_id}: {exc}")
                continue
            self.journal.note(rec.id, "cancel requested; `harness batch collect` gathers what it finished")
            out.requested.append(rec.remote_id)
            echo(f"{rec.remote_id}: cancel requested")
        return out

    def cleanable(self) -> list[BatchRecord]:
        """The collected batches whose copies (input and result files, the batch) the provider still keeps."""
        return [r for r in self.journal.batches(["collected"]) if r.remote_id and r.removed is None]

    def clean(self, records: Iterable[BatchRecord] | None = None, echo: Echo = _silent) -> CleanOutcome:
        """Delete at the provider what ``records`` (default: :meth:`cleanable`) left there; their
        replies stay in the cache. A provider whose batch API offers no delete keeps them."""
        out = CleanOutcome()
        for rec in self.cleanable() if records is None else records:
            runner = self.runner(rec)
            if not isinstance(runner.api, BatchCleanup):
                out.kept.append(rec.remote_id)
                echo(f"{rec.remote_id}: kept ({rec.provider}'s batch API offers no delete)")
                continue
            try:
                deleted = runner.retrying(lambda r=rec, x=runner: x.api.delete(r.remote_id))
            except ModelNotFound:  # the batch itself is gone: nothing is left to delete
                deleted = []
            what = ", ".join(deleted) if deleted else "nothing left"
            self.journal.mark_removed(rec.id, f"{rec.note or 'collected'}; deleted at the provider: {what}")
            out.deleted[rec.remote_id] = list(deleted)
            echo(f"{rec.remote_id}: deleted {what}")
        return out
