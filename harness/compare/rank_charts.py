"""The report's rank-interval charts: per task and metric, and for the mean over tasks, each system's
rank with its 95% bootstrap interval (:mod:`harness.compare.ranks`, :mod:`harness.compare.across`),
sorted best first; the geometry from :func:`harness.compare.svg.rank_chart`."""

from __future__ import annotations

from typing import Any

from harness.compare import svg
from harness.compare.across import across_ranks
from harness.compare.family import Table
from harness.compare.ranks import RankInterval, lower_is_better, rank_intervals
from harness.compare.runs import System, align, common_metrics

#: the most metrics charted per task (as the report's bar charts)
MAX_RANK_METRICS = 6


def _table(systems: list[System], task: str, metric: str, fill: str) -> Table:
    import numpy as np

    al = align(systems, task, metric, fill)
    return Table(task, metric, list(al.systems), np.array(al.values, dtype=np.float64).reshape(-1, len(systems)))


def _chart(title: str, task: str, metric: str, ranks: list[RankInterval], colors: dict[str, str],
           resamples: int, n: int) -> dict[str, Any]:
    rows = [{"system": r.system, "rank": r.rank, "low": r.low, "high": r.high, "mean": r.mean, "groups": r.groups,
             "color": colors[r.system]} for r in ranks]
    return {"title": title, "task": task, "metric": metric, "chart": svg.rank_chart(rows, len(ranks)),
            "note": f"rank 1 = best ({'lowest' if lower_is_better(metric) else 'highest'} mean); the line: the 95% "
                    f"interval of the rank over {resamples} bootstrap resamples of the {n} queries (paired); systems "
                    "sharing a letter have overlapping intervals (cannot be told apart)",
            "rows": [{k: v for k, v in r.items() if k != "color"} for r in rows]}


def task_rank_charts(systems: list[System], task: str, metrics: list[str], *, fill: str, resamples: int,
                     seed: int) -> list[dict[str, Any]]:
    """One chart per metric (the first :data:`MAX_RANK_METRICS`) of ``task``; none for a single system."""
    if len(systems) < 2:
        return []
    colors = {s.name: svg.color(i) for i, s in enumerate(systems)}
    out = []
    for m in metrics[:MAX_RANK_METRICS]:
        t = _table(systems, task, m, fill)
        if t.x.shape[0] == 0:
            continue
        ranks = rank_intervals(t.x, t.systems, resamples=resamples, seed=seed, lower_is_better=lower_is_better(m))
        out.append(_chart(f"{task}: rank by {m}", task, m, ranks, colors, resamples, t.x.shape[0]))
    return out


def across_rank_charts(systems: list[System], tasks: list[str], *, fill: str, resamples: int,
                       seed: int) -> list[dict[str, Any]]:
    """One chart per metric every task has per-query values of: ranks by the mean over the tasks
    (each weighted equally; queries resampled within each task)."""
    if len(systems) < 2 or len(tasks) < 2:
        return []
    per_task = [common_metrics(systems, t) for t in tasks]
    shared = [m for m in per_task[0] if all(m in ms for ms in per_task[1:])]
    colors = {s.name: svg.color(i) for i, s in enumerate(systems)}
    out = []
    for m in shared[:MAX_RANK_METRICS]:
        tables = [_table(systems, t, m, fill) for t in tasks]
        if any(t.x.shape[0] == 0 for t in tables):
            continue
        ranks = across_ranks(tables, m, resamples, seed)
        chart = _chart(f"rank by the mean of {m} over {len(tasks)} tasks", "(mean over tasks)", m, ranks, colors,
                       resamples, sum(t.x.shape[0] for t in tables))
        chart["note"] = chart["note"].replace("(paired)", "(paired), resampled within each task")
        out.append(chart)
    return out
