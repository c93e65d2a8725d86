"""Run the tests over systems x tasks x metrics; the result is plain data (``as_dict`` is the JSON)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.compare.family import FamilyOptions, FamilyResult, Table, family_dict
from harness.compare.family_analysis import analyse
from harness.compare.runs import Aligned, System, align, common_metrics, common_tasks
from harness.compare.stats import holm, paired_summary, paired_t_test, randomization_test, randomized_tukey_hsd
from harness.concepts.errors import HarnessError

FAMILY = "systems vs the baseline, per task and metric"


@dataclass
class Comparison:
    system: str
    baseline: str
    n: int
    mean: float
    baseline_mean: float
    diff: float
    ci_low: float
    ci_high: float
    effect_size: float
    wins: int
    ties: int
    losses: int
    p_randomization: float
    p_t: float
    t: float
    p_randomization_holm: float = float("nan")
    p_t_holm: float = float("nan")
    significant: bool = False


@dataclass
class MetricComparison:
    task: str
    metric: str
    systems: list[str]
    means: dict[str, float]
    n_queries: int
    note: str
    dropped: list[str]
    comparisons: list[Comparison]
    tukey: dict[str, dict[str, float]] | None = None  # system -> system -> p
    # system -> the uncertainty its results report for this metric (results.json "uncertainty"), if any
    uncertainty: dict[str, dict[str, Any]] = field(default_factory=dict)
    # leaderboard system (an MTEB result file) -> its value: no per-query scores, so no test
    leaderboard: dict[str, float] = field(default_factory=dict)


@dataclass
class CompareResult:
    baseline: str
    systems: list[dict[str, str]]
    settings: dict[str, Any]
    results: list[MetricComparison] = field(default_factory=list)
    #: the family-wise analysis (``compare(..., options=FamilyOptions(...))``); None for the classic output
    family: FamilyResult | None = None

    def as_dict(self) -> dict[str, Any]:
        def clean(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            if hasattr(v, "__dataclass_fields__"):
                return clean(dict(v.__dict__))
            return v

        out = {"baseline": self.baseline, "systems": self.systems, "settings": self.settings, "results": self.results}
        if self.family is not None:
            out.update(family_dict(self.family))
        return clean(out)

    def lookup(self, task: str, metric: str) -> MetricComparison | None:
        for r in self.results:
            if r.task == task and r.metric == metric:
                return r
        return None


def compare(systems: list[System], *, baseline: str | None = None, metrics: list[str] | None = None,
            tasks: list[str] | None = None, permutations: int = 10_000, seed: int = 0, alpha: float = 0.05,
            fill: str = "error", workers: int = 1, tukey: bool = True,
            options: FamilyOptions | None = None) -> CompareResult:
    """Compare every system with the baseline (default: the first) on each shared task and metric; with
    ``options``, also the family-wise analysis (:mod:`harness.compare.family`) in ``result.family``."""
    if len(systems) < 2:
        raise HarnessError("compare needs at least two results folders")
    boards = [s for s in systems if s.leaderboard]
    systems = [s for s in systems if not s.leaderboard]
    names = [s.name for s in systems]
    base = baseline or names[0]
    _check_baseline(base, names, boards)
    shared = _shared_tasks(systems + boards, tasks)
    ordered = [systems[names.index(base)]] + [s for s in systems if s.name != base]
    out = CompareResult(base, [{"name": s.name, "path": str(s.path), "components": s.label,
                                **({"merged": [str(m) for m in s.merged]} if s.merged else {})} for s in ordered]
                        + [{"name": b.name, "path": str(b.path), "components": b.label, "leaderboard": True}
                           for b in boards], _settings(permutations, seed, alpha, fill, len(systems) > 2))
    tables: list[Table] = []
    for task in shared:
        uncertainty = [s.tasks[task].uncertainty for s in ordered]
        for metric in _chosen_metrics(ordered, task, metrics, single_task=len(shared) == 1):
            al = align(ordered, task, metric, fill)
            mc = _compare_metric(al, permutations, seed, alpha, workers, tukey and len(ordered) > 2)
            tables.append(_table(al, names))
            mc.uncertainty = {s.name: u.to_dict() for s, us in zip(ordered, uncertainty)
                              if (u := us.get(metric)) is not None}
            mc.leaderboard = {b.name: v for b in boards if (v := b.tasks[task].metrics.get(metric)) is not None}
            out.results.append(mc)
    if metrics and not out.results:
        raise HarnessError(f"none of the metrics {', '.join(metrics)} has per-query values in every result")
    if not out.results:  # an empty comparison is no answer: say so instead of printing a bare footer
        raise HarnessError(f"no metric has per-query values in every result for {', '.join(shared)} "
                           "(per_query.jsonl of each folder)")
    if options is not None:
        out.family = analyse(tables, names, base, options, permutations=permutations, seed=seed, alpha=alpha,
                             workers=workers)
    return out


def _table(al: Aligned, names: list[str]) -> Table:
    """The aligned values with the systems' columns in the order given (the baseline first in ``al``)."""
    x = np.array(al.values, dtype=np.float64).reshape(len(al.values), len(al.systems))
    return Table(al.task, al.metric, list(names), x[:, [al.systems.index(n) for n in names]])


def _check_baseline(base: str, names: list[str], boards: list[System]) -> None:
    """The baseline must be a results folder among the systems (not an MTEB result file)."""
    if base in [b.name for b in boards]:
        raise HarnessError(f"baseline {base!r} is an MTEB result file, which has no per-query scores: "
                           "choose a results folder")
    if base not in names:
        raise HarnessError(f"baseline {base!r} is not one of the systems: {', '.join(names)}")


def _shared_tasks(systems: list[System], tasks: list[str] | None) -> list[str]:
    """The tasks every system has, restricted to ``tasks`` when given (each of which must be shared)."""
    shared = common_tasks(systems)
    if not shared:
        raise HarnessError("the results share no task: compare systems evaluated on the same task")
    if tasks:
        unknown = [t for t in tasks if t not in shared]
        if unknown:
            raise HarnessError(f"task(s) {', '.join(unknown)} not shared by every system; shared: {', '.join(shared)}")
        shared = [t for t in shared if t in tasks]
    return shared


def _settings(permutations: int, seed: int, alpha: float, fill: str, several: bool) -> dict[str, Any]:
    """The settings block of a comparison: which tests, corrections and intervals were used."""
    return {
        "test": "two-sided paired randomization (sign-flip) test on the mean difference, p = (c+1)/(B+1)",
        "permutations": permutations, "seed": seed, "alpha": alpha,
        "correction": "Holm", "family": FAMILY,
        "interval": "95% t interval of the mean per-query difference",
        "effect_size": "Cohen's d_z (mean difference / sd of differences)",
        "tukey": "randomized Tukey HSD (each query's scores shuffled across systems)" if several else None,
        "fill": fill,
    }


def _chosen_metrics(ordered: list[System], task: str, metrics: list[str] | None, *,
                    single_task: bool) -> list[str]:
    """The metrics to compare on ``task``: those requested (all available by default) that every system has;
    a missing one is an error only when a single task is compared."""
    available = common_metrics(ordered, task)
    if not metrics:
        return available
    missing = [m for m in metrics if m not in available]
    if missing and single_task:
        raise HarnessError(f"{task}: metric(s) {', '.join(missing)} lack per-query values in some results; "
                           f"available: {', '.join(available)}")
    return [m for m in metrics if m in available]


def _compare_metric(al: Aligned, permutations: int, seed: int, alpha: float, workers: int,
                    tukey: bool) -> MetricComparison:
    if not al.values:
        raise HarnessError(f"{al.task} / {al.metric}: no query left to compare")
    x = np.array(al.values)
    base = x[:, 0]
    comps = []
    for i, name in enumerate(al.systems[1:], start=1):
        s = paired_summary(x[:, i], base)
        t = paired_t_test(x[:, i], base)
        p = randomization_test(x[:, i], base, permutations=permutations, seed=seed, workers=workers)
        comps.append(Comparison(name, al.systems[0], s.n, s.mean_a, s.mean_b, s.diff, s.ci_low, s.ci_high,
                                s.effect_size, s.wins, s.ties, s.losses, p, t.p, t.t))
    for key in ("p_randomization", "p_t"):
        vals = [getattr(c, key) for c in comps]
        finite = [v if v == v else 1.0 for v in vals]
        for c, adj, v in zip(comps, holm(finite), vals):
            setattr(c, key + "_holm", adj if v == v else float("nan"))
    for c in comps:
        c.significant = c.p_randomization_holm <= alpha
    tk = None
    if tukey:
        p = randomized_tukey_hsd(x, permutations=permutations, seed=seed, workers=workers)
        tk = {a: {b: float(p[i, j]) for j, b in enumerate(al.systems) if j != i} for i, a in enumerate(al.systems)}
    means = {name: float(x[:, i].mean()) for i, name in enumerate(al.systems)}
    return MetricComparison(al.task, al.metric, al.systems, means, len(al.query_ids), al.note(), al.dropped,
                            comps, tk)
