"""Anthropic's Message Batches through the official SDK (``client.messages.batches``).

Requests are ``{"custom_id", "params"}`` with the params a direct ``messages.create`` would send;
at most 100,000 requests or 256 MB per batch. A batch keeps no metadata, so a batch whose id never
reached the journal is recognised by its requests: created after the intent, with the same number
of requests, and (once ended) results for exactly the journal's custom_ids. Results are
``succeeded`` / ``errored`` / ``canceled`` / ``expired``, in any order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from harness.llm.providers.base import error_for_status
from harness.served.batch.protocol import BatchLimits, Outcome, RemoteStatus, Unprocessed
from harness.served.request_errors import MalformedReply, ModelNotFound
from harness.served.types import ChatOptions, Message

#: the HTTP status each Anthropic error type stands for (an errored request of a batch)
ERROR_STATUS = MappingProxyType({"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                                 "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                                 "rate_limit_error": 429, "api_error": 500, "timeout_error": 504,
                                 "overloaded_error": 529})
TRANSFER_TIMEOUT = 600.0


class AnthropicBatches:
    """Message Batches of one :class:`~harness.llm.providers.anthropic.AnthropicProvider`."""

    limits = BatchLimits(max_requests=100_000, max_bytes=256 * 1000 * 1000)

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def _call(self, fn: Any, timeout: float | None = None) -> Any:
        return self.provider.sdk_call(lambda client, t: fn(client.messages.batches, t), timeout)

    def request(self, custom_id: str, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        body = self.provider.request_body(messages, options)
        params = {**{k: v for k, v in body.items() if k != "extra_body"}, **body.get("extra_body", {})}
        return {"custom_id": custom_id, "params": params}

    def submit(self, requests: list[dict[str, Any]], tag: str) -> str:
        batch = self._call(lambda b, t: b.create(requests=requests, timeout=t), TRANSFER_TIMEOUT)
        return str(batch.id)

    def status(self, batch_id: str) -> RemoteStatus:
        return _status(self._call(lambda b, t: b.retrieve(batch_id, timeout=t)))

    def results(self, batch_id: str, options: Mapping[str, ChatOptions]) -> dict[str, Outcome]:
        out: dict[str, Outcome] = {}
        for line in self._call(lambda b, t: list(b.results(batch_id, timeout=t)), TRANSFER_TIMEOUT):
            if line.custom_id in options:
                out[line.custom_id] = self._outcome(line.result)
        for cid in options:
            out.setdefault(cid, Unprocessed("missing", f"batch {batch_id} ended without a result for this request"))
        return out

    def _outcome(self, result: Any) -> Outcome:
        kind = getattr(result, "type", None)
        if kind == "succeeded":
            try:
                return self.provider._parse(result.message)
            except MalformedReply as exc:
                return exc
        if kind == "errored":
            err = getattr(getattr(result, "error", None), "error", None)
            etype, message = getattr(err, "type", "api_error"), getattr(err, "message", "") or "errored"
            return error_for_status(self.provider, ERROR_STATUS.get(etype, 500), f"{etype}: {message}")
        if kind in ("canceled", "expired"):
            return Unprocessed("cancelled" if kind == "canceled" else "expired", f"the batch request was {kind}")
        return self.provider.error(MalformedReply, f"unknown batch result type {kind!r}")

    def find(self, tag: str, since: float, custom_ids: Iterable[str], known: set[str]) -> str | None:
        wanted = set(custom_ids)
        for b in self._call(lambda api, t: api.list(limit=100, timeout=t)):  # newest first, pages on demand
            status = _status(b)
            if status.created_at < since - 300:  # 5 min for clock skew
                return None
            if b.id in known or status.total != len(wanted):
                continue
            if not status.ended:
                return str(b.id)  # adopted on its request count; results are matched by custom_id at the end
            got = {line.custom_id for line in self._call(lambda api, t, i=b.id: list(api.results(i, timeout=t)))}
            if got == wanted:
                return str(b.id)
        return None

    def recent(self, since: float, limit: int) -> list[RemoteStatus]:
        """Batches created at or after ``since``, newest first, at most ``limit`` (no digest: a
        message batch keeps no metadata)."""
        out: list[RemoteStatus] = []
        for b in self._call(lambda api, t: api.list(limit=100, timeout=t)):  # pages on demand
            status = _status(b)
            if status.created_at < since or len(out) >= limit:
                break
            out.append(status)
        return out

    def custom_ids(self, batch_id: str) -> set[str] | None:
        """The custom_ids of an ended batch's results (None while it runs: they are not shown)."""
        if not self.status(batch_id).ended:
            return None
        return {line.custom_id for line in self._call(lambda api, t: list(api.results(batch_id, timeout=t)),
                                                       TRANSFER_TIMEOUT)}

    def cancel(self, batch_id: str) -> None:
        self._call(lambda b, t: b.cancel(batch_id, timeout=t))

    def delete(self, batch_id: str) -> list[str]:
        """Delete the ended batch (its requests and results) at Anthropic; a batch already gone is
        skipped."""
        try:
            self._call(lambda b, t: b.delete(batch_id, timeout=t))
        except ModelNotFound:  # a 404: deleted before
            return []
        return [batch_id]


def _status(b: Any) -> RemoteStatus:
    c = b.request_counts
    done = sum(int(getattr(c, k, 0) or 0) for k in ("succeeded", "errored", "canceled", "expired"))
    total = done + int(getattr(c, "processing", 0) or 0)
    return RemoteStatus(id=str(b.id), ended=b.processing_status == "ended", status=str(b.processing_status),
                        total=total, done=done, failed=int(getattr(c, "errored", 0) or 0),
                        created_at=b.created_at.timestamp() if b.created_at else 0.0)
