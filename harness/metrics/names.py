"""Names of the standard measure families (light: imported at plugin-load time)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from harness.concepts.errors import HarnessError

MAX_CUTOFF = 1_000_000  # the largest k accepted in ``metric@k`` or ``cutoff=k``
MAX_NAME_CHARS = 200  # the longest metric name accepted
_INT = re.compile(r"[+-]?[0-9]{1,18}")

# harness name -> (ir-measures name, description)
STANDARD_ALIASES: Mapping[str, tuple[str, str]] = MappingProxyType({
    "nDCG": ("nDCG", "nDCG@k, trec_eval semantics (graded gain, log2 discount)"),
    "MRR": ("RR", "Mean reciprocal rank (MRR@k cuts the ranking at k)"),
    "Recall": ("R", "Recall@k (relevant: grade >= 1 unless rel=... is given)"),
    "P": ("P", "Precision@k"),
    "MAP": ("AP", "Mean average precision (MAP@k: map_cut_k)"),
    "R-Prec": ("Rprec", "R-precision"),
    "Success": ("Success", "Success@k: 1 if any relevant document is in the top k"),
    "Judged": ("Judged", "Judged@k: share of the top k that has a judgment"),
})

STANDARD_FAMILIES = MappingProxyType({name: desc for name, (_, desc) in STANDARD_ALIASES.items()})


def check_cutoff(metric: str, value: object) -> int:
    """``value`` (an int or the digits after ``@``) as a cutoff k with ``1 <= k <= MAX_CUTOFF``; anything
    else raises :class:`HarnessError` naming ``metric``."""
    k = value
    if isinstance(value, str):
        k = int(value) if _INT.fullmatch(value.strip()) else None
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CUTOFF:
        try:
            shown = str(value)
        except ValueError:  # an int beyond Python's 4300-digit str limit
            shown = "a number of more than 4300 digits"
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise HarnessError(f"metric {metric[:80]!r}: the cutoff k must be a whole number from 1 to "
                           f"{MAX_CUTOFF:,}, got {shown}")
    return k
