"""The ``instfol`` metric (cross-mode), as the authors' released code computes it (``src/llm_eval.py``).

For each query (one instruction at one level): S_q are the judge scores of the top ``cutoff`` of the
query-only run (mode ``query``), S_inst those of the query+instruction run (mode ``instructed``), both
judged against the same instruction. A position whose judgment failed (or is missing) in either list
is dropped from both. Then

    INSTFOL_q = (mean S_inst - mean S_q) / (max - mean S_q)      (max = 3)
              = 0                          when the means are equal
              = mean S_inst - mean S_q     when mean S_q >= max

Per level: the mean over that level's queries x 100 (``instfol_L1`` ...). ``instfol`` is the mean of
the level values (a subset's score; for subsets without levels, the mean over queries). A suite (``ifir``)
then averages ``instfol`` over subsets. ``pooled=true`` instead pools each level's kept scores and
computes one ratio per level. Queries with no position left are skipped and counted: the counts
(``instfol_queries``, ``instfol_queries_skipped``, ``instfol_positions_dropped``) are the result's
``details``, not metrics.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from harness import HarnessError, MetricInput, MetricResult


def instfol_ratio(mean_inst: float, mean_q: float, max_score: float = 3.0) -> float:
    if math.isclose(mean_inst, mean_q, rel_tol=0.0, abs_tol=1e-12):
        return 0.0
    if mean_q >= max_score:
        return mean_inst - mean_q
    return (mean_inst - mean_q) / (max_score - mean_q)


def paired_scores(base: list[float | None], target: list[float | None]) -> tuple[list[float], list[float], int]:
    """Drop every position that failed in either list; returns (S_q, S_inst, positions dropped)."""
    sq, si, dropped = [], [], 0
    for i in range(max(len(base), len(target))):
        a = base[i] if i < len(base) else None
        b = target[i] if i < len(target) else None
        if a is None or b is None:
            dropped += 1
            continue
        sq.append(a)
        si.append(b)
    return sq, si, dropped


DEFAULT_CUTOFF = 20


class Instfol:
    """Options: ``cutoff`` (20; ``instfol@10`` sets it), ``pooled`` (false), ``base`` / ``target``
    (the modes compared: ``query`` / ``instructed``), ``max_score`` (3).

    Result keys carry a cutoff that was given, as ``nDCG@k`` does: ``instfol`` (the default 20),
    ``instfol@10``, ``instfol@10_L1``..., so ``-m instfol -m instfol@10`` keep both."""

    per_mode = False

    def __init__(self, cutoff: int | None = None, pooled: bool = False, base: str = "query",
                 target: str = "instructed", max_score: float = 3.0):
        self.cutoff = DEFAULT_CUTOFF if cutoff is None else int(cutoff)
        if self.cutoff < 1:
            raise HarnessError(f"instfol: cutoff must be >= 1, got {cutoff}")
        self.pooled, self.base, self.target = bool(pooled), base, target
        self.max_score = float(max_score)
        self.key = ("instfol_pooled" if self.pooled else "instfol") + ("" if cutoff is None else f"@{self.cutoff}")
        self.names = [self.key]

    def compute(self, inp: MetricInput) -> MetricResult:
        for mode in (self.base, self.target):
            if mode not in inp.runs:
                raise HarnessError(f"instfol compares the modes {self.base!r} and {self.target!r}; dataset "
                                   f"{inp.dataset.name!r} has {sorted(inp.runs)} (set instfol:base=...,target=...)")
        jb, jt = inp.judgments.get(self.base), inp.judgments.get(self.target)
        if not jb and not jt:
            print("[harness] instfol: no judgments (run with --judge instfol); INSTFOL not computed",
                  file=sys.stderr, flush=True)
            return MetricResult({})
        jb, jt = jb or {}, jt or {}
        groups, dropped, skipped = self._groups(inp, jb, jt)
        per_query, values = self._level_values(groups)
        details = {f"{self.key}_queries": float(sum(len(v) for v in groups.values())),
                   f"{self.key}_queries_skipped": float(skipped), f"{self.key}_positions_dropped": float(dropped)}
        notes = {self.key: self._why_none(jb, jt, skipped=skipped)} if not values else {}
        return MetricResult(self._aggregate(values), per_query, details=details, notes=notes)

    def _scores(self, judgments: Any, run: Any, qid: str) -> list[float | None]:
        """The judged scores of a query's top ``cutoff`` documents (None where unjudged)."""
        out = []
        for d in run.doc_ids(qid)[: self.cutoff] if qid in run else []:
            j = judgments.get((qid, d))
            out.append(None if j is None else j.score)
        return out

    def _groups(self, inp: MetricInput, jb: Any, jt: Any
                ) -> tuple[dict[Any, list[tuple[str, list[float], list[float]]]], int, int]:
        """The target run's queries with paired scores, grouped by level; also the number of positions dropped
        (judged in one mode only) and of queries skipped (no pair left)."""
        rb, rt = inp.runs[self.base], inp.runs[self.target]
        qmeta = inp.dataset.queries.get(self.target, {})
        groups: dict[Any, list[tuple[str, list[float], list[float]]]] = {}
        dropped = skipped = 0
        for qid in rt:
            sq, si, n = paired_scores(self._scores(jb, rb, qid), self._scores(jt, rt, qid))
            dropped += n
            if not sq:
                skipped += 1
                continue
            q = qmeta.get(qid)
            level = q.meta.get("level") if q is not None else None
            groups.setdefault(level or None, []).append((qid, sq, si))
        return groups, dropped, skipped

    def _level_values(self, groups: dict[Any, list[tuple[str, list[float], list[float]]]]
                      ) -> tuple[dict[str, dict[str, float]], dict[Any, float]]:
        """Per-query INSTFOL (x100) and each level's value: the mean of its queries' ratios, or (pooled) the
        ratio of its pooled means."""
        per_query: dict[str, dict[str, float]] = {}
        values: dict[Any, float] = {}
        for level, items in groups.items():
            ratios = []
            for qid, sq, si in items:
                r = instfol_ratio(sum(si) / len(si), sum(sq) / len(sq), self.max_score)
                ratios.append(r)
                per_query[qid] = {self.key: 100.0 * r}
            if self.pooled:
                allq = [s for _, sq, _ in items for s in sq]
                alli = [s for _, _, si in items for s in si]
                values[level] = 100.0 * instfol_ratio(sum(alli) / len(alli), sum(allq) / len(allq), self.max_score)
            else:
                values[level] = 100.0 * sum(ratios) / len(ratios)
        return per_query, values

    def _aggregate(self, values: dict[Any, float]) -> dict[str, float]:
        """One value per level (``_L<level>``; unleveled queries as ``_L0`` beside leveled ones) and their mean."""
        agg: dict[str, float] = {}
        leveled = sorted(lv for lv in values if lv is not None)
        for lv in leveled:
            agg[f"{self.key}_L{lv}"] = values[lv]
        if None in values and leveled:
            agg[f"{self.key}_L0"] = values[None]
        agg[self.key] = sum(values.values()) / len(values) if values else float("nan")
        return agg

    @staticmethod
    def _why_none(*judgment_sets: Any, skipped: int = 0) -> str:
        """Why no query could be scored: the judgments' failures, counted by reason."""
        from collections import Counter

        judged = [j for js in judgment_sets if js for j in js.values()]
        reasons = Counter(str((j.details or {}).get("error") or "no score") for j in judged if j.score is None)
        usable = sum(1 for j in judged if j.score is not None)
        why = ", ".join(f"{n} {r}" for r, n in reasons.most_common())
        return (f"no query has a usable judgment in both modes ({skipped} queries; {len(judged)} pairs judged, "
                f"{usable} usable" + (f"; failed: {why}" if why else "") + ")")

    def config(self) -> dict[str, Any]:
        return {"metric": "instfol", "cutoff": self.cutoff, "pooled": self.pooled, "base": self.base,
                "target": self.target, "max_score": self.max_score, "scale": "x100",
                "aggregation": ("per level: one ratio of pooled means" if self.pooled else
                                "per level: mean of per-query ratios") + "; instfol = mean over levels"}
