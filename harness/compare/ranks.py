"""Rank intervals for leaderboards: each system's rank among the compared systems (1 = best) with a
bootstrap interval, and the groups of systems that cannot be told apart.

* The **rank** of a system is its rank by mean (highest first; lowest first for the metrics in
  :data:`LOWER_IS_BETTER`); tied means (within 1e-12, relative) share their mean rank
  (``scipy.stats.rankdata(..., "average")``).
* The **interval**: the queries are resampled ``B`` times, paired across systems (the convention of
  :mod:`harness.metrics.bootstrap`); in each resample every system is ranked by its resampled mean (ties
  by mean rank); the interval is the 2.5th and 97.5th percentiles of its ranks.
* The **groups** (a compact letter display): two systems *cannot be told apart* when their rank
  intervals overlap. Taking the systems in rank order, a group is a maximal run of consecutive systems
  that pairwise cannot be told apart (a run inside another is not listed); groups are lettered
  ``a, b, ...`` from the top, and a system may carry several letters. Two systems sharing no letter have
  disjoint rank intervals. This is a descriptive rule (no correction); a tested claim about a pair
  is ``--pairs all`` with a correction.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

from harness.compare.stats import TIE_TOL
from harness.metrics.bootstrap import DEFAULT_RESAMPLES, bootstrap_means, percentile_interval

#: metrics where a lower value is better (ranks, such as InfoSearch's gold-document ranks)
LOWER_IS_BETTER = frozenset({"R_ori", "R_ins", "R_rev", "gold-rank"})
#: families whose every cutoff is lower-is-better (``Hole@10``: the share of the top 10 without a judgment)
LOWER_IS_BETTER_FAMILIES = ("Hole@",)


def lower_is_better(metric: str) -> bool:
    """Whether a lower value of ``metric`` is better (rank 1 is the lowest mean)."""
    return metric in LOWER_IS_BETTER or metric.startswith(LOWER_IS_BETTER_FAMILIES)


#: means this close (relative) tie: rounding never splits two systems with the same per-query values
TIE = TIE_TOL


@dataclass
class RankInterval:
    system: str
    mean: float
    rank: float
    low: float
    high: float
    groups: list[str]


def average_ranks(means: np.ndarray, lower_is_better: bool = False) -> np.ndarray:
    """Ranks (1 = best) of each row's ``k`` means (a ``B x k`` or ``k`` array), ties by their mean rank;
    means within :data:`TIE` (relative) of each other tie."""
    m = np.atleast_2d(np.asarray(means, dtype=np.float64))
    if lower_is_better:
        m = -m
    gap = m[:, None, :] - m[:, :, None]  # [r, i, j]: mean_j - mean_i
    tol = TIE * np.maximum(1.0, np.maximum(np.abs(m[:, None, :]), np.abs(m[:, :, None])))
    better = (gap > tol).sum(axis=2)  # [r, i]: systems j with a higher mean than i
    equal = (np.abs(gap) <= tol).sum(axis=2) - 1
    ranks = 1.0 + better + equal / 2.0
    return ranks if np.ndim(means) == 2 else ranks[0]


def rank_groups(ranks: list[float], low: list[float], high: list[float]) -> list[list[int]]:
    """The groups (system indices, best first) of the module's rule from each system's rank and interval."""
    order = sorted(range(len(ranks)), key=lambda i: (ranks[i], i))

    def apart(i: int, j: int) -> bool:
        return high[i] < low[j] or high[j] < low[i]

    groups: list[list[int]] = []
    for s in range(len(order)):
        run = [order[s]]
        for nxt in order[s + 1:]:
            if any(apart(nxt, member) for member in run):
                break
            run.append(nxt)
        if not groups or not set(run) <= set(groups[-1]):
            groups.append(run)
    return groups


def letters(n: int) -> list[str]:
    """``a, b, ..., z, aa, ab, ...``: the names of ``n`` groups."""
    out = []
    for i in range(n):
        name = ""
        i += 1
        while i:
            i, r = divmod(i - 1, 26)
            name = string.ascii_lowercase[r] + name
        out.append(name)
    return out


def intervals_from_means(systems: list[str], observed: np.ndarray, resampled: np.ndarray,
                         lower_is_better: bool = False) -> list[RankInterval]:
    """Rank intervals from the observed means (``k``) and the resampled means (``B x k``)."""
    rank = average_ranks(observed, lower_is_better)
    boot = average_ranks(resampled, lower_is_better)
    bounds = [percentile_interval(boot[:, i]) for i in range(len(systems))]
    low, high = [b[0] for b in bounds], [b[1] for b in bounds]
    groups = rank_groups(list(rank), low, high)
    names = letters(len(groups))
    out = []
    for i, name in enumerate(systems):
        marks = [names[g] for g, members in enumerate(groups) if i in members]
        out.append(RankInterval(name, float(observed[i]), float(rank[i]), low[i], high[i], marks))
    return sorted(out, key=lambda r: (r.rank, systems.index(r.system)))


def rank_intervals(scores: np.ndarray, systems: list[str], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                   lower_is_better: bool = False) -> list[RankInterval]:
    """Each system's rank with its bootstrap interval and groups, best first, from a ``queries x systems``
    matrix of per-query values (columns named by ``systems``)."""
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(systems) or x.shape[0] == 0:
        raise ValueError("expected a non-empty queries x systems matrix, one column per system")
    means = bootstrap_means([x], resamples, seed)[:, 0, :]
    return intervals_from_means(systems, x.mean(axis=0), means, lower_is_better)
