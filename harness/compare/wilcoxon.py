"""The Wilcoxon signed-rank test, as ``scipy.stats.wilcoxon(a, b)`` computes it with its defaults
(``zero_method="wilcox"``, ``correction=False``, ``alternative="two-sided"``, ``method="auto"``),
written out here:

* ``d = a - b``; zero differences are dropped (``wilcox``); the others are ranked by ``|d|`` (ties
  get their mean rank); ``R+`` is the sum of the ranks of the positive differences.
* ``n <= 50`` differences (zeros counted) with no zero and no tie: the **exact** null distribution of
  ``R+`` (every subset of the ranks ``1..m`` equally likely); ``p = 2 min(P(R+ >= floor R+),
  P(R+ <= ceil R+))``, capped at 1.
* ``n <= 13`` with a zero or a tie: the exact **sign-flip** distribution of ``R+`` (all ``2^n`` sign
  assignments of the differences, the ranks fixed), ``p = 2 min(share <= R+, share >= R+)``, capped
  at 1 (scipy's ``permutation_test`` with relative tolerance ``100 eps``).
* otherwise the **normal approximation**: ``z = (R+ - m(m+1)/4) / sqrt((m(m+1)(2m+1) - sum(t^3 - t)/2) / 24)``,
  ``m`` the non-zero differences and ``t`` the sizes of their groups of tied ``|d|``; ``p = 2 sf(|z|)``,
  no continuity correction.

Where every difference is zero (identical runs) the p-value is 1 (scipy gives NaN for more than 13).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

EXACT_MAX = 50  # scipy: exact distribution up to 50 differences
FLIP_MAX = 13  # scipy: the sign-flip distribution (2^13 < 9,999 resamples) up to 13


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean ranks (1-based) of ``values`` and the sizes of their tie groups."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size)
    sizes = []
    i = 0
    while i < values.size:
        j = i
        while j + 1 < values.size and values[order[j + 1]] == values[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        sizes.append(j - i + 1)
        i = j + 1
    return ranks, np.array(sizes, dtype=np.float64)


def signed_rank_counts(m: int) -> np.ndarray:
    """``counts[k]``: the number of subsets of ``{1..m}`` whose sum is ``k`` (``k = 0..m(m+1)/2``)."""
    counts = np.zeros(m * (m + 1) // 2 + 1)
    counts[0] = 1.0
    for r in range(1, m + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return counts


def _exact_p(r_plus: float, m: int) -> float:
    pmf = signed_rank_counts(m) / 2.0 ** m
    sf = float(pmf[int(math.floor(r_plus)):].sum())
    cdf = float(pmf[:int(math.ceil(r_plus)) + 1].sum())
    return min(1.0, 2 * min(sf, cdf))


def _flip_p(d: np.ndarray, ranks: np.ndarray, r_plus: float) -> float:
    """The sign-flip p-value over all ``2^n`` assignments (zeros stay zero, ranks fixed)."""
    nonzero = d != 0
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    null = ((signs * d[None, :] > 0) & nonzero[None, :]).astype(np.float64) @ ranks
    gamma = abs(100 * np.finfo(np.float64).eps * r_plus)
    less = np.count_nonzero(null <= r_plus + gamma) / null.size
    greater = np.count_nonzero(null >= r_plus - gamma) / null.size
    return min(1.0, 2 * min(less, greater))


def _normal_p(r_plus: float, m: int, ties: np.ndarray) -> float:
    from scipy import stats

    var = (m * (m + 1) * (2 * m + 1) - float(np.sum(ties ** 3 - ties)) / 2) / 24
    z = (r_plus - m * (m + 1) / 4) / math.sqrt(var)
    return float(min(1.0, 2 * stats.norm.sf(abs(z))))


def wilcoxon_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the paired differences ``a - b`` (as
    ``scipy.stats.wilcoxon(a, b).pvalue``; 1 when every difference is zero)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError("expected two paired, non-empty 1-d sequences")
    if not np.all(np.isfinite(d)):
        raise ValueError("per-query values must be finite (fill or drop missing values first)")
    nonzero = d[d != 0]
    m = nonzero.size
    if m == 0:
        return 1.0
    ranks, ties = _ranks(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    zeros = d.size - m
    has_ties = bool(np.any(ties > 1))
    if d.size <= EXACT_MAX and not has_ties and not zeros:
        return _exact_p(r_plus, m)
    if d.size <= FLIP_MAX:
        full = np.zeros(d.size)
        full[d != 0] = ranks
        return _flip_p(d, full, r_plus)
    return _normal_p(r_plus, m, ties)
