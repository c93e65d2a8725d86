"""Plain-text tables for the terminal."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


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
        out.append("  ".join(c.rjust(w) if isinstance(v, (int, float)) else c.ljust(w)
                             for v, c, w in zip(raw, r, widths)).rstrip())
    return "\n".join(out)


def metrics_table(metrics: Mapping[str, float], title: str = "", digits: int = 4) -> str:
    body = render([(k, v) for k, v in metrics.items()], ["metric", "value"], digits)
    return f"{title}\n{body}" if title else body
