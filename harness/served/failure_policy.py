"""The failure policy of LLM-backed runs, as plain functions over the usage record.

A *transport failure* is a request that got no usable reply (counted in usage as ``failures``):
the method was not applied there, so a run with any is INCOMPLETE unless the user accepted a share
of them (``--max-llm-failures``). Reply-quality failures (a reply the method's parser rejects) are
part of what is measured: components count them in their own ``stats()`` and they do not make a
run incomplete.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: the exit status of ``harness eval`` for an INCOMPLETE run
EXIT_INCOMPLETE = 3


def check_share(max_share: float) -> float:
    """``max_share`` as a float in [0, 1] (a share of the run's LLM requests), else ValueError."""
    share = float(max_share)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"max_llm_failures is a share of the LLM requests, between 0 and 1; got {max_share}")
    return share


def failure_report(usage: Mapping[str, Any], per_query: Mapping[str, int] | None = None,
                   max_share: float = 0.0) -> dict[str, Any]:
    """``complete`` (no transport failure, or no more than ``max_share`` of the requests), the
    counts, the share, failures by kind, the first failures verbatim and failures per query."""
    total = usage.get("total") or {}
    failed = int(total.get("failures", 0))
    requests = failed + int(total.get("calls", 0)) + int(total.get("cache_hits", 0))
    share = failed / requests if requests else 0.0
    examples = [e for m in (usage.get("models") or {}).values() for e in m.get("failure_examples", [])]
    return {
        "complete": failed == 0 or share <= max_share,
        "failed": failed,
        "requests": requests,
        "share": round(share, 6),
        "max_share": max_share,
        "kinds": dict(total.get("failure_kinds") or {}),
        "examples": examples[:5],
        "per_query": dict(sorted((per_query or {}).items())),
    }


def merge_per_query(stats: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Components' ``transport_failures_per_query`` added up."""
    out: dict[str, int] = {}
    for st in stats:
        for qid, n in (st.get("transport_failures_per_query") or {}).items():
            out[qid] = out.get(qid, 0) + int(n)
    return out


def banner(report: Mapping[str, Any], queries: int | None = None) -> str:
    """The lines printed over the metrics of a run with transport failures (INCOMPLETE, or
    accepted within ``--max-llm-failures``)."""
    if not report.get("failed"):
        return ""
    kinds = ", ".join(f"{k}: {n}" for k, n in sorted(report["kinds"].items(), key=lambda kv: -kv[1]))
    affected = len(report.get("per_query") or {})
    where = f"; {affected}{f' of {queries}' if queries else ''} queries affected" if affected else ""
    head = (f"{report['failed']} of {report['requests']} LLM requests got no usable reply "
            f"({report['share']:.1%}; {kinds}){where}")
    if report["complete"]:
        lines = [f"LLM failures accepted (--max-llm-failures {report['max_share']:g}): {head}"]
    else:
        lines = [f"INCOMPLETE: {head}.",
                 "The figures below do not measure the LLM components as configured; rerun to retry the failed "
                 "requests (replies already received are cached), or accept a share with --max-llm-failures."]
    shown = dict.fromkeys(f"  {e.get('error')}: {e.get('message')}" for e in report.get("examples", []))
    lines.extend(list(shown)[:3])
    return "\n".join(lines)
