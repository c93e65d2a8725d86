"""Plain-text tables for the terminal. A metric with an uncertainty reads ``0.4361 ± 0.0318``
(value ± SE; ``[low, high]`` when only a 95% interval is known), with the number of queries in
its own column."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness.concepts.uncertainty import Uncertainty


def fmt(value: object, digits: int = 4) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def render(rows: Sequence[Sequence[object]], header: Sequence[str], digits: int = 4) -> str:
    cells = [[fmt(c, digits) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(), line]
    for raw, r in zip(rows, cells):  # numbers right-aligned, text left-aligned
        out.append("  ".join(c.rjust(w) if isinstance(v, (int, float, Cell)) else c.ljust(w)
                             for v, c, w in zip(raw, r, widths)).rstrip())
    return "\n".join(out)


class Cell(str):
    """Text that :func:`render` right-aligns like a number (``0.4361 ± 0.0318``)."""


def with_uncertainty(value: float | None, uncertainty: Uncertainty | None, digits: int = 4,
                     scale: float = 1.0) -> object:
    """A cell: ``value ± SE`` when ``uncertainty`` has an SE (or ``value [lo, hi]`` with only an
    interval); the bare value (scaled) otherwise."""
    if uncertainty is None or (uncertainty.se is None and uncertainty.ci95 is None):
        if value is None:
            return "-"
        return value * scale if isinstance(value, (int, float)) and scale != 1 else value
    return Cell(uncertainty.format(value, digits, scale))


def metrics_table(metrics: Mapping[str, float], title: str = "", digits: int = 4,
                  uncertainty: Mapping[str, Uncertainty] | None = None,
                  details: Mapping[str, float] | None = None, notes: Mapping[str, str] | None = None) -> str:
    """One row per metric. With ``uncertainty``, a metric that has one reads ``value ± SE`` and a
    column ``n`` gives its number of queries; ``details`` (counts that are not metrics) follow in
    their own table; ``notes`` say, under the table, why a metric has no value."""
    uncertainty = uncertainty or {}
    if any(u.se is not None or u.ci95 is not None or u.n is not None for u in uncertainty.values()):
        show_n = any(u.n is not None for u in uncertainty.values())
        rows = []
        for k, v in metrics.items():
            u = uncertainty.get(k)
            row: list[object] = [k, with_uncertainty(v, u, digits)]
            if show_n:
                row.append(u.n if u is not None and u.n is not None else "")
            rows.append(row)
        body = render(rows, ["metric", "value ± SE" if any(u.se is not None for u in uncertainty.values())
                             else "value", *(["n"] if show_n else [])], digits)
    else:
        body = render([(k, v) for k, v in metrics.items()], ["metric", "value"], digits)
    if details:
        body += "\n\n" + render([(k, v) for k, v in details.items()], ["detail", "count"], digits=0)
    for name, why in (notes or {}).items():
        if name in metrics:
            body += f"\n{name}: no value: {why}"
    return f"{title}\n{body}" if title else body


def lookup(metrics: Mapping[str, Any], uncertainty: Mapping[str, Uncertainty], key: str) -> float | None:
    """A table column's value: the metric ``key``, or a field of a metric's uncertainty named by a
    suffix: ``NAME:estimate`` (also ``NAME:bootstrap``, the version-1 name), ``NAME:se``,
    ``NAME:n`` (also ``NAME:queries``). None when absent."""
    if key in metrics:
        v = metrics[key]
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    name, sep, part = key.rpartition(":")
    u = uncertainty.get(name) if sep else None
    if u is None:
        return None
    field = {"estimate": "estimate", "bootstrap": "estimate", "se": "se", "n": "n", "queries": "n"}.get(part)
    v = getattr(u, field) if field else None
    return None if v is None else float(v)


def summary_table(result: Any, columns: Sequence[Sequence[Any]] | None = None, se: bool = True) -> str:
    """The task's summary row(s) as its paper prints them (``Task.table``: column header, key,
    scale), for an :class:`~harness.results.result.EvalResult` (a suite's: a row per member, then the
    mean).

    A key is a metric or a field of a metric's uncertainty (``birco-ndcg@10:estimate``, see
    :func:`lookup`); values are scaled and printed with one decimal. With ``se``, a cell whose metric
    has a standard error reads ``43.5 ± 3.2`` (the SE scaled alike). A suite's mean row takes the
    suite's metric, or for an uncertainty field the unweighted mean of the members' values."""
    suite = result.is_suite
    if columns is None:
        columns = result.task.table or (next((r.task.table for r in result.members.values() if r.task.table), [])
                                        if suite else [])
    comps = result.system_components
    system = " -> ".join([comps["retriever"]["spec"], *(r["spec"] for r in comps.get("rerankers", []))])
    if suite:
        rows = [(f"{system} | {name}", r.metrics, r.uncertainty) for name, r in result.members.items()]
        rows.append((f"{system} | mean", result.metrics, getattr(result, "uncertainty", None) or {}))
    else:
        rows = [(f"{system} | {result.task.name}", result.metrics, getattr(result, "uncertainty", None) or {})]

    def cell(metrics, unc, key, scale):
        value = lookup(metrics, unc, key)
        if value is None and suite and metrics is result.metrics:  # the mean row: mean of the members' values
            vals = [lookup(r.metrics, r.uncertainty, key) for r in result.members.values()]
            vals = [v for v in vals if v is not None and v == v]
            value = sum(vals) / len(vals) if vals else None
        if value is None:
            return "-"
        name, sep, part = key.rpartition(":")
        u = unc.get(key) or (unc.get(name) if sep and key not in metrics else None)
        if se and u is not None and u.se is not None and part not in ("se", "n", "queries"):
            return Cell(f"{value * float(scale):.1f} ± {u.se * float(scale):.1f}")
        return round(value * float(scale), 1)

    body = [(label, *(cell(m, u, key, scale) for _, key, scale in columns)) for label, m, u in rows]
    return render(body, ["", *(header for header, _, _ in columns)], digits=1)


render_table = render  # the name the public `harness` module exports
