"""The batch APIs of the loopback LLM test server (:mod:`harness.testing.llm_server`): state and rules
behind OpenAI's Batch API (``/v1/files`` + ``/v1/batches``) and Anthropic's Message Batches API
(``/v1/messages/batches``). The server's handler routes requests to a :class:`BatchStore`; each
request of a batch is answered by ``respond(api, body) -> (status, json)``, the same function the
direct endpoint uses, so a batch result is exactly the reply a direct call would have had.

Time is lazy: a batch is looked at when it is read (retrieve, list, cancel, results,
:meth:`BatchStore.status`). A create replies ``validating`` (OpenAI; a bad input file turns it
``failed`` at the next read) or ``in_progress`` (Anthropic). Once ``created + delay`` has passed,
every request is answered in one go and the batch ends (``completed`` / ``ended``), or, if it was
picked to expire, only the first ``expire_keep`` requests are answered and the rest expire
(``expired`` / ``ended``). A cancelled batch shows ``cancelling`` / ``canceling`` in the cancel reply
and is ``cancelled`` / ``ended`` at the next read, with the first ``cancel_keep`` requests answered
(they had finished before the cancel).
Lines of result files come in a shuffled (seeded) order, as the real APIs promise no order.

OpenAI statuses are used internally for both APIs; Anthropic's ``processing_status`` is derived.
IDs are random (never seeded), so two servers never hand out the same batch id.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

Respond = Callable[[str, dict], tuple[int, dict]]
ExpireRule = Collection[int] | Callable[[int, list[str]], bool] | None

ENDPOINT = "/v1/chat/completions"
#: the endpoints a batch may have (each line's url must be its batch's)
ENDPOINTS = (ENDPOINT, "/v1/embeddings")
FINAL = frozenset({"failed", "completed", "expired", "cancelled"})
DAY = 24 * 3600
FILE_PURPOSES = frozenset({"assistants", "batch", "fine-tune", "vision", "user_data", "evals"})
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_ENDED_KEY = MappingProxyType({"completed": "completed_at", "expired": "expired_at", "cancelled": "cancelled_at",
                               "failed": "failed_at"})
_OPENAI_LOST = MappingProxyType({
    "expired": ("batch_expired", "This request could not be executed before the completion window expired."),
    "canceled": ("batch_cancelled", "This request was not executed because the batch was cancelled."),
})


class BatchError(Exception):
    """An HTTP error for the handler to send (``param`` names the offending field, OpenAI style)."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


class AcknowledgementLost(Exception):
    """``on_create`` raised: the batch exists but the client must get no reply (connection closed)."""


@dataclass
class Outcome:
    """What became of one request: ``kind`` is succeeded, errored, expired or canceled."""

    kind: str
    status: int | None = None
    body: dict | None = None


@dataclass
class BatchRecord:
    """One batch of either API (``api`` is "openai" or "anthropic"); ``status`` uses OpenAI's words;
    ``nbytes`` is the size of its input (the OpenAI input file, the Anthropic create body)."""

    id: str
    api: str
    ordinal: int
    created_at: float
    requests: list[tuple[str, dict]]
    expire: bool = False
    nbytes: int = 0
    status: str = "validating"
    input_file_id: str | None = None
    completion_window: str = "24h"
    metadata: dict | None = None
    model: str | None = None
    errors: list[dict] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    results: bytes = b""  # Anthropic results JSONL, once ended
    endpoint: str = ENDPOINT  # OpenAI: the batch's endpoint

    @property
    def custom_ids(self) -> list[str]:
        """The custom_ids of its requests, in submission order."""
        return [cid for cid, _ in self.requests]

    def count(self, kind: str) -> int:
        """How many requests ended as ``kind``."""
        return sum(1 for o in self.outcomes.values() if o.kind == kind)


def _new_id(prefix: str, n: int = 24) -> str:
    return prefix + secrets.token_hex(n // 2)


def _int(t: float | None) -> int | None:
    return None if t is None else int(t)


def rfc3339(t: float | None) -> str | None:
    """A unix time as an RFC 3339 UTC string (Anthropic's timestamps)."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _jsonl(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def check_metadata(metadata: Any) -> dict | None:
    """OpenAI's metadata rules: at most 16 string pairs, keys <= 64 and values <= 512 characters."""
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping) or len(metadata) > 16:
        raise BatchError(400, "metadata: expected an object with at most 16 keys", "metadata")
    for k, v in metadata.items():
        if not isinstance(v, str) or len(k) > 64 or len(v) > 512:
            raise BatchError(400, f"metadata[{k!r}]: keys are strings <= 64 chars, values <= 512", "metadata")
    return dict(metadata)


def _line_error(line: int, code: str, message: str, param: str | None = None) -> dict:
    return {"code": code, "message": message, "param": param, "line": line}


def _check_line(n: int, text: str, endpoint: str = ENDPOINT) -> tuple[tuple[str, dict] | None, dict | None]:
    """One input line as (custom_id, body), or the error it earns."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None, _line_error(n, "invalid_json_line", "This line is not parseable as valid JSON.")
    if not isinstance(obj, dict):
        return None, _line_error(n, "invalid_json_line", "Each line must be a JSON object.")
    for name, want in (("custom_id", str), ("method", str), ("url", str), ("body", dict)):
        if not isinstance(obj.get(name), want):
            return None, _line_error(n, "missing_required_parameter", f"Missing or invalid '{name}'.", name)
    if obj["method"] != "POST":
        return None, _line_error(n, "invalid_method", "Only POST is supported.", "method")
    if obj["url"] != endpoint:
        return None, _line_error(n, "invalid_url", f"The URL must be {endpoint}, the batch's endpoint.", "url")
    return (obj["custom_id"], obj["body"]), None


def parse_openai_input(data: bytes, endpoint: str = ENDPOINT) -> tuple[list[tuple[str, dict]], list[dict]]:
    """The requests of an OpenAI batch input file and the validation errors that fail the batch
    (bad lines, duplicate custom_ids, more than one model, no requests). Duplicates are kept in the
    request list so they are counted as submitted."""
    requests: list[tuple[str, dict]] = []
    errors: list[dict] = []
    seen: set[str] = set()
    models: set[Any] = set()
    for n, text in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if not text.strip():
            continue
        req, err = _check_line(n, text, endpoint)
        if err is not None:
            errors.append(err)
            continue
        assert req is not None
        cid, body = req
        if cid in seen:
            errors.append(_line_error(n, "duplicate_custom_id", f"The custom_id '{cid}' is not unique.", "custom_id"))
        seen.add(cid)
        models.add(body.get("model"))
        if len(models) > 1:
            errors.append(_line_error(n, "mismatched_model", "All requests of a batch must use one model.", "model"))
        requests.append(req)
    if not requests and not errors:
        errors.append(_line_error(0, "empty_file", "The input file has no requests."))
    return requests, errors


def parse_anthropic_requests(body: Any) -> list[tuple[str, dict]]:
    """The (custom_id, params) pairs of a Message Batches create body; 400 on a bad one."""
    requests = body.get("requests") if isinstance(body, dict) else None
    if not isinstance(requests, list) or not requests:
        raise BatchError(400, "requests: Field required (a non-empty list)")
    out: list[tuple[str, dict]] = []
    seen: set[str] = set()
    for i, r in enumerate(requests):
        cid = r.get("custom_id") if isinstance(r, dict) else None
        if not isinstance(cid, str) or not _CUSTOM_ID.fullmatch(cid):
            raise BatchError(400, f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
        if cid in seen:
            raise BatchError(400, f"requests.{i}.custom_id: Duplicate custom_id '{cid}' in the batch")
        if not isinstance(r.get("params"), dict):
            raise BatchError(400, f"requests.{i}.params: Field required")
        seen.add(cid)
        out.append((cid, r["params"]))
    return out


def page(items: list[BatchRecord], limit: int, after: str | None = None, before: str | None = None
         ) -> tuple[list[BatchRecord], bool]:
    """One page of ``items`` (newest first): ``limit`` items after ``after`` or just before
    ``before``, and whether there are more in that direction."""
    ids = [r.id for r in items]
    for cursor in (after, before):
        if cursor is not None and cursor not in ids:
            raise BatchError(400, f"unknown cursor {cursor!r}", "after" if cursor == after else "before_id")
    if before is not None:
        end = ids.index(before)
        start = max(0, end - limit)
        return items[start:end], start > 0
    start = ids.index(after) + 1 if after is not None else 0
    return items[start:start + limit], start + limit < len(items)


def _limit(value: str | None, top: int) -> int:
    try:
        n = 20 if value is None else int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= top:
        raise BatchError(400, f"limit: must be an integer from 1 to {top}", "limit")
    return n


class BatchStore:
    """Files, batches, counters and processing rules of both batch APIs (see the module docstring).
    Methods named ``openai_*`` / ``anthropic_*`` return the JSON (or bytes) a route sends, or raise
    :class:`BatchError`. Counters: ``batch_submissions``, ``batch_requests`` (custom_id -> times
    submitted), ``batch_requests_total``, ``batch_bytes_uploaded``, ``batch_polls``, ``batch_lists``,
    ``batch_cancels``, ``file_uploads``, ``file_deletes``, ``batch_deletes``."""

    COUNTERS = ("batch_submissions", "batch_requests_total", "batch_bytes_uploaded", "batch_polls",
                "batch_lists", "batch_cancels", "file_uploads", "file_deletes", "batch_deletes")

    def __init__(self, respond: Respond, *, delay: float = 0.0, expire: ExpireRule = None,
                 expire_keep: int = 0, cancel_keep: int = 0,
                 on_create: Callable[[dict], None] | None = None, seed: int = 0,
                 hold: Callable[[BatchRecord], bool] | None = None) -> None:
        self.respond, self.delay, self.expire, self.hold = respond, float(delay), expire, hold
        self.expire_keep, self.cancel_keep, self.on_create = int(expire_keep), int(cancel_keep), on_create
        self.base_url = ""  # the server's URL, for Anthropic's results_url
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self.files: dict[str, dict] = {}
        self._content: dict[str, bytes] = {}
        self.records: dict[str, BatchRecord] = {}
        self._ordinal = 0
        self.reset_counters()

    # -- counters ---------------------------------------------------------------------------
    def reset_counters(self) -> None:
        with self._lock:
            for name in self.COUNTERS:
                setattr(self, name, 0)
            self.batch_requests: Counter[str] = Counter()

    def stats(self) -> dict[str, Any]:
        """The counters as JSON-ready values (``file_uploads`` is reported as ``files``)."""
        with self._lock:
            out = {("files" if n == "file_uploads" else n): getattr(self, n) for n in self.COUNTERS}
            out["batch_requests"] = dict(self.batch_requests)
            return out

    # -- test helpers ----------------------------------------------------------------------
    def get(self, batch_id: str) -> BatchRecord:
        """The batch, brought up to date; 404 when unknown."""
        with self._lock:
            rec = self.records.get(batch_id)
            if rec is None:
                raise BatchError(404, f"No batch found with id '{batch_id}'.")
            self._advance(rec)
            return rec

    def all(self) -> list[BatchRecord]:
        """Every batch record of both APIs, oldest first."""
        with self._lock:
            return list(self.records.values())

    def object(self, batch_id: str) -> dict:
        """The batch's JSON as its API would return it now (no poll counted)."""
        with self._lock:
            return self.render(self.get(batch_id))

    def status(self, batch_id: str) -> str:
        """The status the API would report now (OpenAI ``status`` / Anthropic ``processing_status``)."""
        with self._lock:
            rec = self.get(batch_id)
            return self.render(rec)["status" if rec.api == "openai" else "processing_status"]

    def render(self, rec: BatchRecord) -> dict:
        """The batch object its API returns."""
        return self._openai_object(rec) if rec.api == "openai" else self._anthropic_object(rec)

    # -- files (OpenAI) ----------------------------------------------------------------------
    def upload_file(self, purpose: str, filename: str, data: bytes) -> dict:
        """``POST /v1/files``."""
        if purpose not in FILE_PURPOSES:
            raise BatchError(400, f"Invalid value for 'purpose': {purpose!r}", "purpose")
        with self._lock:
            self.file_uploads += 1
            if purpose == "batch":
                self.batch_bytes_uploaded += len(data)
            return self._store_file(purpose, filename, data)

    def file_object(self, file_id: str) -> dict:
        """``GET /v1/files/{id}``."""
        with self._lock:
            if file_id not in self.files:
                raise BatchError(404, f"No such File object: {file_id}", "id")
            return dict(self.files[file_id])

    def file_content(self, file_id: str) -> bytes:
        """``GET /v1/files/{id}/content``: the file's bytes."""
        with self._lock:
            self.file_object(file_id)
            return self._content[file_id]

    def delete_file(self, file_id: str) -> dict:
        """``DELETE /v1/files/{id}``."""
        with self._lock:
            self.file_object(file_id)
            del self.files[file_id], self._content[file_id]
            self.file_deletes += 1
            return {"id": file_id, "object": "file", "deleted": True}

    def _store_file(self, purpose: str, filename: str, data: bytes) -> dict:
        fid = _new_id("file-")
        self.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                           "filename": filename, "purpose": purpose, "status": "processed",
                           "expires_at": None, "status_details": None}
        self._content[fid] = data
        return dict(self.files[fid])

    # -- OpenAI batches ----------------------------------------------------------------------
    def openai_create(self, body: dict) -> dict:
        """``POST /v1/batches``: a bad file still makes a batch, which then fails validation."""
        if body.get("completion_window") != "24h":
            raise BatchError(400, f"Invalid value for 'completion_window': {body.get('completion_window')!r}. "
                                  "Supported values are: '24h'.", "completion_window")
        if body.get("endpoint") not in ENDPOINTS:
            raise BatchError(400, f"Invalid value for 'endpoint': {body.get('endpoint')!r}; this test server "
                                  f"supports {' and '.join(ENDPOINTS)}.", "endpoint")
        metadata = check_metadata(body.get("metadata"))
        with self._lock:
            fid = str(body.get("input_file_id") or "")
            if fid not in self.files:
                raise BatchError(404, f"No such File object: {fid}", "input_file_id")
            if self.files[fid]["purpose"] != "batch":
                raise BatchError(400, f"File {fid} was not uploaded with purpose 'batch'.", "input_file_id")
            requests, errors = parse_openai_input(self._content[fid], body["endpoint"])
            rec = self._add("openai", "batch_", requests)
            rec.endpoint = body["endpoint"]
            rec.input_file_id, rec.metadata, rec.errors = fid, metadata, errors
            rec.nbytes = len(self._content[fid])
            rec.model = requests[0][1].get("model") if requests else None
            obj = self.render(rec)
        return self._acknowledge(obj)

    def openai_get(self, batch_id: str) -> dict:
        """``GET /v1/batches/{id}`` (a poll)."""
        with self._lock:
            self.batch_polls += 1
            return self.render(self.get(batch_id))

    def openai_list(self, limit: str | None, after: str | None) -> dict:
        """``GET /v1/batches``: newest first, ``after`` an id of the previous page."""
        with self._lock:
            self.batch_lists += 1
            items, more = page(self._current("openai"), _limit(limit, 100), after=after)
            data = [self.render(r) for r in items]
            return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                    "last_id": data[-1]["id"] if data else None, "has_more": more}

    def openai_cancel(self, batch_id: str) -> dict:
        """``POST /v1/batches/{id}/cancel``: in_progress -> cancelling (cancelled at the next read)."""
        with self._lock:
            rec = self.get(batch_id)
            self.batch_cancels += 1
            if rec.status in FINAL:
                raise BatchError(409, f"Cannot cancel a batch with status '{rec.status}'.")
            self._start_cancel(rec)
            return self.render(rec)

    def _openai_object(self, rec: BatchRecord) -> dict:
        t = rec.times
        total = 0 if rec.status == "failed" else len(rec.requests)
        return {
            "id": rec.id, "object": "batch", "endpoint": rec.endpoint,
            "errors": {"object": "list", "data": rec.errors} if rec.errors else None,
            "input_file_id": rec.input_file_id, "completion_window": rec.completion_window,
            "status": rec.status, "output_file_id": rec.output_file_id, "error_file_id": rec.error_file_id,
            "created_at": int(rec.created_at), "in_progress_at": _int(t.get("in_progress_at")),
            "expires_at": int(rec.created_at + DAY), "finalizing_at": _int(t.get("finalizing_at")),
            "completed_at": _int(t.get("completed_at")), "failed_at": _int(t.get("failed_at")),
            "expired_at": _int(t.get("expired_at")), "cancelling_at": _int(t.get("cancelling_at")),
            "cancelled_at": _int(t.get("cancelled_at")),
            "request_counts": {"total": total, "completed": rec.count("succeeded"), "failed": rec.count("errored")},
            "metadata": rec.metadata, "model": rec.model, "usage": self._usage(rec),
        }

    @staticmethod
    def _usage(rec: BatchRecord) -> dict:
        done = [o.body.get("usage") or {} for o in rec.outcomes.values() if o.kind == "succeeded" and o.body]
        n_in = sum(int(u.get("prompt_tokens", 0)) for u in done)
        n_out = sum(int(u.get("completion_tokens", 0)) for u in done)
        return {"input_tokens": n_in, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": n_out,
                "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": n_in + n_out}

    # -- Anthropic message batches -------------------------------------------------------------
    def anthropic_create(self, body: Any, nbytes: int) -> dict:
        """``POST /v1/messages/batches`` (``nbytes``: the request body's size, counted as uploaded)."""
        with self._lock:
            self.batch_bytes_uploaded += nbytes
        requests = parse_anthropic_requests(body)
        with self._lock:
            rec = self._add("anthropic", "msgbatch_", requests)
            rec.status, rec.times["in_progress_at"] = "in_progress", rec.created_at
            rec.nbytes = nbytes
            obj = self.render(rec)
        return self._acknowledge(obj)

    def anthropic_get(self, batch_id: str) -> dict:
        """``GET /v1/messages/batches/{id}`` (a poll)."""
        with self._lock:
            self.batch_polls += 1
            return self.render(self._anthropic(batch_id))

    def anthropic_list(self, limit: str | None, after_id: str | None, before_id: str | None) -> dict:
        """``GET /v1/messages/batches``: newest first, paged by ``after_id`` or ``before_id``."""
        if after_id and before_id:
            raise BatchError(400, "after_id and before_id cannot both be given")
        with self._lock:
            self.batch_lists += 1
            items, more = page(self._current("anthropic"), _limit(limit, 1000), after_id, before_id)
            data = [self.render(r) for r in items]
            return {"data": data, "has_more": more, "first_id": data[0]["id"] if data else None,
                    "last_id": data[-1]["id"] if data else None}

    def anthropic_results(self, batch_id: str) -> bytes:
        """``GET /v1/messages/batches/{id}/results``: JSONL once ended, a 400 before."""
        with self._lock:
            rec = self._anthropic(batch_id)
            if rec.status not in FINAL:
                status = self.render(rec)["processing_status"]
                raise BatchError(400, f"Batch {batch_id} is still {status}; results are available once it has ended.")
            return rec.results

    def anthropic_cancel(self, batch_id: str) -> dict:
        """``POST /v1/messages/batches/{id}/cancel``: in_progress -> canceling (ended at the next read)."""
        with self._lock:
            rec = self._anthropic(batch_id)
            self.batch_cancels += 1
            if rec.status in FINAL:
                raise BatchError(400, f"Batch {batch_id} has already ended and cannot be canceled.")
            self._start_cancel(rec)
            return self.render(rec)

    def anthropic_delete(self, batch_id: str) -> dict:
        """``DELETE /v1/messages/batches/{id}``: only once ended."""
        with self._lock:
            rec = self._anthropic(batch_id)
            if rec.status not in FINAL:
                raise BatchError(400, f"Batch {batch_id} is still processing; cancel it before deleting it.")
            del self.records[batch_id]
            self.batch_deletes += 1
            return {"id": batch_id, "type": "message_batch_deleted"}

    def _anthropic(self, batch_id: str) -> BatchRecord:
        rec = self.get(batch_id)
        if rec.api != "anthropic":
            raise BatchError(404, f"No message batch found with id '{batch_id}'.")
        return rec

    def _anthropic_object(self, rec: BatchRecord) -> dict:
        t = rec.times
        ended = rec.status in FINAL
        status = "ended" if ended else "canceling" if rec.status == "cancelling" else "in_progress"
        counts = {"processing": len(rec.requests) - len(rec.outcomes), "succeeded": rec.count("succeeded"),
                  "errored": rec.count("errored"), "canceled": rec.count("canceled"), "expired": rec.count("expired")}
        return {
            "id": rec.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
            "ended_at": rfc3339(t.get(_ENDED_KEY.get(rec.status, ""))), "created_at": rfc3339(rec.created_at),
            "expires_at": rfc3339(rec.created_at + DAY), "archived_at": None,
            "cancel_initiated_at": rfc3339(t.get("cancelling_at")),
            "results_url": f"{self.base_url}/v1/messages/batches/{rec.id}/results" if ended else None,
        }

    # -- the rules -----------------------------------------------------------------------------
    def _add(self, api: str, prefix: str, requests: list[tuple[str, dict]]) -> BatchRecord:
        """Stores a new batch and counts it (under the lock)."""
        self._ordinal += 1
        rec = BatchRecord(_new_id(prefix), api, self._ordinal, time.time(), requests)
        ids = rec.custom_ids
        rec.expire = self._expires(self._ordinal, ids)
        self.records[rec.id] = rec
        self.batch_submissions += 1
        self.batch_requests.update(ids)
        self.batch_requests_total += len(ids)
        return rec

    def _expires(self, ordinal: int, custom_ids: list[str]) -> bool:
        if callable(self.expire):
            return bool(self.expire(ordinal, custom_ids))
        return bool(self.expire) and ordinal in self.expire  # type: ignore[operator]

    def _acknowledge(self, obj: dict) -> dict:
        """Runs ``on_create`` before the reply goes out; if it raises, the reply is lost."""
        if self.on_create is not None:
            try:
                self.on_create(obj)
            except Exception as exc:
                raise AcknowledgementLost(str(exc)) from exc
        return obj

    def _current(self, api: str) -> list[BatchRecord]:
        """The batches of ``api``, up to date, newest first."""
        recs = [r for r in reversed(self.records.values()) if r.api == api]
        for r in recs:
            self._advance(r)
        return recs

    def _start_cancel(self, rec: BatchRecord) -> None:
        if rec.status != "cancelling":
            rec.status = "cancelling"
            rec.times["cancelling_at"] = time.time()

    def _advance(self, rec: BatchRecord) -> None:
        """Applies whatever has happened by now: validation, cancellation, processing, expiry."""
        now = time.time()
        if rec.status == "validating":
            if rec.errors:
                rec.status, rec.times["failed_at"] = "failed", now
                return
            rec.status, rec.times["in_progress_at"] = "in_progress", rec.created_at
        if rec.status == "cancelling":
            self._finish(rec, "cancelled", "canceled", self.cancel_keep, now)
        elif rec.status == "in_progress" and now >= rec.created_at + self.delay and not (self.hold and self.hold(rec)):
            if rec.expire:
                self._finish(rec, "expired", "expired", self.expire_keep, now)
            else:
                self._finish(rec, "completed", "", len(rec.requests), now)

    def _finish(self, rec: BatchRecord, status: str, rest: str, keep: int, now: float) -> None:
        """Answers the first ``keep`` requests, marks the others ``rest``, writes the results."""
        for i, (cid, body) in enumerate(rec.requests):
            api = "embeddings" if rec.endpoint == "/v1/embeddings" else rec.api
            rec.outcomes[cid] = self._run(api, body) if i < keep else Outcome(rest)
        rec.status = status
        rec.times[_ENDED_KEY[status]] = now
        if status == "completed":
            rec.times["finalizing_at"] = now
        if rec.api == "openai":
            self._write_openai_files(rec)
        else:
            rec.results = _jsonl(self._shuffled([self._anthropic_line(c, o) for c, o in rec.outcomes.items()]))

    def _run(self, api: str, body: dict) -> Outcome:
        status, reply = self.respond(api, body)
        return Outcome("succeeded" if status < 400 else "errored", status, reply)

    def _shuffled(self, lines: list[dict]) -> list[dict]:
        self._rng.shuffle(lines)
        return lines

    @staticmethod
    def _anthropic_line(custom_id: str, o: Outcome) -> dict:
        result: dict[str, Any] = {"type": o.kind}
        if o.kind == "succeeded":
            result["message"] = o.body
        elif o.kind == "errored":
            result["error"] = o.body
        return {"custom_id": custom_id, "result": result}

    @staticmethod
    def _openai_line(custom_id: str, o: Outcome) -> dict:
        line: dict[str, Any] = {"id": _new_id("batch_req_"), "custom_id": custom_id, "response": None, "error": None}
        if o.kind in _OPENAI_LOST:
            code, message = _OPENAI_LOST[o.kind]
            line["error"] = {"code": code, "message": message}
        else:
            line["response"] = {"status_code": o.status, "request_id": _new_id("req_"), "body": o.body}
        return line

    def _write_openai_files(self, rec: BatchRecord) -> None:
        good = [self._openai_line(c, o) for c, o in rec.outcomes.items() if o.kind == "succeeded"]
        bad = [self._openai_line(c, o) for c, o in rec.outcomes.items() if o.kind != "succeeded"]
        if good:
            rec.output_file_id = self._store_file("batch_output", f"{rec.id}_output.jsonl",
                                                  _jsonl(self._shuffled(good)))["id"]
        if bad:
            rec.error_file_id = self._store_file("batch_output", f"{rec.id}_error.jsonl",
                                                 _jsonl(self._shuffled(bad)))["id"]
