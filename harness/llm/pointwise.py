"""Pointwise LLM scoring, the loop every pointwise method shares (relevance generation, BIRCO's
Score/Reason/Subtask, the INSTFOL judge): one request per item, identical requests sent once, each
reply parsed by the method's own rule, and what went wrong counted the same way everywhere.

- A request that got no usable reply is a *transport failure* (:class:`~harness.llm.LLMError` in
  its place): the method was not applied to the item; counted per query as ``transport_failures``
  (the pipeline turns those into an INCOMPLETE run).
- A reply the method's parser rejects is a *reply-quality failure*: part of what is measured,
  counted as ``parse_failures`` and per query in ``failures_per_query``; the method decides the
  value (0, a neutral score, a dropped judgment).
- A dry run's placeholder is neither: counted as ``dry_run``.

    scorer = PointwiseScorer(client)
    results = scorer.score([Item((q, d), q, request) for ...], parse=lambda reply: parse_score(reply.text))
    run = order_by_scores(run, {q: {d: results[(q, d)].value or 0.0 ...}}, depth=100)
    component.stats() -> scorer.stats()
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from harness.concepts.run import Run
from harness.llm.client import Client
from harness.served.request_errors import LLMError
from harness.served.types import ChatRequest, Reply

V = TypeVar("V")

#: what ``parse`` returns: a value (None: the reply is unusable, a reply-quality failure), and the
#: names of the things to count about this reply (``"refused"``, ``"no_logprobs"``...)
Parsed = tuple[Any, tuple[str, ...]]


@dataclass(frozen=True)
class Item:
    """One thing to score: ``key`` (unique, e.g. ``(qid, docid)``), its query id (for per-query
    counts) and the request (a :class:`ChatRequest`, ``{"messages": [...], **options}`` or messages)."""

    key: Hashable
    qid: str
    request: Any


@dataclass
class Scored(Generic[V]):
    """One item's outcome: ``status`` is ``ok``, ``unparseable``, ``transport`` or ``dry_run``;
    ``value`` what the parser returned (None unless ``ok``); ``reply`` or ``error``; ``flags``."""

    status: str
    value: V | None = None
    reply: Reply | None = None
    error: LLMError | None = None
    flags: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _request_key(request: Any) -> str:
    req = ChatRequest.coerce(request)
    return json.dumps({"m": req.messages, "o": dict(req.options)}, sort_keys=True, default=str)


class PointwiseScorer:
    """Scores items through ``client``; :meth:`stats` adds up every call of :meth:`score`."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._stats: Counter[str] = Counter()
        self._transport: Counter[str] = Counter()
        self._failures: Counter[str] = Counter()
        self._flags: dict[str, Counter[str]] = {}  # query id -> flag -> count (a rule applied, per query)

    def score(self, items: Sequence[Item], parse: Callable[[Reply], Any], prefix: str = "") -> dict[Hashable, Scored]:
        """Send each distinct request once (concurrently), parse each reply with ``parse`` (returning
        a value, or None for an unusable reply, or a ``(value, flags)`` pair), and return every
        item's :class:`Scored`. ``prefix`` names the counters of a stage (``"criteria_"``)."""
        unique: dict[str, Any] = {}
        owners: dict[str, set[str]] = {}  # the queries whose items share a request
        keys = []
        for item in items:
            k = _request_key(item.request)
            unique.setdefault(k, item.request)
            owners.setdefault(k, set()).add(item.qid)
            keys.append(k)
        order = list(unique)
        # each request's query, for the per-query accounting; a request shared by queries is made for none
        qids = [next(iter(owners[k])) if len(owners[k]) == 1 else None for k in order]
        replies = dict(zip(order, self.client.map([unique[k] for k in order], query_ids=qids))) if order else {}
        outcome: dict[str, Scored] = {}
        st: Counter[str] = Counter()
        for k in order:
            reply = replies[k]
            if isinstance(reply, LLMError):
                outcome[k] = Scored("transport", error=reply)
                continue
            st["cache_hits" if reply.cached else "calls"] += 1
            if reply.dry_run:
                outcome[k] = Scored("dry_run", reply=reply)
                continue
            parsed = parse(reply)
            value, flags = parsed if isinstance(parsed, tuple) else (parsed, ())
            outcome[k] = Scored("ok" if value is not None else "unparseable", value, reply, flags=tuple(flags))
        out: dict[Hashable, Scored] = {}
        transport: Counter[str] = Counter()
        failures: Counter[str] = Counter()
        flagged: dict[str, Counter[str]] = {}
        st[f"{prefix}deduplicated"] += len(items) - len(order)  # items answered by another item's request
        for item, k in zip(items, keys):
            res = out[item.key] = outcome[k]
            st[f"{prefix}items"] += 1
            if res.status == "transport":
                st[f"{prefix}transport_failures"] += 1
                transport[item.qid] += 1
            elif res.status == "unparseable":
                st[f"{prefix}parse_failures"] += 1
                failures[item.qid] += 1
            elif res.status == "dry_run":
                st["dry_run"] += 1
            for flag in res.flags:
                st[flag] += 1
                flagged.setdefault(item.qid, Counter())[flag] += 1
        with self._lock:
            self._stats.update(st)
            self._transport.update(transport)
            self._failures.update(failures)
            for qid, counts in flagged.items():
                self._flags.setdefault(qid, Counter()).update(counts)
        return out

    def count(self, **counts: int) -> None:
        """Add the method's own counters (``queries=3``, ``requirements=12``)."""
        with self._lock:
            self._stats.update(counts)

    def flag(self, qid: str, name: str) -> None:
        """Count a rule the method applied to one item of query ``qid`` (in ``stats()[name]`` and
        ``flags_per_query``), e.g. a documented fallback; never silent."""
        with self._lock:
            self._stats[name] += 1
            self._flags.setdefault(qid, Counter())[name] += 1

    def stats(self, *extra: str) -> dict[str, Any]:
        """The counters: ``calls``, ``cache_hits``, ``items``, ``deduplicated`` (items whose request
        another item of the same batch already made, so it was sent once), ``parse_failures``,
        ``transport_failures`` (each stage's, prefixed, and their sum), ``dry_run``, the flags and
        ``extra`` names, ``failures_per_query`` (reply-quality), ``transport_failures_per_query`` and
        ``flags_per_query`` (each parser flag, e.g. a rule applied, counted per query)."""
        with self._lock:
            s = Counter(self._stats)
            out: dict[str, Any] = {k: s[k] for k in ("calls", "cache_hits", "items", "deduplicated", "parse_failures",
                                                      "dry_run")}
            out.update({k: v for k, v in s.items() if k not in out})
            out.update({k: s[k] for k in extra})
            out["transport_failures"] = sum(v for k, v in s.items() if k.endswith("transport_failures"))
            out["failures_per_query"] = dict(self._failures)
            out["transport_failures_per_query"] = dict(self._transport)
            out["flags_per_query"] = {q: dict(c) for q, c in self._flags.items()}
            return out


def order_by_scores(run: Run, scores: Mapping[str, Mapping[str, float]], depth: int | None = None,
                    default: float = 0.0) -> Run:
    """Each query's top ``depth`` (all when None) sorted by score, highest first, ties keeping the
    incoming order (a plain stable sort); the rest appended in their incoming order; documents
    without a score get ``default``. Scores of the returned run decrease strictly (n, n-1, ...)."""
    order: dict[str, list[str]] = {}
    for q in run:
        docs = run.doc_ids(q)
        head = docs[:depth] if depth is not None else docs
        s = scores.get(q, {})
        ranked = sorted(range(len(head)), key=lambda i: (-s.get(head[i], default), i))
        order[q] = [head[i] for i in ranked] + docs[len(head):]
    return Run.from_order(order, run.name)
