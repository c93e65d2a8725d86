"""OpenAI's Batch API (Files + Batches, endpoint ``/v1/chat/completions``) through the official SDK.

Input: one JSONL file per batch, lines ``{"custom_id", "method": "POST", "url": "/v1/chat/completions",
"body"}`` with the body a direct call would post; at most 50,000 requests and 200 MB per file, one
model per file, ``completion_window="24h"``. The batch carries ``metadata={"harness_tag": tag,
"harness_keys": requests_digest(custom_ids), "harness_requests": count}``: the tag finds an intent's
batch, the digest finds a batch whose journal was lost (:meth:`OpenAIBatches.recent`).
Results: the output file (HTTP 200 replies) and the error file (per-request HTTP errors, and
``batch_expired`` / ``batch_cancelled`` lines for requests never processed), in any order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from harness.llm.embedding_client import parse_embedding_reply, pending_text, reply_of
from harness.llm.providers.base import error_for_status
from harness.served.batch.protocol import BatchLimits, Outcome, RemoteStatus, Unprocessed, requests_digest
from harness.served.request_errors import MalformedReply, ModelNotFound
from harness.served.types import ChatOptions, Message

ENDPOINT = "/v1/chat/completions"
#: statuses after which nothing changes any more
ENDED = ("completed", "failed", "expired", "cancelled")
#: seconds allowed for uploading or downloading a batch file (up to 200 MB)
TRANSFER_TIMEOUT = 600.0
UNPROCESSED_CODES = MappingProxyType({"batch_expired": "expired", "batch_cancelled": "cancelled"})


class OpenAIBatches:
    """The Batch API of one :class:`~harness.llm.providers.openai.OpenAIProvider` (its key, base URL,
    model and request bodies)."""

    limits = BatchLimits(max_requests=50_000, max_bytes=200 * 1000 * 1000)
    endpoint = ENDPOINT

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def _call(self, fn: Any, timeout: float | None = None) -> Any:
        return self.provider.sdk_call(fn, timeout)

    def request(self, custom_id: str, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        body = {**self.provider.request_body(messages, options), **dict(options.extra)}
        return {"custom_id": custom_id, "method": "POST", "url": self.endpoint, "body": body}

    def submit(self, requests: list[dict[str, Any]], tag: str) -> str:
        data = b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in requests)
        upload = self._call(lambda c, t: c.files.create(file=("harness-batch.jsonl", data, "application/jsonl"),
                                                        purpose="batch", timeout=t), TRANSFER_TIMEOUT)
        batch = self._call(lambda c, t: c.batches.create(
            input_file_id=upload.id, endpoint=self.endpoint, completion_window="24h",
            metadata={"harness_tag": tag, "harness_keys": requests_digest(r["custom_id"] for r in requests),
                      "harness_requests": str(len(requests))}, timeout=t))
        return str(batch.id)

    def status(self, batch_id: str) -> RemoteStatus:
        b = self._call(lambda c, t: c.batches.retrieve(batch_id, timeout=t))
        return _status(b)

    def results(self, batch_id: str, options: Mapping[str, ChatOptions]) -> dict[str, Outcome]:
        b = self._call(lambda c, t: c.batches.retrieve(batch_id, timeout=t))
        out: dict[str, Outcome] = {}
        for file_id in (b.output_file_id, b.error_file_id):
            if not file_id:
                continue
            content = self._call(lambda c, t, f=file_id: c.files.content(f, timeout=t), TRANSFER_TIMEOUT)
            for line in content.text.splitlines():
                if line.strip():
                    cid, outcome = self._outcome(json.loads(line), options)
                    if cid in options:
                        out[cid] = outcome
        reason = {"failed": "failed", "expired": "expired", "cancelled": "cancelled"}.get(b.status, "missing")
        message = _batch_errors(b) or f"batch {batch_id} ended {b.status} without a result for this request"
        for cid in options:
            out.setdefault(cid, Unprocessed(reason, message))
        return out

    def _outcome(self, line: Mapping[str, Any], options: Mapping[str, ChatOptions]) -> tuple[str, Outcome]:
        cid = str(line.get("custom_id"))
        response, error = line.get("response"), line.get("error")
        if response and int(response.get("status_code") or 0) == 200:
            return cid, self._reply(response.get("body"), options.get(cid, ChatOptions()))
        if response:
            body = response.get("body") or {}
            err = body.get("error") if isinstance(body, dict) else None
            message = (err or {}).get("message") if isinstance(err, dict) else str(body)[:300]
            return cid, error_for_status(self.provider, int(response.get("status_code") or 500), str(message))
        code = (error or {}).get("code") or ""
        message = (error or {}).get("message") or code or "no result"
        if code in UNPROCESSED_CODES:
            return cid, Unprocessed(UNPROCESSED_CODES[code], message)
        return cid, self.provider.error(MalformedReply, f"batch result without a response: {message}")

    def _reply(self, body: Any, options: ChatOptions) -> Outcome:
        from openai.types.chat import ChatCompletion

        try:
            return self.provider._parse(ChatCompletion.construct(**body), options)
        except MalformedReply as exc:
            return exc
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            return self.provider.error(MalformedReply, f"unexpected reply shape ({type(exc).__name__}: {exc})")

    def find(self, tag: str, since: float, custom_ids: Iterable[str], known: set[str]) -> str | None:
        page = self._call(lambda c, t: c.batches.list(limit=100, timeout=t))
        while True:
            for b in page.data:
                if (b.metadata or {}).get("harness_tag") == tag and b.id not in known:
                    return str(b.id)
            oldest = min((b.created_at for b in page.data), default=0)
            if not page.has_more or oldest < since - 300:  # listed newest first; 5 min for clock skew
                return None
            page = self._call(lambda c, t, after=page.data[-1].id: c.batches.list(limit=100, after=after, timeout=t))

    def recent(self, since: float, limit: int) -> list[RemoteStatus]:
        """Batches created at or after ``since``, newest first (pages of 100, at most ``limit``), with
        the digest of their requests from their metadata."""
        out: list[RemoteStatus] = []
        page = self._call(lambda c, t: c.batches.list(limit=100, timeout=t))
        while True:
            for b in page.data:
                if float(b.created_at or 0) < since or len(out) >= limit:
                    return out
                out.append(_status(b))
            if not page.has_more or not page.data:
                return out
            page = self._call(lambda c, t, after=page.data[-1].id: c.batches.list(limit=100, after=after, timeout=t))

    def custom_ids(self, batch_id: str) -> set[str] | None:
        """Not read (that would download the input file): OpenAI batches are recognised by digest."""
        return None

    def cancel(self, batch_id: str) -> None:
        self._call(lambda c, t: c.batches.cancel(batch_id, timeout=t))

    def delete(self, batch_id: str) -> list[str]:
        """Delete the batch's input, output and error files (the batch object itself cannot be
        deleted at OpenAI); a file already gone is skipped."""
        b = self._call(lambda c, t: c.batches.retrieve(batch_id, timeout=t))
        deleted = []
        for file_id in (b.input_file_id, b.output_file_id, b.error_file_id):
            if not file_id:
                continue
            try:
                self._call(lambda c, t, f=file_id: c.files.delete(f, timeout=t))
            except ModelNotFound:  # a 404: deleted before
                continue
            deleted.append(str(file_id))
        return deleted


class EmbeddingBatches(OpenAIBatches):
    """The Batch API with endpoint ``/v1/embeddings``: one line per text (its ``custom_id`` the text's
    key, the text in the messages of its :class:`~harness.served.batch.protocol.Pending`), each result a
    :class:`~harness.served.types.Reply` whose text is the vector
    (:func:`harness.llm.embedding_client.encode_vector`)."""

    endpoint = "/v1/embeddings"

    def request(self, custom_id: str, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        body = self.provider.embedding_body([pending_text(messages)], dict(options.extra).get("dimensions"))
        return {"custom_id": custom_id, "method": "POST", "url": self.endpoint, "body": body}

    def _reply(self, body: Any, options: ChatOptions) -> Outcome:
        try:
            return reply_of(self.provider, parse_embedding_reply(self.provider, body, 1))
        except MalformedReply as exc:
            return exc


def _status(b: Any) -> RemoteStatus:
    counts = b.request_counts
    return RemoteStatus(
        id=str(b.id), ended=b.status in ENDED, status=str(b.status),
        total=int(getattr(counts, "total", 0) or 0),
        done=int(getattr(counts, "completed", 0) or 0) + int(getattr(counts, "failed", 0) or 0),
        failed=int(getattr(counts, "failed", 0) or 0), created_at=float(b.created_at or 0),
        message=_batch_errors(b), digest=_metadata(b).get("harness_keys"))


def _metadata(b: Any) -> dict[str, Any]:
    meta = getattr(b, "metadata", None)
    return meta if isinstance(meta, dict) else {}


def _batch_errors(b: Any) -> str:
    data = getattr(getattr(b, "errors", None), "data", None) or []
    return "; ".join(f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}" for e in data)
