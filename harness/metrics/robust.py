"""Robustness@k (InstructIR, Oh et al. 2024, arXiv 2402.14334): how well a retriever holds up across
the instruction variants of one base query, the lowest of their nDCG@k, averaged over base queries.

One implementation for every plugin that reports it (InstructIR, InfoSearch). Per group of queries
(one base query's variants): the **minimum** per-query nDCG@k (pytrec_eval ``ndcg_cut_k``); then the
plain mean of the minima over groups. The sources differ only in how they form groups:

- the authors (kaistAI/InstructIR ``eval/robust_eval.py::robustness_evaluate``, ``type='query'``): by the
  query text after ``[SEP]`` (the base query) -- :data:`GROUPINGS` ``"text"`` (``Query.text``);
- MTEB (``mteb/_evaluators/retrieval_metrics.py::robustness_at_10``): by ``query_id.split("_")[0]``
  (``1078446_3`` -> ``1078446``) -- ``"id"``;
- InfoSearch: by ``meta["group"]``, else the query text -- ``"meta"``.

Queries scored are those pytrec_eval scores (in both run and qrels), as the authors' code does
(MTEB fails on a judged query absent from the run). The authors' micro mean
(``cluster_NDCG@k_avg``) is the plain nDCG@k mean over the same queries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from harness.concepts.errors import HarnessError
from harness.concepts.protocols import MetricInput, MetricResult
from harness.metrics.standard import StandardMetric

GROUPINGS = ("id", "text", "meta")


def id_group(qid: str) -> str:
    """MTEB's group of a query id: the part before the first ``_`` (``1078446_3`` -> ``1078446``)."""
    return qid.split("_")[0]


def robustness(per_query: Mapping[str, float],
               group: Mapping[str, str] | Callable[[str], str]) -> tuple[float, dict[str, float]]:
    """``(Robustness, {group: its minimum})``: the mean over groups of the lowest value in each.
    ``per_query``: ``{qid: nDCG@k}`` of the scored queries; ``group``: each query's group, a mapping or
    a function of the query id (:func:`id_group` is MTEB's). No query: ``nan``."""
    of = group.__getitem__ if isinstance(group, Mapping) else group
    minima: dict[str, float] = {}
    for qid, value in per_query.items():
        key = of(qid)
        minima[key] = value if key not in minima else min(minima[key], value)
    return (sum(minima.values()) / len(minima) if minima else math.nan), minima


class Robustness:
    """Robustness@k as a per-mode metric: nDCG@k per query (:class:`StandardMetric`, pytrec_eval), then
    :func:`robustness` over groups formed by ``group`` (:data:`GROUPINGS`: ``"id"`` MTEB's id prefix,
    ``"text"`` the query text (the authors'), ``"meta"`` ``meta["group"]`` else the text). ``key``: the
    result key (default ``Robustness@k``)."""

    per_mode = True

    def __init__(self, cutoff: int = 10, group: str = "meta", key: str | None = None):
        if group not in GROUPINGS:
            raise HarnessError(f"Robustness: group must be one of {', '.join(GROUPINGS)}, not {group!r}")
        self.k, self.group = int(cutoff), group
        self.names = [key or f"Robustness@{self.k}"]

    def config(self) -> dict[str, Any]:
        return {"k": self.k, "group": self.group}

    def _key(self, queries: Mapping[str, Any]) -> Callable[[str], str]:
        if self.group == "id":
            return id_group

        def by_query(qid: str) -> str:
            q = queries.get(qid)
            if q is None:
                return qid
            return str(q.meta.get("group", q.text)) if self.group == "meta" else q.text.strip()

        return by_query

    def compute(self, inp: MetricInput) -> MetricResult:
        (mode,) = inp.runs
        ndcg = f"nDCG@{self.k}"
        res = StandardMetric(name=ndcg).compute(inp)
        per = {qid: vals[ndcg] for qid, vals in res.per_query.items()}
        value, minima = robustness(per, self._key(inp.dataset.queries.get(mode, {})))
        name = self.names[0]
        return MetricResult({name: value}, details={f"{name} groups": float(len(minima))})


__all__ = ["GROUPINGS", "Robustness", "id_group", "robustness"]
