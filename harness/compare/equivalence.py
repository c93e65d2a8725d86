"""Equivalence ("no worse, no better than ± margin"): Schuirmann's (1987) two one-sided tests (TOST)
on the paired per-query differences ``d = b - a``.

Null hypothesis: ``mean(d) <= -margin`` or ``mean(d) >= margin``. The p-value is the larger of the two
one-sided paired t-tests, ``H1: mean(d) > -margin`` (``scipy.stats.ttest_rel(b + margin, a,
alternative="greater")``) and ``H1: mean(d) < margin`` (``ttest_rel(b - margin, a, alternative="less")``);
equivalence is claimed at level alpha when it is <= alpha (equivalently, when the 1 - 2 alpha t
interval of ``mean(d)`` lies inside ``(-margin, margin)``). Differences with zero variance give 0 when
``|mean(d)| < margin`` and 1 otherwise (scipy gives NaN).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.compare.stats import TIE_TOL


def tost(a: Sequence[float], b: Sequence[float], margin: float) -> float:
    """The TOST p-value of ``|mean(b - a)| < margin`` (``margin > 0``); NaN for fewer than two queries."""
    from scipy import stats

    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError("the equivalence margin must be a positive number")
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    n = d.size
    if n < 2:
        return float("nan")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd <= TIE_TOL * max(1.0, abs(mean)):
        return 0.0 if abs(mean) < margin else 1.0
    se = sd / math.sqrt(n)
    p_lower = float(stats.t.sf((mean + margin) / se, n - 1))  # H1: mean > -margin
    p_upper = float(stats.t.cdf((mean - margin) / se, n - 1))  # H1: mean < margin
    return max(p_lower, p_upper)


def bootstrap_tost(shifted: np.ndarray, delta: float, margin: float) -> float:
    """The bootstrap TOST p-value from the resampled ``shifted = delta* - delta`` (the centred bootstrap
    distribution of the statistic): ``H1: mean > -margin`` counts ``shifted >= delta + margin``,
    ``H1: mean < margin`` counts ``shifted <= delta - margin``; each ``(c + 1) / (B + 1)``; the larger."""
    b = shifted.size
    tol = 1e-9 * max(1.0, abs(delta) + margin)
    lower = (np.count_nonzero(shifted >= delta + margin - tol) + 1) / (b + 1)
    upper = (np.count_nonzero(shifted <= delta - margin + tol) + 1) / (b + 1)
    return float(max(lower, upper))
