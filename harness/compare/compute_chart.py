"""Effectiveness against compute, for several runs of one task (``harness report``, ``harness view``'s compare
page): the main metric against the LLM's USD, output tokens and seconds, one labelled point per run, the
Pareto frontier marked; and per query, where the extra budget helped or hurt (the metric's difference
against the cheapest run, sorted).

A run's compute is what its replies took to make, whether this run sent them or read them from the cache
(``usage.per_query.total.compute`` in its ``results.json``: USD at the model's price, output tokens, the calls'
latencies added up; :mod:`harness.served.query_usage`), so a warm rerun is not free; a run written before that
field has the USD and output tokens it spent (``usage.total``) and no seconds. A run without LLM usage costs 0
on every axis; a run whose model has no price has no USD (it is left out of that chart, and said). The
frontier: the runs no other run beats on both axes (as good a metric for no more compute, better on one).
This module only computes coordinates; the report's template and the viewer's page write the elements
(escaped).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.compare.ranks import lower_is_better
from harness.compare.svg import color

#: the axes: (key, label); ``usd`` first, the one that picks the cheapest run
AXES = (("usd", "USD"), ("output_tokens", "output tokens"), ("seconds", "LLM seconds"))
WIDTH, HEIGHT = 440, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 32, 16, 44
#: the most queries listed as helped (and as hurt) per run
LISTED = 10


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def compute_of(results: dict[str, Any]) -> dict[str, float | None]:
    """A run's USD, output tokens, reasoning tokens and LLM seconds from its results.json (zeros without LLM
    usage; None where the run does not record one: an unpriced model's USD, the seconds of a run written
    before they were)."""
    usage = results.get("usage") or {}
    total = usage.get("total") or {}
    if not total:
        return {"usd": 0.0, "output_tokens": 0.0, "reasoning_tokens": 0.0, "seconds": 0.0, "calls": 0.0}
    calls = (_num(total.get("calls")) or 0.0) + (_num(total.get("cache_hits")) or 0.0)
    compute = ((usage.get("per_query") or {}).get("total") or {}).get("compute")
    if isinstance(compute, dict):
        unknown = _num(compute.get("unknown")) or 0.0
        return {"usd": _num(compute.get("usd")), "output_tokens": _num(compute.get("output_tokens")),
                "reasoning_tokens": _num(compute.get("reasoning_tokens")) or 0.0,
                "seconds": _num(compute.get("seconds")) if not unknown else None, "calls": calls}
    return {"usd": _num(total.get("cost_usd")), "output_tokens": _num(total.get("output_tokens")),
            "reasoning_tokens": _num(total.get("reasoning_tokens")) or 0.0, "seconds": None, "calls": calls}


def pareto(points: Sequence[tuple[float, float]], lower_is_better: bool = False) -> list[bool]:
    """For each ``(compute, metric)`` point: is it on the frontier (no other point has no more compute and
    as good a metric, better on one)?"""
    sign = -1.0 if lower_is_better else 1.0
    out = []
    for i, (x, y) in enumerate(points):
        dominated = any(j != i and xj <= x and sign * yj >= sign * y and (xj < x or sign * yj > sign * y)
                        for j, (xj, yj) in enumerate(points))
        out.append(not dominated)
    return out


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / (n - 1)
    return [lo + k * step for k in range(n)]


def _fmt(v: float, key: str) -> str:
    if key == "usd":
        return f"${v:.4f}" if v < 1 else f"${v:,.2f}"
    if key == "output_tokens":
        return f"{v:,.0f}" if v < 1e6 else f"{v:.3g}"
    return f"{v:.3g}"


def scatter(points: list[dict[str, Any]], key: str, label: str, metric: str, lower_is_better: bool = False
            ) -> dict[str, Any] | None:
    """The chart of ``metric`` against ``key`` (None with fewer than two points that have both)."""
    have = [p for p in points if p.get(key) is not None and p.get("value") is not None]
    if len(have) < 2:
        return None
    xs, ys = [p[key] for p in have], [p["value"] for p in have]
    x_hi = max(xs) * 1.08 or 1.0
    y_lo, y_hi = min(ys), max(ys)
    pad = (y_hi - y_lo) * 0.1 or max(abs(y_hi) * 0.1, 0.05)
    y_lo, y_hi = y_lo - pad, y_hi + pad
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return round(LEFT + w * x / x_hi, 1)

    def py(y: float) -> float:
        return round(TOP + h * (1 - (y - y_lo) / (y_hi - y_lo)), 1)

    front = pareto(list(zip(xs, ys)), lower_is_better)
    dots = [{"system": p["system"], "color": p["color"], "x": px(p[key]), "y": py(p["value"]), "compute": p[key],
             "value": p["value"], "frontier": f, "shown": _fmt(p[key], key)} for p, f in zip(have, front)]
    _place_labels(dots, LEFT + w * 0.55)
    line = sorted((d for d in dots if d["frontier"]), key=lambda d: (d["x"], d["y"]))
    return {"key": key, "label": label, "metric": metric, "width": WIDTH, "height": HEIGHT, "left": LEFT,
            "right": WIDTH - RIGHT, "top": TOP, "bottom": HEIGHT - BOTTOM, "dots": dots,
            "frontier": [d["system"] for d in line],
            "path": ("M" + " L".join(f"{d['x']},{d['y']}" for d in line)) if len(line) > 1 else "",
            "x_ticks": [{"x": px(t), "text": _fmt(t, key)} for t in _ticks(0.0, x_hi)],
            "y_ticks": [{"y": py(t), "text": f"{t:.3f}"} for t in _ticks(y_lo, y_hi)],
            "left_out": [p["system"] for p in points if p.get(key) is None]}


def _place_labels(dots: list[dict[str, Any]], middle: float) -> None:
    """Each label right of its point (left of it in the chart's right half), above it, or below it when it
    would cover a label placed before (labels about 6 px a character, 12 px high)."""
    boxes: list[tuple[float, float, float, float]] = []
    for d in sorted(dots, key=lambda d: (d["x"], d["y"])):
        right = d["x"] < middle
        width = 6.0 * len(d["system"])
        lx = d["x"] + (8 if right else -8)
        x0, x1 = (lx, lx + width) if right else (lx - width, lx)
        ly = d["y"] - 7
        for dy in (0.0, 20.0, -14.0, 34.0):
            y = d["y"] - 7 + dy
            if not any(x0 < b[1] and b[0] < x1 and y - 12 < b[3] and b[2] < y for b in boxes):
                ly = y
                break
        boxes.append((x0, x1, ly - 12, ly))
        d.update(lx=round(lx, 1), ly=round(ly, 1), anchor="start" if right else "end")


def query_deltas(per_query: list[dict[str, dict[str, float | None]]], names: list[str], metric: str, base: int,
                 query_llm: list[dict[str, dict[str, float | None]]] | None = None) -> list[dict[str, Any]]:
    """Per run other than ``base`` (the cheapest): each query's ``metric`` minus the base run's, sorted from
    the largest gain to the largest loss, with the query's extra USD where both runs record it; wins, ties,
    losses, and the :data:`LISTED` largest gains and losses."""
    out = []
    base_rows = per_query[base]
    for i, rows in enumerate(per_query):
        if i == base:
            continue
        items = []
        for q, row in base_rows.items():
            a, b = _num(row.get(metric)), _num((rows.get(q) or {}).get(metric))
            if a is None or b is None:
                continue
            extra = None
            if query_llm is not None:
                ca, cb = _query_usd(query_llm[base].get(q)), _query_usd(query_llm[i].get(q))
                extra = None if ca is None or cb is None else cb - ca
            items.append({"query_id": q, "base": a, "value": b, "delta": b - a, "extra_usd": extra})
        items.sort(key=lambda x: (-x["delta"], x["query_id"]))
        wins = sum(1 for x in items if x["delta"] > 1e-12)
        losses = sum(1 for x in items if x["delta"] < -1e-12)
        out.append({"system": names[i], "against": names[base], "queries": items, "wins": wins, "losses": losses,
                    "ties": len(items) - wins - losses, "helped": [x for x in items[:LISTED] if x["delta"] > 1e-12],
                    "hurt": [x for x in reversed(items[-LISTED:]) if x["delta"] < -1e-12],
                    "bars": _bars(items)})
    return out


def _query_usd(llm: dict[str, Any] | None) -> float | None:
    """A query's compute in USD (its replies at their price, sent now or cached), else what it spent."""
    if llm is None:
        return None
    return _num(llm.get("compute_usd", llm.get("cost_usd")))


def _bars(items: list[dict[str, Any]], width: int = 600, height: int = 120) -> dict[str, Any]:
    """One bar per query (the sorted deltas), up for a gain, down for a loss."""
    n = len(items)
    top = max((abs(x["delta"]) for x in items), default=0.0) or 1.0
    mid, bw = height / 2, width / max(n, 1)
    rects = []
    for k, x in enumerate(items):
        hgt = abs(x["delta"]) / top * (height / 2 - 4)
        rects.append({"x": round(k * bw, 2), "y": round(mid - hgt if x["delta"] > 0 else mid, 2),
                      "w": round(max(bw - (1 if n < 200 else 0), 0.5), 2), "h": round(max(hgt, 0.5), 2),
                      "kind": "win" if x["delta"] > 1e-12 else "loss" if x["delta"] < -1e-12 else "tie",
                      "query_id": x["query_id"], "delta": x["delta"]})
    return {"width": width, "height": height, "mid": mid, "rects": rects}


def compute_section(names: list[str], colors: list[str], results: list[dict[str, Any]], metric: str,
                    per_query: list[dict[str, dict[str, float | None]]],
                    query_llm: list[dict[str, dict[str, float | None]]] | None = None,
                    lower_is_better: bool = False) -> dict[str, Any] | None:
    """The section for runs ``names`` of one task (each run's results.json, per-query values and per-query LLM
    accounting): a table of each run's compute, the three charts, and the per-query deltas against the
    cheapest run. None with fewer than two runs, or when none made an LLM call."""
    if len(names) < 2:
        return None
    points = []
    for name, colour, res in zip(names, colors, results):
        c = compute_of(res)
        points.append({"system": name, "color": colour, "value": _num((res.get("metrics") or {}).get(metric)), **c})
    if not any(p.get("calls") for p in points):
        return None
    charts = [c for c in (scatter(points, key, label, metric, lower_is_better) for key, label in AXES) if c]
    order = sorted(range(len(points)), key=lambda i: (_rank(points[i]["usd"]), _rank(points[i]["output_tokens"]), i))
    base = order[0]
    return {"metric": metric, "points": points, "charts": charts, "cheapest": names[base],
            "cheapest_by": "USD" if points[base]["usd"] is not None else "output tokens",
            "deltas": query_deltas(per_query, names, metric, base, query_llm)}


def _rank(v: float | None) -> float:
    return math.inf if v is None else v


def main_metric(results: dict[str, Any], shared: Sequence[str]) -> str | None:
    """The task's first declared metric when every run reports it per query, else the first shared one."""
    declared = [m for m in ((results.get("task") or {}).get("metrics") or []) if isinstance(m, str)]
    return next((m for m in declared if m in shared), shared[0] if shared else None)


def for_systems(systems: Sequence[Any], task: str, shared: Sequence[str]) -> dict[str, Any] | None:
    """:func:`compute_section` for the systems (:class:`harness.compare.runs.System`) of ``harness report`` on
    ``task``; ``shared``: the metrics every one reports per query."""
    if len(systems) < 2:
        return None
    trs = [s.tasks[task] for s in systems]
    metric = main_metric(trs[0].results, shared)
    if metric is None:
        return None
    return compute_section([s.name for s in systems], [color(i) for i in range(len(systems))],
                           [tr.results for tr in trs], metric, [tr.per_query for tr in trs],
                           [tr.stored.read_query_llm() for tr in trs], lower_is_better=lower_is_better(metric))
