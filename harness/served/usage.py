"""Usage accounting per ``provider:model``: calls sent, cache hits, retries, failures, tokens, cost.

``calls`` counts replies that came from the API (a call that needed retries counts once; its
retries are in ``retries``). Cache hits cost nothing; their tokens are kept apart
(``cached_input_tokens``/``cached_output_tokens``). Replies that came through a provider's batch API
are part of ``calls`` and the token counts, and are also counted apart (``batch``: calls, tokens,
batches submitted, rounds, bytes uploaded) because they are priced at the batch rate. In a dry run
every figure is an estimate.

``reasoning_tokens`` (``cached_reasoning_tokens`` for hits) count the reasoning part of the output tokens as
the providers report it: the output tokens already include them (both OpenAI and Anthropic bill reasoning as
output), so they are priced once, as output, and shown as their own column, never added twice.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.served.dryrun import tokenizer_name
from harness.served.pricing import PriceTable
from harness.served.types import Reply

#: failures kept verbatim (status and message) per model; the rest are counted by kind
MAX_EXAMPLES = 5


@dataclass
class ModelUsage:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cached_output_tokens: int = 0
    batch_calls: int = 0
    batch_input_tokens: int = 0
    batch_output_tokens: int = 0
    batches: int = 0  # batches submitted
    rounds: int = 0  # stages answered through the batch API (a dry run counts them too)
    batch_bytes: int = 0  # request bytes uploaded in batches
    reasoning_tokens: int = 0  # the reasoning part of output_tokens (not added to them: included already)
    cached_reasoning_tokens: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    failure_examples: list[dict[str, Any]] = field(default_factory=list)

    COUNTS = ("calls", "cache_hits", "retries", "failures", "input_tokens", "output_tokens", "cached_input_tokens",
              "cached_output_tokens", "batch_calls", "batch_input_tokens", "batch_output_tokens", "batches",
              "rounds", "batch_bytes", "reasoning_tokens", "cached_reasoning_tokens")

    @property
    def direct_tokens(self) -> tuple[int, int]:
        return self.input_tokens - self.batch_input_tokens, self.output_tokens - self.batch_output_tokens

    def add(self, other: ModelUsage) -> None:
        for name in self.COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors.update(other.errors)
        room = MAX_EXAMPLES - len(self.failure_examples)
        self.failure_examples.extend(other.failure_examples[:max(room, 0)])


class Usage:
    """Thread-safe counters, keyed by ``provider:model``."""

    def __init__(self, prices: PriceTable | None = None, dry_run: bool = False) -> None:
        self.prices = prices or PriceTable()
        self.dry_run = dry_run
        self.models: dict[str, ModelUsage] = {}
        self._lock = threading.Lock()

    def _m(self, label: str) -> ModelUsage:
        m = self.models.get(label)
        if m is None:
            m = self.models[label] = ModelUsage()
        return m

    def record_call(self, label: str, reply: Reply, batch: bool = False) -> None:
        """A reply from the API (``batch``: through the provider's batch API, at the batch price)."""
        with self._lock:
            m = self._m(label)
            m.calls += 1
            m.input_tokens += reply.usage.input_tokens
            m.output_tokens += reply.usage.output_tokens
            m.reasoning_tokens += reply.usage.reasoning_tokens
            if batch:
                m.batch_calls += 1
                m.batch_input_tokens += reply.usage.input_tokens
                m.batch_output_tokens += reply.usage.output_tokens

    def record_batch(self, label: str, nbytes: int) -> None:
        """One batch submitted, of ``nbytes`` request bytes."""
        with self._lock:
            m = self._m(label)
            m.batches += 1
            m.batch_bytes += int(nbytes)

    def record_round(self, label: str) -> None:
        """One stage answered through the batch API (the requests no cache held, sent together)."""
        with self._lock:
            self._m(label).rounds += 1

    def record_hit(self, label: str, reply: Reply) -> None:
        with self._lock:
            m = self._m(label)
            m.cache_hits += 1
            m.cached_input_tokens += reply.usage.input_tokens
            m.cached_output_tokens += reply.usage.output_tokens
            m.cached_reasoning_tokens += reply.usage.reasoning_tokens

    def record_retry(self, label: str, error: BaseException) -> None:
        with self._lock:
            m = self._m(label)
            m.retries += 1
            m.errors[f"retried:{type(error).__name__}"] += 1

    def record_failure(self, label: str, error: BaseException) -> None:
        """A request that got no usable reply: counted by kind (class and HTTP status), the first
        :data:`MAX_EXAMPLES` kept with the provider's status and message."""
        kind = getattr(error, "kind", type(error).__name__)
        with self._lock:
            m = self._m(label)
            m.failures += 1
            m.errors[kind] += 1
            if len(m.failure_examples) < MAX_EXAMPLES:
                as_dict = getattr(error, "as_dict", None)
                m.failure_examples.append(as_dict() if callable(as_dict) else
                                          {"error": type(error).__name__, "status": None, "message": str(error)})

    # -- reading ---------------------------------------------------------------------------
    def get(self, label: str) -> ModelUsage:
        with self._lock:
            return self.models.get(label) or ModelUsage()

    def total(self) -> ModelUsage:
        out = ModelUsage()
        with self._lock:
            for m in self.models.values():
                out.add(m)
        return out

    def cost(self, label: str) -> float | None:
        """What the calls of ``label`` cost: direct ones at the standard price, batch ones at the batch price."""
        provider, _, model = label.partition(":")
        price = self.prices.lookup(provider, model)
        return None if price is None else _costs(price, self.get(label))[0]

    def as_dict(self) -> dict[str, Any]:
        """For results.json: per model, totals, the price table's date and sources."""
        models: dict[str, Any] = {}
        total_cost, unpriced = 0.0, []
        with self._lock:
            items = sorted(self.models.items())
        for label, m in items:
            provider, _, model = label.partition(":")
            price = self.prices.lookup(provider, model)
            cost, batch_cost, at_direct = (None, None, None) if price is None else _costs(price, m)
            if cost is None:
                if m.input_tokens or m.output_tokens:
                    unpriced.append(label)
            else:
                total_cost += cost
            models[label] = {
                "calls": m.calls, "cache_hits": m.cache_hits, "retries": m.retries, "failures": m.failures,
                "input_tokens": m.input_tokens, "output_tokens": m.output_tokens,
                "cached_input_tokens": m.cached_input_tokens, "cached_output_tokens": m.cached_output_tokens,
                "reasoning_tokens": m.reasoning_tokens, "cached_reasoning_tokens": m.cached_reasoning_tokens,
                "cost_usd": cost, "price": None if price is None else price.as_dict(),
                "errors": dict(sorted(m.errors.items())),
                "failure_examples": list(m.failure_examples),
            }
            if m.batch_calls or m.batches or m.rounds:
                models[label]["batch"] = {
                    "calls": m.batch_calls, "input_tokens": m.batch_input_tokens,
                    "output_tokens": m.batch_output_tokens, "cost_usd": batch_cost,
                    "cost_usd_at_direct_price": at_direct, "batches": m.batches, "rounds": m.rounds,
                    "bytes_uploaded": m.batch_bytes,
                }
        t = self.total()
        batch_total = {k: sum(int(r.get("batch", {}).get(k) or 0) for r in models.values())
                       for k in ("calls", "batches", "rounds", "bytes_uploaded")}
        failure_kinds = Counter({k: v for k, v in t.errors.items() if not k.startswith("retried:")})
        extra: dict[str, Any] = {}
        if self.dry_run:
            extra["tokenizer"] = tokenizer_name()
        return {
            "dry_run": self.dry_run,
            "estimated": self.dry_run,
            **extra,
            "models": models,
            "total": {
                "calls": t.calls, "cache_hits": t.cache_hits, "retries": t.retries, "failures": t.failures,
                "failure_kinds": dict(sorted(failure_kinds.items())),
                "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
                "reasoning_tokens": t.reasoning_tokens,
                "cost_usd": round(total_cost, 9), "unpriced_models": unpriced,
                **({"batch": batch_total} if any(batch_total.values()) else {}),
            },
            "prices": self.prices.describe(),
        }

    def table(self) -> str:
        """A short text table (one line per model, then the total)."""
        return usage_table(self.as_dict())

    @classmethod
    def merged(cls, usages: Iterable[Usage], prices: PriceTable | None = None) -> Usage:
        usages = list(usages)
        out = cls(prices or (usages[0].prices if usages else None), any(u.dry_run for u in usages))
        for u in usages:
            with u._lock:
                for label, m in u.models.items():
                    out._m(label).add(m)
        return out

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> Usage:
        """The counts of a usage record (:meth:`as_dict`, as in results.json) as a :class:`Usage`
        (costs are not counts: they are read from the record where needed)."""
        out = cls(dry_run=bool(report.get("dry_run")))
        for label, r in (report.get("models") or {}).items():
            b = r.get("batch") or {}
            out.models[label] = ModelUsage(
                **{k: int(r.get(k) or 0) for k in ModelUsage.COUNTS[:8]},
                batch_calls=int(b.get("calls") or 0), batch_input_tokens=int(b.get("input_tokens") or 0),
                batch_output_tokens=int(b.get("output_tokens") or 0), batches=int(b.get("batches") or 0),
                rounds=int(b.get("rounds") or 0), batch_bytes=int(b.get("bytes_uploaded") or 0),
                reasoning_tokens=int(r.get("reasoning_tokens") or 0),
                cached_reasoning_tokens=int(r.get("cached_reasoning_tokens") or 0),
                errors=Counter(r.get("errors") or {}), failure_examples=list(r.get("failure_examples") or []))
        return out


def _known_sum(values: Iterable[Any]) -> float | None:
    """The sum of the numbers among ``values``; None when there is none (an unpriced model)."""
    known = [v for v in values if not isinstance(v, bool) and isinstance(v, (int, float))]
    return sum(known) if known else None


def _summed_model(m: ModelUsage, parts: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {k: getattr(m, k) for k in (*ModelUsage.COUNTS[:8], "reasoning_tokens",
                                                       "cached_reasoning_tokens")}
    cost = _known_sum(p.get("cost_usd") for p in parts)
    if cost is not None:
        row["cost_usd"] = cost
    row["errors"] = dict(sorted(m.errors.items()))
    row["failure_examples"] = list(m.failure_examples)
    batches = [p["batch"] for p in parts if p.get("batch")]
    if batches:
        row["batch"] = {"calls": m.batch_calls, "input_tokens": m.batch_input_tokens,
                        "output_tokens": m.batch_output_tokens}
        for key in ("cost_usd", "cost_usd_at_direct_price"):
            if (value := _known_sum(b.get(key) for b in batches)) is not None:
                row["batch"][key] = value
        row["batch"].update(batches=m.batches, rounds=m.rounds, bytes_uploaded=m.batch_bytes)
    return row


def sum_reports(reports: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Several evaluations' usage records (a suite's members) added up through :class:`Usage`: per
    model and in total, calls, cache hits, retries, failures (by kind, the first examples), tokens and
    the batch part; costs are the sums of what each record priced. ``{}`` when none has usage."""
    reports = [r for r in reports if r]
    if not reports:
        return {}
    merged = Usage.merged(Usage.from_report(r) for r in reports)
    models = {label: _summed_model(m, [r["models"][label] for r in reports if label in (r.get("models") or {})])
              for label, m in merged.models.items()}
    t = merged.total()
    total: dict[str, Any] = {"calls": t.calls, "cache_hits": t.cache_hits, "retries": t.retries,
                             "failures": t.failures,
                             "failure_kinds": dict(sorted((k, v) for k, v in t.errors.items()
                                                          if not k.startswith("retried:"))),
                             "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
                             "reasoning_tokens": t.reasoning_tokens}
    if (cost := _known_sum((r.get("total") or {}).get("cost_usd") for r in reports)) is not None:
        total["cost_usd"] = cost
    batch = {"calls": t.batch_calls, "batches": t.batches, "rounds": t.rounds, "bytes_uploaded": t.batch_bytes}
    if any(batch.values()):
        total["batch"] = batch
    return {"dry_run": any(r.get("dry_run") for r in reports), "estimated": any(r.get("estimated") for r in reports),
            "total": total, "models": models, "members": len(reports)}


def _costs(price: Any, m: ModelUsage) -> tuple[float, float, float]:
    """(all calls, the batch calls at the batch price, the batch calls at the standard price)."""
    direct_in, direct_out = m.direct_tokens
    batch = price.cost(m.batch_input_tokens, m.batch_output_tokens, batch=True)
    at_direct = price.cost(m.batch_input_tokens, m.batch_output_tokens)
    return round(price.cost(direct_in, direct_out) + batch, 9), round(batch, 9), round(at_direct, 9)


def _batch_line(b: dict[str, Any], estimated: bool) -> str:
    """The batch part of a model's usage, with what the same calls cost sent directly."""
    size = b.get("bytes_uploaded", 0) / 1e6
    if estimated:
        how = f"{b.get('calls', 0)} calls over {b.get('rounds', 0)} round(s)"
    elif not b.get("batches") and not b.get("rounds"):
        how = f"{b.get('calls', 0)} calls collected from batches submitted earlier"
    else:
        how = (f"{b.get('calls', 0)} calls in {b.get('batches', 0)} batch(es) over {b.get('rounds', 0)} round(s), "
               f"{size:.2f} MB uploaded")
    cost, direct = b.get("cost_usd"), b.get("cost_usd_at_direct_price")
    money = "" if cost is None else f": ${cost:.6f} (sent directly: ${direct:.6f})"
    return f"  via the batch API{' (estimate)' if estimated else ''}: {how}{money}"


def usage_table(d: dict[str, Any]) -> str:
    """The text table of a usage record (:meth:`Usage.as_dict`, as in results.json): one line per
    model, the total when there are several, and the price table's date."""
    head = (f"{'model':<40} {'calls':>7} {'hits':>7} {'retries':>7} {'fail':>5} "
            f"{'in tok':>10} {'out tok':>9} {'reason tok':>10} {'USD':>10}")
    lines = [("LLM usage (DRY RUN: estimates)" if d.get("dry_run") else "LLM usage"), head]

    def row(name: str, r: dict[str, Any]) -> str:
        cost = "n/a" if r.get("cost_usd") is None else f"{r['cost_usd']:.6f}"
        return (f"{name[:40]:<40} {r.get('calls', 0):>7} {r.get('cache_hits', 0):>7} {r.get('retries', 0):>7} "
                f"{r.get('failures', 0):>5} {r.get('input_tokens', 0):>10} {r.get('output_tokens', 0):>9} "
                f"{r.get('reasoning_tokens', 0):>10} {cost:>10}")

    models = d.get("models") or {}
    for label, r in models.items():
        lines.append(row(label, r))
        if r.get("batch"):
            lines.append(_batch_line(r["batch"], bool(d.get("dry_run"))))
    if len(models) > 1:
        lines.append(row("total", d.get("total") or {}))
    unpriced = (d.get("total") or {}).get("unpriced_models") or []
    date = (d.get("prices") or {}).get("date", "?")
    lines.append(f"prices as of {date}" + (f"; no price for {', '.join(unpriced)}" if unpriced else "")
                 + ("; reasoning tokens are part of the output tokens (priced once, as output)"
                    if any(r.get("reasoning_tokens") for r in models.values()) else ""))
    return "\n".join(lines)
