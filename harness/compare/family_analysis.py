"""Running the family-wise analysis of :mod:`harness.compare.family` over every task and metric compared
(called by :func:`harness.compare.compare` when it is given :class:`~harness.compare.family.FamilyOptions`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.compare.across import across_metrics, across_rows, count_tasks
from harness.compare.family import (
    FamilyOptions,
    FamilyResult,
    PairComparison,
    RankRow,
    Table,
    correct,
    describe,
    family_settings,
    pairs_of,
    task_rows,
)
from harness.compare.stats import paired_t_test, randomization_test
from harness.compare.wilcoxon import wilcoxon_test
from harness.concepts.errors import HarnessError


def _test(test: str, permutations: int, seed: int, workers: int) -> Callable[[np.ndarray, np.ndarray], float]:
    """``p(a, b)`` of the chosen per-task test on the differences ``b - a`` (the bootstrap test is
    computed from the shared resamples instead)."""
    tests: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
        "randomization": lambda a, b: randomization_test(b, a, permutations=permutations, seed=seed, workers=workers),
        "t": lambda a, b: paired_t_test(b, a).p,
        "wilcoxon": lambda a, b: wilcoxon_test(b, a),
    }
    return tests.get(test, lambda a, b: float("nan"))  # "bootstrap": from the resamples (family.task_rows)


def _across(tables: list[Table], pairs: list[tuple[str, str]], options: FamilyOptions,
            seed: int) -> tuple[list[PairComparison], list[RankRow]]:
    tasks = list(dict.fromkeys(t.task for t in tables))
    if len(tasks) < 2:
        raise HarnessError(f"--across-tasks compares means over two or more tasks; the systems share one "
                           f"compared task ({', '.join(tasks)})")
    metrics = across_metrics(tables)
    if not metrics:
        raise HarnessError(f"--across-tasks: no metric is compared on every task ({', '.join(tasks)}); "
                           "choose one with --metric")
    rows: list[PairComparison] = []
    ranks: list[RankRow] = []
    for m in metrics:
        r, k = across_rows([t for t in tables if t.metric == m], m, pairs, options, seed)
        rows += r
        ranks += k
    return rows, ranks


def analyse(tables: list[Table], systems: list[str], baseline: str, options: FamilyOptions, *, permutations: int,
            seed: int, alpha: float, workers: int = 1) -> FamilyResult:
    """Every pair's comparison on each table (task and metric), the ranks, the means over tasks when
    asked, corrected over the chosen family."""
    pairs = pairs_of(systems, baseline, options.pairs)
    if not pairs:
        raise HarnessError("no pair of systems to compare")
    p_test = _test(options.test, permutations, seed, workers)
    rows: list[PairComparison] = []
    ranks: list[RankRow] = []
    for t in tables:
        r, k = task_rows(t, pairs, options, p_test, seed)
        rows += r
        ranks += k
    if options.across_tasks:
        r, k = _across(tables, pairs, options, seed)
        rows += r
        ranks += k
    correct(rows, options, alpha)
    if options.across_tasks:
        count_tasks(rows)
    size = len(rows) if options.family == "all" else len(pairs)
    return FamilyResult(options, describe(options, len(pairs), size), size, rows, ranks,
                        family_settings(options, permutations, seed, alpha))
