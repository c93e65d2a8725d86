"""The mean over tasks ("mean over BEIR"): each task weighted equally, compared with an interval and a
p-value from a **stratified** bootstrap, queries resampled within each task, paired across systems.

For systems ``a``, ``b`` and a metric every task has: ``M_s = (1/T) sum_t mean_q x[t, q, s]`` and
``delta = M_b - M_a``. Each of the ``B`` resamples draws every task's queries with replacement (the
convention of :mod:`harness.metrics.bootstrap`, one stratum per task, in task order) and recomputes
``delta*``; the interval is the 2.5th and 97.5th percentiles of ``delta*``; the p-value is the shift
method of the per-task bootstrap test, ``c`` counting ``|delta* - delta| >= |delta|``,
``p = (c + 1) / (B + 1)``; with a margin, a bootstrap TOST (:func:`harness.compare.equivalence.bootstrap_tost`).
The systems' ranks by ``M_s`` get their intervals from the same resamples. After the correction, each
row counts the tasks where ``b`` is significantly higher (a win), significantly lower (a loss) or neither
(a tie) than ``a`` on that metric.
"""

from __future__ import annotations

import numpy as np

from harness.compare.equivalence import bootstrap_tost
from harness.compare.family import ACROSS, FamilyOptions, PairComparison, RankRow, Table, rank_rows
from harness.compare.paired_bootstrap import shift_p
from harness.compare.ranks import RankInterval, intervals_from_means, lower_is_better
from harness.metrics.bootstrap import bootstrap_means, percentile_interval


def across_metrics(tables: list[Table]) -> list[str]:
    """The metrics compared on every task, in first-seen order."""
    tasks = list(dict.fromkeys(t.task for t in tables))
    have = {(t.task, t.metric) for t in tables}
    metrics = list(dict.fromkeys(t.metric for t in tables))
    return [m for m in metrics if all((task, m) in have for task in tasks)]


def mean_over_tasks(tables: list[Table], resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The systems' means over tasks (``k``) and their stratified bootstrap resamples (``B x k``)."""
    boot = bootstrap_means([t.x for t in tables], resamples, seed).mean(axis=1)
    return np.mean([t.x.mean(axis=0) for t in tables], axis=0), boot


def across_ranks(tables: list[Table], metric: str, resamples: int, seed: int) -> list[RankInterval]:
    """The systems' ranks by their mean over tasks of ``metric``, with stratified bootstrap intervals."""
    observed, boot = mean_over_tasks(tables, resamples, seed)
    return intervals_from_means(tables[0].systems, observed, boot, lower_is_better(metric))


def across_rows(tables: list[Table], metric: str, pairs: list[tuple[str, str]], options: FamilyOptions,
                seed: int) -> tuple[list[PairComparison], list[RankRow]]:
    """The comparisons and ranks of the mean over tasks of ``metric`` (``tables``: one per task)."""
    systems = tables[0].systems
    observed, boot = mean_over_tasks(tables, options.bootstrap, seed)
    ranks = intervals_from_means(systems, observed, boot, lower_is_better(metric))
    n = sum(t.x.shape[0] for t in tables)
    rows = []
    for a, b in pairs:
        i, j = systems.index(a), systems.index(b)
        delta = float(observed[j] - observed[i])
        star = boot[:, j] - boot[:, i]
        row = PairComparison(ACROSS, metric, a, b, float(observed[i]), float(observed[j]), delta,
                             list(percentile_interval(star)), "95% stratified bootstrap percentile interval",
                             "stratified bootstrap", shift_p(star - delta, delta), n, scope="across-tasks",
                             extra={"tasks": [t.task for t in tables]})
        if options.equivalence is not None:
            row.p_equivalence = bootstrap_tost(star - delta, delta, options.equivalence)
        rows.append(row)
    return rows, rank_rows(ACROSS, metric, ranks)


def count_tasks(rows: list[PairComparison]) -> None:
    """Each across-tasks row's per-task wins, ties and losses of ``b`` after the correction."""
    per_task = {(r.metric, r.a, r.b, r.task): r for r in rows if r.scope == "task"}
    for r in rows:
        if r.scope != "across-tasks":
            continue
        wins = ties = losses = 0
        for task in r.extra["tasks"]:
            t = per_task[(r.metric, r.a, r.b, task)]
            if t.significant and t.delta > 0:
                wins += 1
            elif t.significant and t.delta < 0:
                losses += 1
            else:
                ties += 1
        r.extra.update({"task_wins": wins, "task_ties": ties, "task_losses": losses})
