"""Multiple-comparison adjustments of a family of p-values (as statsmodels' ``multipletests`` returns
them: adjusted p-values made monotone and capped at 1; reject hypothesis ``i`` at level alpha when its
adjusted p <= alpha).

* ``holm``: Holm (1979), step-down, family-wise error rate: sorted ascending, ``p_(i) (m - i + 1)``,
  running maximum.
* ``bonferroni``: family-wise error rate: ``m p``.
* ``bh``: Benjamini & Hochberg (1995), step-up, false discovery rate under independence or positive
  dependence: ``p_(i) m / i``, running minimum from the largest down.
* ``by``: Benjamini & Yekutieli (2001), false discovery rate under any dependence: BH times
  ``c(m) = sum_{i=1..m} 1/i`` (statsmodels ``fdr_by``).
* ``none``: the p-values as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from harness.compare.stats import holm

CORRECTIONS = ("holm", "bonferroni", "bh", "by", "none")
DESCRIPTIONS = MappingProxyType({
    "holm": "Holm (1979) step-down, family-wise error rate",
    "bonferroni": "Bonferroni, family-wise error rate",
    "bh": "Benjamini-Hochberg (1995) step-up, false discovery rate",
    "by": "Benjamini-Yekutieli (2001) step-up, false discovery rate under any dependence",
    "none": "no correction",
})


def bonferroni(pvalues: Sequence[float]) -> list[float]:
    """``min(1, m p)`` for each of the ``m`` p-values."""
    m = len(pvalues)
    return [min(1.0, m * p) for p in pvalues]


def _step_up(pvalues: Sequence[float], factor: float) -> list[float]:
    """``min_{j >= i} p_(j) m factor / j`` over the ascending order, capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):  # from the largest p-value down
        i = order[rank - 1]
        running = min(running, pvalues[i] * m * factor / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (statsmodels ``fdr_bh``)."""
    return _step_up(pvalues, 1.0)


def benjamini_yekutieli(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Yekutieli adjusted p-values, ``c(m) = sum 1/i`` (statsmodels ``fdr_by``)."""
    c = sum(1.0 / i for i in range(1, len(pvalues) + 1))
    return _step_up(pvalues, c)


def adjust(pvalues: Sequence[float], method: str) -> list[float]:
    """The adjusted p-values of one family by ``method`` (:data:`CORRECTIONS`). A NaN p-value (a test
    with no answer) counts as 1 in the family and stays NaN."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}: choose one of {', '.join(CORRECTIONS)}")
    finite = [p if p == p else 1.0 for p in pvalues]
    fn = {"holm": holm, "bonferroni": bonferroni, "bh": benjamini_hochberg, "by": benjamini_yekutieli,
          "none": list}[method]
    return [a if p == p else float("nan") for a, p in zip(fn(finite), pvalues)]
