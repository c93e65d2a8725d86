"""``Hole@k``: the share of the top k without a judgment, mean over queries: how much of a figure rests
on documents nobody judged (an unjudged document counts as not relevant in every standard measure).

Two scopes (``docs/judges.md``, "Hole@k"):

- ``pair`` (the default): a document is a hole for a query when the qrels hold no judgment of that
  (query, document) pair; the mean is over the run's queries that have qrels, as every other measure's.
- ``corpus``: MTEB's ``hole`` (``mteb/_evaluators/retrieval_metrics.py`` at embeddings-benchmark/mteb
  a905523d): a document is a hole when no query's qrels judge it; the mean is over every query of the run.

Both take the top k in trec_eval's order (score descending, then document id descending, as MTEB sorts)
and divide by k, as MTEB does, also when a ranking holds fewer than k documents (ir-measures' ``Judged@k``
divides by the ranking's length there, so ``Hole@k`` is ``1 - Judged@k`` only for full rankings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.concepts.errors import HarnessError
from harness.concepts.protocols import MetricInput, MetricResult
from harness.metrics.names import check_cutoff

SCOPES = ("pair", "corpus")
_NAME = re.compile(r"^Hole@(?P<k>[+-]?[0-9]+)(?::scope=(?P<scope>\w+))?$")


def top_k(scores: Mapping[str, float], k: int) -> list[str]:
    """The top ``k`` document ids in trec_eval's order (score descending, then id descending)."""
    return [d for d, _ in sorted(scores.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]]


def hole_per_query(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, Any]], k: int,
                   scope: str = "pair") -> dict[str, float]:
    """qid -> the share of its top ``k`` without a judgment (see the module docstring)."""
    if scope == "corpus":
        judged = {d for docs in qrels.values() for d in docs}
        return {q: sum(d not in judged for d in top_k(h, k)) / k for q, h in run.items()}
    return {q: sum(d not in qrels[q] for d in top_k(h, k)) / k for q, h in run.items() if q in qrels}


class HoleMetric:
    """``Hole@k`` (``cutoff``), ``scope`` ``pair`` or ``corpus``; its name is ``Hole@k`` (``Hole@k:scope=corpus``)."""

    per_mode = True

    def __init__(self, cutoff: int | str = 10, scope: str = "pair"):
        if scope not in SCOPES:
            raise HarnessError(f"Hole@k: scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        self.k, self.scope = check_cutoff("Hole", cutoff), scope
        self.names = [f"Hole@{self.k}" + (":scope=corpus" if scope == "corpus" else "")]

    def config(self) -> dict[str, Any]:
        return {"measure": "Hole", "cutoff": self.k, "scope": self.scope,
                "definition": "share of the top k (trec_eval order) whose (query, document) pair has no judgment"
                if self.scope == "pair" else "MTEB's hole: share of the top k that no query's qrels judge"}

    def compute(self, inp: MetricInput) -> MetricResult:
        (mode,) = inp.runs
        qrels = inp.qrels.get(mode)
        if qrels is None or not len(qrels):
            raise HarnessError(f"mode {mode!r} has no qrels: Hole@k needs relevance judgments")
        values = hole_per_query(inp.runs[mode].to_dict(), qrels, self.k, self.scope)
        name = self.names[0]
        mean = sum(values.values()) / len(values) if values else float("nan")
        return MetricResult({name: mean}, {q: {name: v} for q, v in values.items()})


def parse_hole(name: str) -> HoleMetric | None:
    """The :class:`HoleMetric` a name such as ``Hole@10`` or ``Hole@10:scope=corpus`` asks for, else None."""
    m = _NAME.fullmatch(name.strip())
    return HoleMetric(m["k"], m["scope"] or "pair") if m else None
