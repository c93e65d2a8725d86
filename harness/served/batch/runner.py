"""Answer a stage's requests through a provider's batch API: submit what no cache and no live batch
holds, wait, collect every result into the reply cache, resubmit once what a batch did not process.

The cache key is each request's ``custom_id``, and the journal (:mod:`harness.served.batch.journal`)
records every batch before and after it is submitted, so a run killed at any point and started again
submits nothing twice: it adopts the batches still live, polls them and collects their results.
Provider calls (upload, create, poll, download) go through the client's retry policy.

The journal may itself be lost (deleted, emptied, damaged and moved aside). So before a round
submits requests the journal holds no live batch for, the runner lists the provider's batches of
the last :data:`LOOKBACK` seconds (one list call, where the API offers :class:`BatchListing`) and
adopts one that holds exactly the requests it is about to submit: recognised by the digest of their
custom_ids in its metadata (OpenAI), or, where the provider keeps none (Anthropic), by its custom_ids
once ended, or by its request count alone while it runs when the journal was found empty.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from harness.concepts.errors import HarnessError
from harness.runtime.progress import ProgressSettings, progress
from harness.served.batch.journal import BatchJournal, BatchRecord
from harness.served.batch.protocol import (
    BatchAPI,
    BatchListing,
    Outcome,
    Pending,
    RemoteStatus,
    Unprocessed,
    requests_digest,
)
from harness.served.pool import bounded_map
from harness.served.reply_cache import LLMCache
from harness.served.request_errors import BatchPending, FatalLLMError, LLMError, ModelNotFound, NotProcessed
from harness.served.retry import RetryPolicy
from harness.served.types import ChatOptions, Reply
from harness.served.usage import Usage

log = logging.getLogger("harness.llm")
#: first and longest pause between two status checks when no interval is set
FIRST_POLL, MAX_POLL = 2.0, 60.0
#: before submitting, the provider's batches of the last 24 hours (at most 1,000) are looked through
#: for one holding exactly the requests at hand; at most 5 ended batches' custom_ids are read per round
LOOKBACK, LOOKBACK_BATCHES, MAX_ID_READS = 24 * 3600.0, 1000, 5


def options_from_payload(payload: Mapping[str, Any]) -> ChatOptions:
    """The chat options a journal payload was made from (logprobs as ``optional``: a reply without them
    is kept, marked, rather than rejected)."""
    o = dict(payload.get("options") or {})
    return ChatOptions(temperature=o.get("temperature", 0.0), top_p=o.get("top_p"), max_tokens=o.get("max_tokens"),
                       stop=tuple(o["stop"]) if o.get("stop") else None, seed=o.get("seed"),
                       logprobs="optional" if o.get("logprobs") else False, top_logprobs=o.get("top_logprobs") or 0,
                       sample=o.get("sample") or 0, extra=o.get("extra") or {})


class BatchRunner:
    """The batch side of one client. ``send_direct`` sends one request directly (used when
    ``batch_retry="direct"``); ``poll``: fixed seconds between status checks (None: 2 s growing to
    60 s); ``wait`` False collects the batches that have ended and stops with :class:`BatchPending`
    while any is still running; ``stop``, once set, ends a wait the same way."""

    def __init__(self, api: BatchAPI, journal: BatchJournal, cache: LLMCache, usage: Usage, label: str,
                 endpoint: Mapping[str, Any], *, retry: RetryPolicy | None = None, wait: bool = True,
                 poll: float | None = None, resend: str = "batch", max_requests: int | None = None,
                 send_direct: Callable[[Pending], Reply] | None = None, progress: ProgressSettings | None = None,
                 sleep: Callable[[float], object] = time.sleep, stop: threading.Event | None = None) -> None:
        self.api, self.journal, self.cache, self.usage, self.label = api, journal, cache, usage, label
        self.endpoint = dict(endpoint)
        self.retry = retry or RetryPolicy()
        self.wait, self.poll, self.resend = wait, poll, resend
        self.max_requests = min(api.limits.max_requests, max_requests or api.limits.max_requests)
        self.send_direct = send_direct
        self.progress = progress
        self.stop = stop
        self.sleep = stop.wait if stop is not None else sleep  # a stop ends the pause at once

    # -- the stage ---------------------------------------------------------------------------
    def resolve(self, requests: Iterable[Pending]) -> dict[str, Reply | LLMError]:
        """Replies (or the :class:`LLMError` that took each one's place) for requests no cache holds.
        Raises :class:`FatalLLMError` when nothing can succeed and :class:`BatchPending` when not
        waiting."""
        todo = {r.key: r for r in requests}
        if not todo:
            return {}
        self.usage.record_round(self.label)
        self._recover()
        out: dict[str, Reply | LLMError] = {}
        for attempt in (1, 2):
            if attempt == 2 and self.resend == "direct":
                out.update(self._direct(todo))
                break
            outcomes = self._stage(todo, attempt)
            again: dict[str, Pending] = {}
            for key, outcome in outcomes.items():
                if isinstance(outcome, Reply):
                    out[key] = outcome
                elif isinstance(outcome, FatalLLMError):
                    raise outcome
                elif attempt == 1 and (isinstance(outcome, Unprocessed) or outcome.retryable):
                    again[key] = todo[key]
                else:
                    out[key] = self._failed(outcome)
            todo = again
            if not todo:
                break
            log.info("%s: %d request(s) not answered by their batch; sending them again once (%s)", self.label,
                     len(todo), self.resend)
        return out

    def _failed(self, outcome: LLMError | Unprocessed) -> LLMError:
        error = outcome if isinstance(outcome, LLMError) else NotProcessed(
            f"not processed by its batch, twice ({outcome.reason}: {outcome.message})",
            provider=self.endpoint["provider"], model=self.endpoint["model"])
        self.usage.record_failure(self.label, error)
        return error

    def _direct(self, todo: Mapping[str, Pending]) -> dict[str, Reply | LLMError]:
        """Send ``todo`` directly, one call each (the client counts and caches them)."""
        if self.send_direct is None:
            raise RuntimeError("batch_retry='direct' needs send_direct")

        def one(p: Pending) -> Reply | LLMError:
            try:
                return self.send_direct(p)
            except LLMError as error:
                return error

        items = list(todo.values())
        return dict(zip(todo, bounded_map(one, items, 8), strict=True))

    def _stage(self, todo: Mapping[str, Pending], attempt: int) -> dict[str, Outcome]:
        ids, failed = self._submit(todo, attempt)
        outcomes: dict[str, Outcome] = dict(failed)
        outcomes.update(self._wait(ids, todo))
        for key in todo:
            outcomes.setdefault(key, Unprocessed("missing", "its batch gave no result for it"))
        return outcomes

    def _pending(self, ids: set[int]) -> BatchPending:
        live = [self.journal.get(i) for i in sorted(ids)]
        n = sum(r.n for r in live)
        names = ", ".join(r.remote_id or "being submitted" for r in live)
        return BatchPending(f"pending: {n} request(s) in {len(live)} batch(es) at {self.label} ({names}); run the "
                            f"same command again to collect them and go on (`harness batch status` shows them)",
                            batches=len(live), requests=n)

    # -- submitting ----------------------------------------------------------------------------
    def _chunks(self, pending: list[Pending]) -> Iterator[list[tuple[Pending, dict[str, Any], int]]]:
        """Requests cut into batches within the provider's (and the settings') count and byte limits."""
        import json

        chunk: list[tuple[Pending, dict[str, Any], int]] = []
        size = 0
        for p in pending:
            req = self.api.request(p.key, p.messages, p.options)
            n = len(json.dumps(req, ensure_ascii=False, separators=(",", ":")).encode()) + 1
            if n > self.api.limits.max_bytes:
                raise FatalLLMError(f"one request is {n} bytes, more than a batch may hold "
                                    f"({self.api.limits.max_bytes})", provider=self.endpoint["provider"])
            if chunk and (len(chunk) >= self.max_requests or size + n > self.api.limits.max_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append((p, req, n))
            size += n
        if chunk:
            yield chunk

    def _submit(self, todo: Mapping[str, Pending], attempt: int) -> tuple[set[int], dict[str, LLMError]]:
        """Batch ids that hold ``todo`` (adopted live ones and new ones) and the keys whose submission
        failed. Each new batch is journaled as an intent first, then looked for at the provider (a
        lost journal's batch), then submitted, then marked."""
        held = self.journal.holders(todo)
        ids = set(held.values())
        failed: dict[str, LLMError] = {}
        finder: _Finder | None = None
        for chunk in self._chunks([p for k, p in todo.items() if k not in held]):
            rec, taken = self.journal.reserve(self.endpoint, ((p.key, p.payload) for p, _, _ in chunk), attempt)
            ids.update(taken.values())  # another process reserved some meanwhile: wait for its batch
            if rec is None:
                continue
            mine = [(p, req, n) for p, req, n in chunk if p.key not in taken]
            try:
                if finder is None:
                    finder = self._finder(attempt, rec)
                found = finder.match([p.key for p, _, _ in mine])
                if found is not None:
                    self.journal.mark_submitted(rec.id, found, note="found at the provider by its requests (no "
                                                "journal row had it); adopted")
                    ids.add(rec.id)
                    log.info("%s: batch %s holds these %d requests although the journal had no record of it; "
                             "adopted (nothing submitted)", self.label, found, len(mine))
                    continue
                with self._holding(rec):
                    remote = self.retrying(self._submission(rec, [req for _, req, _ in mine]))
            except LLMError as error:  # the provider refused or was unreachable: the keys are free again
                self.journal.mark_abandoned(rec.id, f"submission failed: {error}")
                failed.update({p.key: error for p, _, _ in mine})
                continue
            except FatalLLMError as error:
                self.journal.mark_abandoned(rec.id, f"submission failed: {error}")
                raise
            nbytes = sum(n for _, _, n in mine)
            self.journal.mark_submitted(rec.id, remote, nbytes)
            self.usage.record_batch(self.label, nbytes)
            ids.add(rec.id)
            log.info("%s: submitted batch %s (%d requests, %d bytes)", self.label, remote, len(mine), nbytes)
        return ids, failed

    def _finder(self, attempt: int, rec: BatchRecord) -> _Finder:
        """The provider's recent batches the journal does not know (one list call), to match chunks
        against; none where the batch API cannot list."""
        if not isinstance(self.api, BatchListing):
            return _Finder(self, [], by_count=False, before=rec.created)
        since = time.time() - LOOKBACK
        recent = self.retrying(lambda: self.api.recent(since, LOOKBACK_BATCHES))
        known = self.journal.remote_ids()
        useful = [b for b in recent if b.id not in known and (not b.ended or b.done > 0)]
        return _Finder(self, useful, by_count=self.journal.fresh and attempt == 1, before=rec.created)

    @contextmanager
    def _holding(self, rec: BatchRecord) -> Iterator[None]:
        """While inside: the intent's lease is renewed every quarter of it (a heartbeat thread), so
        another process waits for this one instead of taking the intent over."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.journal.lease / 4):
                try:
                    self.journal.renew(rec.id)
                except HarnessError as exc:  # the journal is gone: the submission still finishes
                    log.warning("%s: could not renew the lease of batch intent #%d: %s", self.label, rec.id, exc)
                    return

        thread = threading.Thread(target=beat, daemon=True, name=f"batch-lease-{rec.id}")
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _submission(self, rec: BatchRecord, requests: list[dict[str, Any]]) -> Callable[[], str]:
        """One try of submitting ``rec``. A try after a failed one first asks the provider for a batch
        carrying the tag: a create whose acknowledgement was lost (a dropped connection, a timeout)
        may have made the batch, and creating it again would pay for it twice."""
        tries = 0
        keys = [r["custom_id"] for r in requests]

        def attempt() -> str:
            nonlocal tries
            tries += 1
            if tries > 1:
                found = self.api.find(rec.tag, rec.created, keys, self.journal.remote_ids(rec.endpoint))
                if found:
                    log.info("%s: batch %s was created although its acknowledgement was lost; adopted",
                             self.label, found)
                    return found
            return self.api.submit(requests, rec.tag)

        return attempt

    def retrying(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` (one provider call: upload, create, poll, download) under the client's retry policy."""

        def on_retry(error: LLMError, n: int) -> None:
            self.usage.record_retry(self.label, error)

        return self.retry.call(lambda _left: fn(), on_retry)

    # -- recovering ----------------------------------------------------------------------------
    def _recover(self) -> None:
        """Intents of this endpoint whose process is gone: adopt the batch the provider made of them,
        or abandon the intent when it made none."""
        for rec in self.journal.batches(["intent"], self.endpoint["endpoint"]):
            if rec.owner_gone:
                self.recover(rec)

    def recover(self, rec: BatchRecord) -> BatchRecord:
        keys = list(self.journal.requests(rec.id))
        known = self.journal.remote_ids(rec.endpoint)
        remote = self.retrying(lambda: self.api.find(rec.tag, rec.created, keys, known))
        if remote:
            self.journal.mark_submitted(rec.id, remote, note="found at the provider after its submitter stopped")
            log.info("%s: batch %s was submitted by a process that stopped before recording it; adopted",
                     self.label, remote)
        else:
            self.journal.mark_abandoned(rec.id, "never created: its submitter stopped before the provider had it")
        return self.journal.get(rec.id)

    # -- waiting and collecting ----------------------------------------------------------------
    def _wait(self, ids: set[int], todo: Mapping[str, Pending]) -> dict[str, Outcome]:
        outcomes: dict[str, Outcome] = {}
        remaining = set(ids)
        pause = self.poll or FIRST_POLL
        bar = progress(len(todo), f"{self.label}: batch", settings=self.progress, unit="request", stream=sys.stderr)
        shown = 0
        try:
            while remaining:
                try:
                    ended = self._visit_all(remaining, todo)
                except LLMError as error:  # the batch API is unreachable now: the batches stay pending
                    raise BatchPending(f"lost contact with the batch API of {self.label} while waiting ({error}); "
                                       f"{self._pending(remaining)}", batches=len(remaining)) from error
                for bid, got in ended.items():
                    outcomes.update(got)
                    remaining.discard(bid)
                done = sum(1 for k in todo if k in outcomes)
                if done > shown:
                    bar.update(done - shown)
                    shown = done
                if remaining and (not self.wait or (self.stop is not None and self.stop.is_set())):
                    raise self._pending(remaining)
                if remaining:
                    self.sleep(pause)
                    pause = self.poll or min(pause * 1.5, MAX_POLL)
        except KeyboardInterrupt:
            print(f"interrupted: {self._pending(remaining)}", file=sys.stderr)
            raise
        finally:
            bar.close()
        return outcomes

    def _visit_all(self, ids: set[int], todo: Mapping[str, Pending]) -> dict[int, dict[str, Outcome]]:
        """The outcomes of the batches among ``ids`` that are over."""
        ended = {}
        for bid in sorted(ids):
            got = self._visit(self.journal.get(bid), todo)
            if got is not None:
                ended[bid] = got
        return ended

    def _visit(self, rec: BatchRecord, todo: Mapping[str, Pending]) -> dict[str, Outcome] | None:
        """The outcomes of ``rec``'s requests once it is over, else None (still running)."""
        if rec.state == "intent":
            if not rec.owner_gone:
                return None  # another process is submitting it
            rec = self.recover(rec)
        if rec.state in ("abandoned", "cancelled"):
            return {k: Unprocessed(rec.state, rec.note or "") for k in self.journal.requests(rec.id) if k in todo}
        if rec.state == "collected":  # by another process: its replies are in the cache
            return {k: self._from_cache(k, todo[k]) for k in self.journal.requests(rec.id) if k in todo}
        try:
            status = self.retrying(lambda: self.api.status(rec.remote_id))
        except ModelNotFound:  # the provider has no such batch (another account, a reset server)
            note = unknown_batch(rec)
            self.journal.mark_abandoned(rec.id, note)
            return {k: Unprocessed("missing", note) for k in self.journal.requests(rec.id) if k in todo}
        if not status.ended:
            return None
        return self.collect(rec, todo)

    def _from_cache(self, key: str, p: Pending) -> Outcome:
        entry = self.cache.get(key)
        if entry is None:
            return Unprocessed("missing", "collected by another process without a usable reply")
        reply = Reply.from_dict(entry["reply"], cached=True, fallback=p.fallback)
        self.usage.record_hit(self.label, reply)
        return reply

    def collect(self, rec: BatchRecord, todo: Mapping[str, Pending] | None = None) -> dict[str, Outcome]:
        """Write an ended batch's replies into the cache (each counted as a batch call), mark it
        collected, and return every request's outcome."""
        todo = todo or {}
        payloads = self.journal.requests(rec.id)
        options = {k: todo[k].options if k in todo else options_from_payload(p) for k, p in payloads.items()}
        results = self.retrying(lambda: self.api.results(rec.remote_id, options))
        counts = {"replies": 0, "errors": 0, "unprocessed": 0}
        for key, outcome in results.items():
            if isinstance(outcome, Reply):
                fallback = todo[key].fallback if key in todo else None
                outcome = results[key] = replace(outcome, fallback=outcome.fallback or fallback, batch=True)
                self.usage.record_call(self.label, outcome, batch=True)
                if outcome.cacheable:
                    self.cache.set(key, payloads[key], outcome)
                counts["replies"] += 1
            else:
                counts["unprocessed" if isinstance(outcome, Unprocessed) else "errors"] += 1
        self.journal.mark_collected(rec.id, ", ".join(f"{v} {k}" for k, v in counts.items()))
        return results


def unknown_batch(rec: BatchRecord) -> str:
    """The note of a batch the provider answers 404 for."""
    return (f"{rec.provider} does not know batch {rec.remote_id} (HTTP 404: deleted, or made with another account "
            f"or key); abandoned, its requests are free to be submitted again")


class _Finder:
    """Recent provider batches the journal does not know, matched against the requests of each
    chunk about to be submitted; a batch is adopted once at most."""

    def __init__(self, runner: BatchRunner, candidates: list[RemoteStatus], *, by_count: bool,
                 before: float) -> None:
        self.runner, self.candidates, self.by_count, self.before = runner, list(candidates), by_count, before
        self.reads = 0

    def match(self, keys: list[str]) -> str | None:
        if not self.candidates:
            return None
        digest, wanted = requests_digest(keys), set(keys)
        for c in list(self.candidates):
            if self._same(c, digest, wanted):
                self.candidates.remove(c)
                return c.id
        return None

    def _same(self, c: RemoteStatus, digest: str, wanted: set[str]) -> bool:
        if c.digest is not None:
            return c.digest == digest
        if c.total != len(wanted):
            return False
        if not c.ended:  # its requests cannot be seen yet; only an empty journal adopts on the count
            return self.by_count and c.created_at <= self.before
        if self.reads >= MAX_ID_READS:
            return False
        self.reads += 1
        api = self.runner.api
        return self.runner.retrying(lambda: api.custom_ids(c.id)) == wanted  # type: ignore[attr-defined]
