"""The compare page's payload: per-query deltas, wins / ties / losses and the paired tests that
``harness compare`` computes (:func:`harness.compare.analysis.compare`, reused as is), and each run's
rank with its bootstrap interval per metric (:func:`harness.compare.ranks.rank_intervals`)."""

from __future__ import annotations

import math
from typing import Any

from harness.compare import compute_chart
from harness.compare.analysis import compare
from harness.compare.ranks import lower_is_better, rank_intervals
from harness.compare.runs import System, TaskResult, align
from harness.concepts.errors import HarnessError
from harness.view.catalog import Catalog, RunEntry, _member_task

#: resamples of the randomization test (``harness compare``'s default)
PERMUTATIONS = 10_000
#: a tie, as ``harness compare`` counts one
TIE = 1e-12
#: bootstrap resamples of the rank intervals (``harness compare``'s default)
BOOTSTRAP = 10_000


def _system(c: Catalog, r: RunEntry, name: str) -> System:
    task = _member_task(r) if r.suite else r.stored.task_name
    s = System(name, r.folder, r.stored)
    s.tasks[task] = TaskResult(task, r.folder, r.stored, r.per_query())
    return s


def compare_payload(c: Catalog, ids: list[str], permutations: int = PERMUTATIONS, seed: int = 0) -> dict[str, Any]:
    """Runs ``ids`` (the first is the baseline) of one task: the tests per metric, and per metric and
    system the per-query differences (system - baseline) sorted, with W/T/L."""
    if len(ids) < 2 or len(set(ids)) != len(ids):
        raise HarnessError("compare needs two or more different runs")
    runs = [c.get(i) for i in ids]
    if any(r.stored.is_suite for r in runs):
        raise HarnessError("compare a suite's members (its tasks), not the suite")
    names = [f"{r.id}: {r.label}" for r in runs]
    systems = [_system(c, r, n) for r, n in zip(runs, names)]
    tasks = {next(iter(s.tasks)) for s in systems}
    if len(tasks) != 1:
        raise HarnessError(f"the runs are of different tasks ({', '.join(sorted(tasks))}); compare runs of one task")
    res = compare(systems, permutations=permutations, seed=seed, fill="drop", tukey=len(systems) > 2)
    task = tasks.pop()
    deltas: dict[str, list[dict[str, Any]]] = {}
    for mc in res.results:
        base = systems[0].tasks[task].per_query
        per: list[dict[str, Any]] = []
        for s in systems[1:]:
            rows = s.tasks[task].per_query
            items = []
            for q, row in base.items():
                a, b = row.get(mc.metric), rows.get(q, {}).get(mc.metric)
                if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
                    continue
                items.append([q, a, b, b - a])
            items.sort(key=lambda x: (-x[3], x[0]))
            per.append({"system": s.name, "queries": items,
                        "wins": sum(1 for x in items if x[3] > TIE), "losses": sum(1 for x in items if x[3] < -TIE),
                        "ties": sum(1 for x in items if abs(x[3]) <= TIE)})
        deltas[mc.metric] = per
    ranks = {mc.metric: _ranks(systems, task, mc.metric, seed) for mc in res.results}
    shared = list(dict.fromkeys(mc.metric for mc in res.results))
    return {"ids": ids, "names": names, "task": task, "comparison": res.as_dict(), "deltas": deltas, "ranks": ranks,
            "rank_method": f"rank 1 = best by mean; 95% interval over {BOOTSTRAP} bootstrap resamples of the queries "
                           f"(paired), seed {seed}; runs sharing a letter have overlapping intervals",
            "compute": compute_chart.for_systems(systems, task, shared)}  # effectiveness against compute


def _ranks(systems: list[System], task: str, metric: str, seed: int) -> list[dict[str, Any]]:
    """Each run's rank on ``metric`` with its 95% bootstrap interval and groups, best first."""
    import numpy as np

    al = align(systems, task, metric, "drop")
    x = np.array(al.values, dtype=np.float64).reshape(-1, len(systems))
    out = rank_intervals(x, al.systems, resamples=BOOTSTRAP, seed=seed, lower_is_better=lower_is_better(metric))
    return [{"system": r.system, "mean": r.mean, "rank": r.rank, "rank_ci": [r.low, r.high], "groups": r.groups}
            for r in out]
