"""``harness judge rankcorr``: does the systems' order survive other qrels? Kendall's tau-b
(``scipy.stats.kendalltau``, its default variant, with its p-value) between the systems' scores by one
metric under the task's qrels and under a qrels file (LLM-filled ones, say), the systems that change places
named, and how much of each figure rests on unjudged documents (``Hole@k`` under both, for a metric with a
cutoff)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.assessment.fill import task_runs
from harness.assessment.task_data import TaskData
from harness.concepts.errors import HarnessError
from harness.concepts.qrels import Qrels
from harness.concepts.run import Run
from harness.formats.qrels_file import read_qrels_file
from harness.metrics.hole import parse_hole
from harness.metrics.run_scores import measures, score_run
from harness.metrics.standard import parse_measure


def ranks(scores: Sequence[float], names: Sequence[str]) -> list[int]:
    """Each system's place (1 = best) when ordered by score, highest first, ties by name."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], names[i]))
    place = [0] * len(scores)
    for rank, i in enumerate(order, 1):
        place[i] = rank
    return place


def _hole_name(metric: str) -> str | None:
    """``Hole@k`` for a standard measure cut at k (``nDCG@10``), else None."""
    (measure,) = measures([metric])
    if parse_hole(metric) is not None or len(measure.names) != 1:
        return None
    cutoff = dict(parse_measure(metric).params).get("cutoff")
    return f"Hole@{cutoff}" if cutoff else None


def split_named(args: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """Results folders as given (``NAME=DIR`` names one; a path that exists is a path) -> the folders and
    their names (None when none is named: the folders' names)."""
    paths, names = [], []
    for arg in args:
        name, sep, path = arg.partition("=")
        named = bool(sep and name and path and not Path(arg).exists())
        paths.append(path if named else arg)
        names.append(name if named else Path(arg).name)
    return paths, (names if any("=" in a and not Path(a).exists() for a in args) else None)


def unique_labels(folders: Sequence[str], names: Sequence[str] | None) -> list[str]:
    """The systems' names: ``names`` first, then folder names; repeats made unique (``bm25``, ``bm25#2``)."""
    labels = list(names or []) + [Path(f).name for f in list(folders)[len(names or []):]]
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


def _value(run: Run, qrels: Qrels, names: list[str]) -> dict[str, float]:
    return score_run(run, qrels, names).aggregate


def rank_correlation(data: TaskData, folders: Sequence[str], qrels_file: str, metric: str = "nDCG@10",
                     names: Sequence[str] | None = None) -> dict[str, Any]:
    """tau, its p-value and each system's scores and places under both qrels (module docstring)."""
    if len(folders) < 2:
        raise HarnessError("rankcorr orders systems: give at least two results folders")
    other, identity = read_qrels_file(qrels_file)
    runs = task_runs(data, folders)
    labels = unique_labels(folders, names)
    hole = _hole_name(metric)
    asked = [metric] + ([hole] if hole else [])
    under_task = [_value(run, data.qrels, asked) for run in runs.values()]
    under_file = [_value(run, other, asked) for run in runs.values()]
    a, b = [v[metric] for v in under_task], [v[metric] for v in under_file]
    from scipy.stats import kendalltau  # lazy: scipy only once the figures are computed

    res = kendalltau(a, b)
    tau, p = float(res.statistic), float(res.pvalue)
    ra, rb = ranks(a, labels), ranks(b, labels)
    systems = [{"name": n, "path": str(f), metric: {"task_qrels": x, "qrels_file": y}, "rank_task_qrels": i,
                "rank_qrels_file": j, "moved": i != j,
                **({hole: {"task_qrels": ht[hole], "qrels_file": hf[hole]}} if hole else {})}
               for n, f, x, y, i, j, ht, hf in zip(labels, runs, a, b, ra, rb, under_task, under_file)]
    return {"metric": metric, "tau": None if math.isnan(tau) else tau, "p_value": None if math.isnan(p) else p,
            "variant": "tau-b (scipy.stats.kendalltau)", "n_systems": len(systems),
            "changed_places": [s["name"] for s in systems if s["moved"]], "systems": systems,
            "task": data.describe(), "qrels_file": identity}
