"""One run scored under one set of qrels by measure names, with no registry: the standard measures
(:class:`~harness.metrics.standard.StandardMetric`, trec_eval's values) and ``Hole@k``. What re-scoring
stored runs under other qrels needs (``harness compare --qrels``, ``harness judge rankcorr``); a plugin's
metric needs its evaluation and is refused here with a message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError
from harness.concepts.protocols import MetricInput, MetricResult
from harness.concepts.qrels import Qrels
from harness.concepts.run import Run
from harness.metrics.hole import parse_hole
from harness.metrics.standard import StandardMetric


def measures(names: Sequence[str]) -> list[Any]:
    """The metric objects for ``names``: ``Hole@k[:scope=corpus]``, else a standard measure (all standard
    ones computed together); a name that is neither raises :class:`HarnessError`."""
    holes, standard = [], []
    for name in dict.fromkeys(n.strip() for n in names):
        hole = parse_hole(name)
        if hole is not None:
            holes.append(hole)
            continue
        try:
            standard.append(StandardMetric(name=name))
        except HarnessError as exc:
            raise HarnessError(f"{exc}; only standard measures (nDCG@10, MAP, ...) and Hole@k can be computed "
                               "from a stored run under other qrels") from None
    merged = standard[0] if standard else None
    for other in standard[1:]:
        merged = merged.merge(other)
    return ([merged] if merged is not None else []) + holes


def score_run(run: Run, qrels: Qrels, names: Sequence[str]) -> MetricResult:
    """Each measure of ``names`` on ``run`` under ``qrels`` (standard measures: mean over the run's queries
    that have qrels, as trec_eval), merged into one :class:`MetricResult`."""
    ds = Dataset.single("qrels", {}, {}, qrels)
    out = MetricResult({})
    for metric in measures(names):
        res = metric.compute(MetricInput({"default": run}, {"default": qrels}, ds))
        out.aggregate.update(res.aggregate)
        for q, row in res.per_query.items():
            out.per_query.setdefault(q, {}).update(row)
    return out
