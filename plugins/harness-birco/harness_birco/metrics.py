"""BIRCO's metrics, as the released evaluation code computes them (notes §4).

- ``birco-ndcg@k``: DCG = sum_{i<=k} rel_i / log2(i + 1) with the *raw* grade as the gain (linear,
  fractional for DORIS-MAE); the ideal DCG comes from the k highest grades of the whole pool.
- ``birco-recall@k``: |top-k ∩ R| / |R| with R = {d : grade >= 1}; not capped by min(k, |R|); queries
  with an empty R are skipped (not scored 0).

Each reports the plain mean over queries (``NAME``) as its value and, as the value's
:class:`~harness.concepts.uncertainty.Uncertainty`, the bootstrap mean (``estimate``) and standard
error (``se``) over 1,000 resamples of the per-query values with numpy's legacy seed 42, and the
number of queries (``n``); the paper prints the bootstrap mean x100 ± SE. A ranking that is not a
permutation of its query's pool (``qrel[qid]`` keys) is a :class:`harness.concepts.errors.DataError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness import MetricInput, MetricResult, Uncertainty

from .data import check_permutation


def ndcg(ranking: Sequence[str], grades: Mapping[str, float], k: int = 10) -> float:
    """Linear-gain nDCG@k against the whole pool's ideal; 0 when the pool has no positive grade."""
    dcg = sum(float(grades.get(d, 0)) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted((float(g) for g in grades.values()), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall(ranking: Sequence[str], grades: Mapping[str, float], k: int = 5) -> float | None:
    """|top-k ∩ R| / |R|, R = grade >= 1, uncapped; ``None`` when R is empty (the query is skipped)."""
    rel = {d for d, g in grades.items() if float(g) >= 1}
    if not rel:
        return None
    return len(rel & set(ranking[:k])) / len(rel)


def bootstrap(values: Sequence[float], n: int = 1000, seed: int = 42) -> tuple[float, float]:
    """(mean, std) of ``n`` bootstrap means: ``np.random.seed(seed)`` then ``np.random.choice(values,
    len(values))`` per resample, as the released code."""
    import numpy as np

    if not values:
        return float("nan"), float("nan")
    arr = np.asarray(values, dtype=float)
    rng = np.random.RandomState(seed)
    means = np.array([rng.choice(arr, size=len(arr), replace=True).mean() for _ in range(n)])
    return float(means.mean()), float(means.std())


class _BircoMetric:
    per_mode = True
    family = ""
    default_cutoff = 10

    def __init__(self, cutoff: int | None = None, resamples: int = 1000, seed: int = 42, check: bool = True):
        self.cutoff = int(cutoff or self.default_cutoff)
        self.resamples = int(resamples)
        self.seed = int(seed)
        self.check = bool(check) if not isinstance(check, str) else check.lower() not in ("0", "false", "no")
        self.name = f"{self.family}@{self.cutoff}"
        self.names = [self.name]

    def value(self, ranking: Sequence[str], grades: Mapping[str, float]) -> float | None:
        raise NotImplementedError

    def compute(self, inp: MetricInput) -> MetricResult:
        (mode,) = inp.runs
        run, qrels = inp.runs[mode], inp.qrels[mode] or {}
        per: dict[str, dict[str, float]] = {}
        for qid, pool in qrels.items():
            ranking = run.doc_ids(qid) if qid in run else []
            if self.check:
                check_permutation(qid, ranking, pool, f"run of {inp.dataset.name or 'the dataset'} [{mode}]")
            v = self.value(ranking, pool)
            if v is not None:
                per[qid] = {self.name: v}
        vals = [v[self.name] for v in per.values()]
        mean = sum(vals) / len(vals) if vals else float("nan")
        bmean, se = bootstrap(vals, self.resamples, self.seed)
        unc = Uncertainty(se=se, n=len(vals), estimate=bmean, method=self.method)
        return MetricResult({self.name: mean}, per, uncertainty={self.name: unc})

    @property
    def method(self) -> str:
        return f"bootstrap, {self.resamples} resamples, seed {self.seed}"

    def config(self) -> dict[str, Any]:
        return {"metric": self.family, "cutoff": self.cutoff, "bootstrap_resamples": self.resamples,
                "bootstrap_seed": self.seed, "permutation_check": self.check,
                "definition": self.__class__.__doc__.strip().splitlines()[0]}


class BircoNDCG(_BircoMetric):
    """nDCG@k with linear gain on the raw (possibly fractional) grade, ideal DCG from the whole pool."""

    family = "birco-ndcg"
    default_cutoff = 10

    def value(self, ranking: Sequence[str], grades: Mapping[str, float]) -> float | None:
        return ndcg(ranking, grades, self.cutoff)


class BircoRecall(_BircoMetric):
    """Recall@k over grade >= 1, not capped by min(k, |R|); queries without a relevant document skipped."""

    family = "birco-recall"
    default_cutoff = 5

    def value(self, ranking: Sequence[str], grades: Mapping[str, float]) -> float | None:
        return recall(ranking, grades, self.cutoff)
