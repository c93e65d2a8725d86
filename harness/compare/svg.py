"""Geometry for the report's SVG charts. These functions only compute coordinates; the elements
are written by the autoescaped jinja2 templates in ``templates/``."""

from __future__ import annotations

import math
from typing import Any

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def radial_range(values: list[float]) -> tuple[float, float]:
    """A fixed range: [0, 1] for values in it, [-1, 1] once a value is negative, widened to a
    whole number when values exceed 1 (or fall below -1)."""
    lo = -1.0 if any(v < 0 for v in values) else 0.0
    hi = 1.0
    if values:
        lo = min(lo, math.floor(min(values)))
        hi = max(hi, math.ceil(max(values)))
    return lo, hi


def short_labels(labels: list[str]) -> list[str]:
    """Drop a prefix every label shares up to a ':' (``infosearch:audience`` -> ``audience``)."""
    if len(labels) > 1 and all(":" in x for x in labels):
        prefixes = {x.rsplit(":", 1)[0] for x in labels}
        if len(prefixes) == 1:
            return [x.rsplit(":", 1)[1] for x in labels]
    return list(labels)


def radar(axes: list[str], series: list[tuple[str, list[float | None]]], size: int = 360) -> dict[str, Any]:
    """axes: labels; series: (system, one value per axis; None is drawn at the range's minimum)."""
    vals = [v for _, vs in series for v in vs if v is not None]
    lo, hi = radial_range(vals)
    cx = cy = size / 2
    r = size / 2 - 70
    n = len(axes)
    axes = short_labels(axes)

    def point(i: int, v: float) -> tuple[float, float]:
        frac = (min(max(v, lo), hi) - lo) / (hi - lo)
        ang = -math.pi / 2 + 2 * math.pi * i / n
        return cx + r * frac * math.cos(ang), cy + r * frac * math.sin(ang)

    def ring(v: float) -> str:
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, v) for i in range(n)))

    ticks = [lo + (hi - lo) * k / 4 for k in range(1, 5)]
    out_axes = []
    for i, label in enumerate(axes):
        x, y = point(i, hi)
        lx, ly = cx + (x - cx) * 1.18, cy + (y - cy) * 1.18
        anchor = "middle" if abs(lx - cx) < 5 else ("start" if lx > cx else "end")
        out_axes.append({"label": label, "x": round(x, 1), "y": round(y, 1), "lx": round(lx, 1), "ly": round(ly, 1),
                         "anchor": anchor})
    polys = []
    for k, (name, vs) in enumerate(series):
        pts = [point(i, lo if v is None else v) for i, v in enumerate(vs)]
        polys.append({"system": name, "color": color(k), "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in pts),
                      "dots": [{"x": round(x, 1), "y": round(y, 1), "value": v, "axis": axes[i]}
                               for i, ((x, y), v) in enumerate(zip(pts, vs))]})
    return {"size": size, "cx": cx, "cy": cy, "lo": lo, "hi": hi, "axes": out_axes,
            "rings": [{"points": ring(t), "value": t, "zero": abs(t) < 1e-12} for t in ticks]
            + ([{"points": ring(0.0), "value": 0.0, "zero": True}] if lo < 0 < hi and 0.0 not in ticks else []),
            "label_x": 4, "label_y": size - 6, "polygons": polys}


def bars(groups: list[str], series: list[tuple[str, list[float | None]]], width: int = 560,
         height: int = 240, errors: list[list[tuple[Any, ...] | None]] | None = None) -> dict[str, Any]:
    """Grouped bars: one group per level/task, one bar per system; the axis includes 0.

    ``errors``: per series, per group, an interval ``(low, high)`` or ``(low, high, label)`` drawn as an
    error bar on that bar (None: none); its ends are clipped to the chart's range."""
    vals = [v for _, vs in series for v in vs if v is not None]
    lo, hi = radial_range(vals)  # the same fixed ranges as the radars: [0, 1] or [-1, 1], widened if needed
    left, right, top, bottom = 48, 10, 10, 40
    pw, ph = width - left - right, height - top - bottom

    def y(v: float) -> float:
        return top + ph * (hi - v) / (hi - lo)

    gw = pw / max(1, len(groups))
    bw = gw * 0.8 / max(1, len(series))
    rects = []
    for g, group in enumerate(groups):
        for k, (name, vs) in enumerate(series):
            v = vs[g]
            if v is None:
                continue
            x = left + g * gw + gw * 0.1 + k * bw
            y0, y1 = sorted((y(0.0), y(v)))
            rect = {"x": round(x, 1), "y": round(y0, 1), "w": round(bw * 0.92, 1),
                    "h": round(max(y1 - y0, 0.5), 1), "color": color(k), "system": name, "group": group,
                    "value": v, "error": None}
            interval = errors[k][g] if errors and k < len(errors) and g < len(errors[k]) else None
            label = interval[2] if interval is not None and len(interval) > 2 else ""
            interval = None if interval is None else (float(interval[0]), float(interval[1]))
            if interval is not None and all(math.isfinite(e) for e in interval):
                e_lo, e_hi = (min(max(e, lo), hi) for e in sorted(interval))
                cx = x + bw * 0.46
                cap = min(4.0, bw * 0.3)
                rect["error"] = {"x": round(cx, 1), "y1": round(y(e_hi), 1), "y2": round(y(e_lo), 1),
                                 "x1": round(cx - cap, 1), "x2": round(cx + cap, 1),
                                 "low": interval[0], "high": interval[1], "label": label}
            rects.append(rect)
    ticks = [lo + (hi - lo) * t / 4 for t in range(5)]
    return {"width": width, "height": height, "left": left, "right": width - right, "top": top,
            "bottom": height - bottom, "zero": round(y(0.0), 1), "rects": rects,
            "ticks": [{"y": round(y(t), 1), "value": t} for t in ticks],
            "labels": [{"x": round(left + (g + 0.5) * gw, 1), "text": group} for g, group in enumerate(groups)]}


def rank_chart(rows: list[dict[str, Any]], n_systems: int, width: int = 560, row_height: int = 22) -> dict[str, Any]:
    """Ranks with their intervals, one row per system (``rows`` best first: ``system``, ``rank``, ``low``,
    ``high``, ``mean``, ``groups``, ``color``): the rank axis runs from 1 (left) to ``n_systems``."""
    longest = max((len(str(r["system"])) + len("".join(r.get("groups") or [])) + 3 for r in rows), default=4)
    left, right, top = min(260, 20 + 7 * longest), 64, 14
    height = top + row_height * len(rows) + 30
    span = max(1, n_systems - 1)

    def x(rank: float) -> float:
        return left + (width - left - right) * (rank - 1) / span

    step = 1 if n_systems <= 20 else math.ceil(n_systems / 10)
    ticks = [{"x": round(x(t), 1), "value": t} for t in range(1, n_systems + 1, step)]
    out = []
    for i, r in enumerate(rows):
        y = top + row_height * (i + 0.5)
        out.append({**r, "y": round(y, 1), "x": round(x(r["rank"]), 1), "x1": round(x(r["low"]), 1),
                    "x2": round(x(r["high"]), 1), "label_x": left - 10, "label_y": round(y + 4, 1),
                    "mean_x": width - 4,
                    "group": "".join(r.get("groups") or [])})
    return {"width": width, "height": height, "left": left, "right": width - right, "top": top,
            "bottom": top + row_height * len(rows), "ticks": ticks, "rows": out}
