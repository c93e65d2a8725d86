"""What each query's LLM calls cost: calls, cache hits, failures, input / output / reasoning tokens, USD and
LLM seconds per query, from the clients' call logs (:attr:`harness.llm.client.Client.call_log`, one row per
call, each naming the query it was made for or none).

Besides what the run spent, each query's (and the run's) ``compute`` is what its replies took to make, whether
sent now or read from the cache: ``output_tokens``, ``reasoning_tokens``, ``usd`` (each reply at its price; a hit
at the direct price) and ``seconds`` (each reply's latency when it was made; ``unknown``: replies without one,
e.g. from a batch or a cache written before latencies were kept). A warm rerun spends nothing and keeps its
compute: what ``harness report`` puts on the axes of effectiveness against compute (docs/compute.md).

Every call is counted once: under its query (``per_query.jsonl``, field ``llm``), under the queries that have
no row there (``other_queries``: e.g. queries without qrels), or apart (``unattributed``: calls made for no
query, such as a request two queries share, and the usage of clients that log no calls: an embeddings or a
rerank API). ``unattributed`` is what the run's usage totals hold beyond the calls attributed, so the three
parts add up to the totals (``total``) exactly; it is never spread over the queries. Tokens and USD count the
calls sent (a cache hit costs nothing; the reasoning tokens are part of the output tokens); ``seconds`` is
the wall time each call's caller waited for it (retries, the endpoint's queue and, in batch mode, the round
included), added up: calls run concurrently, so the sum exceeds the run's wall time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: the counts of each query's ``llm`` field, in order
FIELDS = ("calls", "cache_hits", "failures", "input_tokens", "output_tokens", "reasoning_tokens", "cost_usd",
          "seconds")
#: the fields of the run's usage totals they are checked against (``seconds`` is the calls' own sum)
TOTAL_FIELDS = ("calls", "cache_hits", "failures", "input_tokens", "output_tokens", "reasoning_tokens", "cost_usd")


#: the fields of ``compute``: what the replies took to make, sent now or read from the cache
COMPUTE = ("output_tokens", "reasoning_tokens", "usd", "seconds", "unknown")


def empty() -> dict[str, Any]:
    return {"calls": 0, "cache_hits": 0, "failures": 0, "input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0,
            "cost_usd": 0.0, "seconds": 0.0,
            "compute": {"output_tokens": 0, "reasoning_tokens": 0, "usd": 0.0, "seconds": 0.0, "unknown": 0}}


def _plus(a: Any, b: Any) -> Any:
    """A sum where None (an unpriced model) makes the whole unknown."""
    return None if a is None or b is None else a + b


def add_row(into: dict[str, Any], row: Mapping[str, Any]) -> None:
    """Count one call row into ``into`` (a sent call's tokens and price; a hit's nothing but itself, and both
    replies' compute)."""
    into["seconds"] += float(row.get("seconds") or 0.0)
    if row.get("error"):
        into["failures"] += 1
        return
    c = into["compute"]
    c["output_tokens"] += int(row.get("output_tokens") or 0)
    c["reasoning_tokens"] += int(row.get("reasoning_tokens") or 0)
    c["usd"] = _plus(c["usd"], row.get("price_usd"))
    if row.get("latency_s") is None:
        c["unknown"] += 1
    else:
        c["seconds"] += float(row["latency_s"])
    if row.get("cached"):
        into["cache_hits"] += 1
        return
    into["calls"] += 1
    for k in ("input_tokens", "output_tokens", "reasoning_tokens"):
        into[k] += int(row.get(k) or 0)
    into["cost_usd"] = _plus(into["cost_usd"], row.get("cost_usd"))


def _sum(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    out = empty()
    for p in parts:
        for k in FIELDS:
            out[k] = _plus(out[k], p.get(k)) if k == "cost_usd" else out[k] + (p.get(k) or 0)
        for k in COMPUTE:
            got = (p.get("compute") or {}).get(k, 0)
            out["compute"][k] = _plus(out["compute"][k], got) if k == "usd" else out["compute"][k] + (got or 0)
    return out


def _rounded(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (_rounded(v) if isinstance(v, dict) else round(v, 12) if isinstance(v, float) else v)
            for k, v in d.items()}


def attribute_calls(clients: Iterable[Any], usage_total: Mapping[str, Any], written: Iterable[str]
                    ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """``(per query, summary)``: each query of ``written`` (the queries ``per_query.jsonl`` has a row for)
    with its calls' counts (:data:`FIELDS`; zeros for a query with none), and the summary for results.json
    (``usage.per_query``): ``queries``, ``attributed`` (their sum), ``other_queries`` (calls of queries with no
    row), ``unattributed`` (the rest of ``usage_total``, the run's usage totals) and ``total``. ``({}, {})``
    when no client made a call."""
    clients = list(clients)
    if not clients:
        return {}, {}
    written = set(written)
    per: dict[str, dict[str, Any]] = {q: empty() for q in written}
    other: dict[str, Any] = empty()
    loose = empty()  # rows made for no query
    for client in clients:
        for row in list(getattr(client, "call_log", ())):
            qid = row.get("query_id")
            add_row(per[qid] if qid in per else other if qid is not None else loose, row)
    attributed = _sum(per.values())
    unattributed = {k: _rest(k, usage_total, attributed, other) for k in TOTAL_FIELDS}
    unattributed["seconds"] = loose["seconds"]
    unattributed["compute"] = loose["compute"]  # the replies of calls made for no query (others log none)
    total = _sum([attributed, other, unattributed])
    summary = {"queries": len(written), "attributed": _rounded(attributed), "other_queries": _rounded(other),
               "unattributed": _rounded(unattributed), "total": _rounded(total),
               "rule": "every call counted once: per query (per_query.jsonl, field llm), for queries without a row "
                       "there (other_queries), or apart (unattributed: calls for no query, clients that log no "
                       "calls); tokens and USD of calls sent; seconds: the calls' wall time added up"}
    return {q: _rounded(v) for q, v in per.items()}, summary


def _rest(name: str, total: Mapping[str, Any], *parts: Mapping[str, Any]) -> Any:
    """What the run's total ``name`` holds beyond ``parts`` (never below 0: a total never counts less)."""
    whole = total.get(name)
    if name == "cost_usd":
        if whole is None or any(p.get(name) is None for p in parts):
            return None
        return round(max(0.0, float(whole) - sum(float(p[name]) for p in parts)), 9)  # the totals' rounding
    return max(0, int(whole or 0) - sum(int(p.get(name) or 0) for p in parts))
