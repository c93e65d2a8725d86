"""The paper's Table 1: its columns, in order, and rows rendered as the paper prints them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: (column header, metric key, scale): the paper's Table 1, in its order
TABLE1 = (
    ("nDCG Ori", "nDCG@10[og]", 100), ("nDCG Ins", "nDCG@10[changed]", 100), ("nDCG Rev", "nDCG@10[reversed]", 100),
    ("Rob Ori", "Robustness@10[og]", 100), ("Rob Ins", "Robustness@10[changed]", 100),
    ("Rob Rev", "Robustness@10[reversed]", 100),
    ("p-MRR", "p-MRR", 100), ("WISE", "WISE", 100), ("SICR", "SICR", 100),
    ("R_ori", "R_ori", 1), ("R_ins", "R_ins", 1), ("R_rev", "R_rev", 1),
)
#: the appendix columns added by ``--wide``
WIDE = (
    ("MRR@1 Ori", "MRR@1[og]", 100), ("MRR@1 Ins", "MRR@1[changed]", 100), ("MRR@1 Rev", "MRR@1[reversed]", 100),
    ("Ideal", "WISE-ideal", 100), ("Per.", "WISE-per", 100),
)


def _cell(value: Any, scale: float) -> str:
    if not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value * scale:.1f}"


def table1(rows: list[tuple[str, Mapping[str, float]]], wide: bool = False) -> str:
    """Rows ``(label, metrics)`` as the paper prints them: x100, one decimal; mean ranks as they are."""
    from harness import render_table

    cols = TABLE1 + (WIDE if wide else ())
    body = [(label, *(_cell(m.get(key), scale) for _, key, scale in cols)) for label, m in rows]
    return render_table(body, ["", *(h for h, _, _ in cols)])
