"""The comparisons a whole table makes, as one flat list, corrected over the family the user chose.

* **Pairs** (``pairs``): ``baseline`` (each system against the baseline: ``a`` the baseline, ``b`` the
  system) or ``all`` (every pair ``i < j`` of the systems in the order given, ``a`` the earlier).
* **Test** (``test``): the p-value that is corrected: ``randomization`` (paired sign-flip, as the classic
  table), ``t`` (paired t-test), ``wilcoxon`` (signed-rank, as ``scipy.stats.wilcoxon``), ``bootstrap``
  (paired bootstrap, shift method). ``delta = mean_b - mean_a`` with its 95% t interval.
* **Family** (``family``): ``task-metric`` (one family per task and metric, as the classic table; the
  means over tasks of each metric one more) or ``all`` (every comparison printed: tasks x metrics x pairs,
  and the means over tasks when asked); corrected by ``correction`` (:mod:`harness.compare.corrections`).
* **Equivalence** (``equivalence``): a TOST p-value per comparison (:mod:`harness.compare.equivalence`),
  corrected as its own family of the same shape.
* **Ranks**: every system's rank with a bootstrap interval per task and metric (:mod:`harness.compare.ranks`).
* **Across tasks** (``across_tasks``): :mod:`harness.compare.across`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from harness.compare.corrections import CORRECTIONS, DESCRIPTIONS, adjust
from harness.compare.equivalence import tost
from harness.compare.paired_bootstrap import shift_p
from harness.compare.ranks import RankInterval, intervals_from_means, lower_is_better
from harness.compare.stats import paired_summary
from harness.concepts.errors import HarnessError
from harness.metrics.bootstrap import DEFAULT_RESAMPLES, bootstrap_means

FAMILIES = ("task-metric", "all")
PAIRS = ("baseline", "all")
TESTS = ("randomization", "t", "wilcoxon", "bootstrap")
#: the ``task`` of the rows comparing the means over tasks
ACROSS = "(mean over tasks)"
TEST_NAMES = MappingProxyType({
    "randomization": "paired randomization (sign-flip) test on the mean difference, p = (c+1)/(B+1)",
    "t": "paired t-test (scipy.stats.ttest_rel)",
    "wilcoxon": "Wilcoxon signed-rank test (scipy.stats.wilcoxon defaults: zeros dropped, no continuity "
                "correction, exact for n <= 50 without ties or zeros)",
    "bootstrap": "paired bootstrap test of the mean difference (shift method: |delta* - delta| >= |delta|), "
                 "p = (c+1)/(B+1)",
})


@dataclass(frozen=True)
class FamilyOptions:
    """What ``harness compare --family/--correction/--pairs/--test/--equivalence/--across-tasks`` asks."""

    family: str = "task-metric"
    correction: str = "holm"
    pairs: str = "baseline"
    test: str = "randomization"
    equivalence: float | None = None
    across_tasks: bool = False
    bootstrap: int = DEFAULT_RESAMPLES

    def __post_init__(self) -> None:
        for value, allowed, what in ((self.family, FAMILIES, "family"), (self.correction, CORRECTIONS, "correction"),
                                     (self.pairs, PAIRS, "pairs"), (self.test, TESTS, "test")):
            if value not in allowed:
                raise HarnessError(f"unknown {what} {value!r}: choose one of {', '.join(allowed)}")
        if self.equivalence is not None and not (0 < self.equivalence < float("inf")):
            raise HarnessError(f"the equivalence margin must be a positive number, not {self.equivalence!r}")
        if self.bootstrap < 1:
            raise HarnessError("the number of bootstrap resamples must be at least 1")


@dataclass
class PairComparison:
    """One row of ``comparisons``: ``b`` against ``a`` on one task (or the mean over tasks) and metric."""

    task: str
    metric: str
    a: str
    b: str
    mean_a: float
    mean_b: float
    delta: float
    ci: list[float]
    ci_method: str
    test: str
    p_value: float
    n: int
    scope: str = "task"  # "task", or "across-tasks" for the mean over tasks
    correction: str = "holm"
    p_adjusted: float = float("nan")
    family: str = ""
    family_size: int = 0
    significant: bool = False
    p_equivalence: float | None = None
    p_equivalence_adjusted: float | None = None
    equivalent: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # W/T/L (queries; tasks for the mean over tasks)


@dataclass
class RankRow:
    task: str
    metric: str
    system: str
    mean: float
    rank: float
    rank_ci: list[float]
    groups: list[str]


@dataclass
class FamilyResult:
    options: FamilyOptions
    description: str
    family_size: int
    comparisons: list[PairComparison]
    ranks: list[RankRow]
    settings: dict[str, Any]


@dataclass
class Table:
    """One task's values of one metric: ``x[q, s]`` for the systems in the order given."""

    task: str
    metric: str
    systems: list[str]
    x: np.ndarray


def pairs_of(systems: list[str], baseline: str, pairs: str) -> list[tuple[str, str]]:
    """``(a, b)`` pairs: each system against the baseline, or every ``i < j`` in the order given."""
    if pairs == "baseline":
        return [(baseline, s) for s in systems if s != baseline]
    return [(systems[i], systems[j]) for i in range(len(systems)) for j in range(i + 1, len(systems))]


def rank_rows(task: str, metric: str, intervals: list[RankInterval]) -> list[RankRow]:
    return [RankRow(task, metric, r.system, r.mean, r.rank, [r.low, r.high], r.groups) for r in intervals]


def _p_values(t: Table, pairs: list[tuple[str, str]], options: FamilyOptions, boot: np.ndarray,
              p_test: Callable[[np.ndarray, np.ndarray], float]) -> list[float]:
    out = []
    for a, b in pairs:
        i, j = t.systems.index(a), t.systems.index(b)
        if options.test == "bootstrap":
            delta = float(t.x[:, j].mean() - t.x[:, i].mean())
            out.append(shift_p(boot[:, j] - boot[:, i] - delta, delta))
        else:
            out.append(p_test(t.x[:, i], t.x[:, j]))
    return out


def task_rows(t: Table, pairs: list[tuple[str, str]], options: FamilyOptions,
              p_test: Callable[[np.ndarray, np.ndarray], float],
              seed: int) -> tuple[list[PairComparison], list[RankRow]]:
    """The comparisons and ranks of one task and metric."""
    boot = bootstrap_means([t.x], options.bootstrap, seed)[:, 0, :]
    ranks = intervals_from_means(t.systems, t.x.mean(axis=0), boot, lower_is_better(t.metric))
    rows = []
    for (a, b), p in zip(pairs, _p_values(t, pairs, options, boot, p_test)):
        xa, xb = t.x[:, t.systems.index(a)], t.x[:, t.systems.index(b)]
        s = paired_summary(xb, xa)
        row = PairComparison(t.task, t.metric, a, b, s.mean_b, s.mean_a, s.diff, [s.ci_low, s.ci_high],
                             "95% t interval", options.test, p, s.n,
                             extra={"wins": s.wins, "ties": s.ties, "losses": s.losses})
        if options.equivalence is not None:
            row.p_equivalence = tost(xa, xb, options.equivalence)
        rows.append(row)
    return rows, rank_rows(t.task, t.metric, ranks)


def family_key(row: PairComparison, family: str) -> str:
    """The family a row belongs to: ``all``, or its task and metric."""
    return "all" if family == "all" else f"{row.task} / {row.metric}"


def correct(rows: list[PairComparison], options: FamilyOptions, alpha: float) -> None:
    """Adjust each family's p-values (and, apart, its equivalence p-values) in place."""
    families: dict[str, list[PairComparison]] = {}
    for r in rows:
        families.setdefault(family_key(r, options.family), []).append(r)
    for key, members in families.items():
        adjusted = adjust([r.p_value for r in members], options.correction)
        for r, p in zip(members, adjusted):
            r.correction, r.p_adjusted, r.family, r.family_size = options.correction, p, key, len(members)
            r.significant = bool(p <= alpha)
        if options.equivalence is not None:
            eq = adjust([np.nan if r.p_equivalence is None else r.p_equivalence for r in members], options.correction)
            for r, p in zip(members, eq):
                r.p_equivalence_adjusted = p
                r.equivalent = bool(p <= alpha)


def describe(options: FamilyOptions, n_pairs: int, size: int) -> str:
    """The family in words, with its size."""
    across = " and the means over tasks" if options.across_tasks else ""
    if options.family == "all":
        return f"every comparison printed (tasks x metrics x pairs{across}): one family of {size}"
    return (f"the {n_pairs} comparison(s) of each task and metric{' (and of each mean over tasks)' if across else ''}"
            f": families of {size}")


def family_settings(options: FamilyOptions, permutations: int, seed: int, alpha: float) -> dict[str, Any]:
    """The ``family`` block of the JSON: what was tested, corrected and resampled."""
    return {"scope": options.family, "correction": options.correction,
            "correction_method": DESCRIPTIONS[options.correction], "pairs": options.pairs, "test": options.test,
            "test_method": TEST_NAMES[options.test], "alpha": alpha, "permutations": permutations,
            "bootstrap": options.bootstrap, "seed": seed, "equivalence_margin": options.equivalence,
            "equivalence_method": None if options.equivalence is None else
            "TOST (Schuirmann 1987): the larger of the two one-sided paired t-tests against -margin and +margin",
            "across_tasks": options.across_tasks,
            "ranks": "rank by mean (1 = best, ties by mean rank), 95% bootstrap percentile interval over resampled "
                     "queries; groups: maximal runs (in rank order) of systems whose rank intervals pairwise overlap"}


def row_dict(row: PairComparison) -> dict[str, Any]:
    """A row of ``comparisons`` in the JSON (``p_equivalence`` only when a margin was given)."""
    out = {k: getattr(row, k) for k in ("task", "metric", "a", "b", "mean_a", "mean_b", "delta", "ci", "ci_method",
                                        "test", "p_value", "correction", "p_adjusted", "n", "scope", "family",
                                        "family_size", "significant")}
    if row.p_equivalence is not None or row.p_equivalence_adjusted is not None:
        out.update(p_equivalence=row.p_equivalence, p_equivalence_adjusted=row.p_equivalence_adjusted,
                   equivalent=row.equivalent)
    return {**out, **row.extra}


def family_dict(fr: FamilyResult) -> dict[str, Any]:
    """The keys ``harness compare --format json`` adds: ``family``, ``family_size``, ``comparisons``, ``ranks``."""
    return {"family": {**fr.settings, "description": fr.description, "size": fr.family_size},
            "family_size": fr.family_size, "comparisons": [row_dict(r) for r in fr.comparisons],
            "ranks": [dict(r.__dict__) for r in fr.ranks]}
