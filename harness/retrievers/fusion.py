"""Rank fusion as pure functions over :class:`~harness.concepts.run.Run`, with ranx's formulas
(AmenRa/ranx @2cae52f00c2c15136a07d573027744109792604d: ``ranx/fusion/rrf.py``, ``comb_sum.py``,
``comb_mnz.py``, ``comb_max.py``, ``wsum.py``; ``ranx/normalization/min_max_norm.py``, ``zmuv_norm.py``;
``ranx/meta/fuse.py``). For a query and a document ``d``, over the input runs ``r`` in the order given:

- ``rrf`` (Cormack et al., SIGIR 2009): ``sum_r 1 / (k + rank_r(d))``, ``rank`` from 1, ``k`` default 60;
  a run that does not rank ``d`` adds nothing. It reads ranks only: no normalisation applies.
- ``combsum``: ``sum_r s_r(d)``, a missing score 0 (Fox and Shaw, TREC 1993).
- ``combmnz``: ``sum_r s_r(d) * |{r : d in r}|``, over the runs that rank ``d``.
- ``max`` (CombMAX): ``max_r s_r(d)``, a missing score -1e9 (ranx's fill).
- ``wsum``: ``sum_r w_r * s_r(d)``, a missing score 0; one weight per run, required.

Scores are normalised per query first (ranx's ``fuse(norm=...)``, default min-max): ``minmax``
``(s - min) / max(max - min, 1e-9)``; ``zscore`` (ranx's ``zmuv``) ``(s - mean) / max(std, 1e-9)``, the
population standard deviation; ``none`` the scores as given.

Two rules ranx leaves to its sort, fixed here: a run's ranks are positions in trec_eval's order (score
descending, ties by document id descending: the order the run is scored in), and the fused run is
ordered the same way. ranx asserts that the runs hold the same queries; here the fused run holds
every query of any input, and a run that lacks a query adds nothing to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from harness.concepts.errors import HarnessError
from harness.concepts.run import Run

METHODS = ("rrf", "combsum", "combmnz", "max", "wsum")
NORMS = ("minmax", "zscore", "none")
DEFAULT_K = 60
DEFAULT_NORM = "minmax"  # ranx's fuse() default
MIN_DENOMINATOR = 1e-9  # ranx's floor on max - min and on the standard deviation
MISSING_MAX = -1e9  # ranx's comb_max fill for a run that does not rank the document
#: ranx's names for the same methods and normalisations
ALIASES = MappingProxyType({"sum": "combsum", "comb_sum": "combsum", "mnz": "combmnz", "comb_mnz": "combmnz",
                            "comb_max": "max", "combmax": "max", "weighted_sum": "wsum",
                            "min-max": "minmax", "min_max": "minmax", "zmuv": "zscore"})

Scores = dict[str, float]


def canonical(name: str, allowed: Sequence[str], what: str) -> str:
    """``name`` (or a ranx alias of it) as one of ``allowed``; a :class:`HarnessError` naming them otherwise."""
    key = ALIASES.get(str(name).lower(), str(name).lower())
    if key not in allowed:
        raise HarnessError(f"unknown fusion {what} {name!r}; one of: {', '.join(allowed)}")
    return key


def ranked(run: Run, qid: str) -> list[tuple[str, float]]:
    """A query's list in trec_eval's order: score descending, ties by document id descending."""
    return sorted(run.scores(qid).items(), key=lambda x: (x[1], x[0]), reverse=True)


def normalize(scores: Mapping[str, float], norm: str) -> Scores:
    """One query's scores normalised as ranx normalises them (``minmax``, ``zscore``, ``none``)."""
    values = list(scores.values())
    if norm == "none" or not values:
        return dict(scores)
    if norm == "minmax":
        low, high = min(values), max(values)
        den = max(high - low, MIN_DENOMINATOR)
        return {d: (s - low) / den for d, s in scores.items()}
    import numpy as np  # lazy: numpy only for z-scores (ranx's np.mean and np.std)

    mean, std = float(np.mean(values)), float(np.std(values))
    den = max(std, MIN_DENOMINATOR)
    return {d: (s - mean) / den for d, s in scores.items()}


def fuse_scores(lists: Sequence[list[tuple[str, float]]], method: str, k: float = DEFAULT_K,
                weights: Sequence[float] | None = None, norm: str = DEFAULT_NORM) -> Scores:
    """One query: the fused score of every document any input list ranks (lists in trec_eval's order)."""
    if method == "rrf":
        per_run = [{d: 1 / (k + i + 1) for i, (d, _) in enumerate(hits)} for hits in lists]
        return _fused(per_run, lambda ss, d: sum(s.get(d, 0.0) for s in ss))
    per_run = [normalize(dict(hits), norm) for hits in lists]
    if method == "combsum":
        return _fused(per_run, lambda ss, d: sum(s.get(d, 0.0) for s in ss))
    if method == "combmnz":
        return _fused(per_run, lambda ss, d: sum(s[d] for s in ss if d in s) * sum(1 for s in ss if d in s))
    if method == "max":
        return _fused(per_run, lambda ss, d: max(s.get(d, MISSING_MAX) for s in ss))
    w = list(weights or ())
    return _fused(per_run, lambda ss, d: sum(w[i] * s.get(d, 0.0) for i, s in enumerate(ss)))


def _fused(per_run: Sequence[Mapping[str, float]], rule) -> Scores:
    """``rule(per_run, d)`` for each document, in the order the runs first rank them."""
    out: Scores = {}
    for scores in per_run:
        for d in scores:
            if d not in out:
                out[d] = rule(per_run, d)
    return out


def check_fusion(n_runs: int, method: str, k: float = DEFAULT_K, weights: Sequence[float] | None = None,
                 norm: str | None = None) -> tuple[str, int | float, list[float] | None, str]:
    """The fusion's settings, checked: (method, k, weights, norm). ``norm`` None is ranx's default
    (min-max; nothing for ``rrf``, which reads ranks). A :class:`HarnessError` for anything else."""
    method = canonical(method, METHODS, "method")
    if n_runs < 2:
        raise HarnessError(f"fusion needs at least two runs, got {n_runs}")
    if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k) or k < 0:
        raise HarnessError(f"the RRF constant k must be a finite number >= 0, got {k!r}")
    if method == "rrf":
        if norm not in (None, "none"):
            raise HarnessError(f"rrf reads ranks, not scores: a normalisation ({norm!r}) does not apply to it")
        norm = "none"
    norm = canonical(norm if norm is not None else DEFAULT_NORM, NORMS, "normalisation")
    if method == "wsum":
        w = [float(x) for x in weights or ()] if all(_number(x) for x in weights or ()) else None
        if not w or len(w) != n_runs or not all(math.isfinite(x) for x in w):
            raise HarnessError(f"wsum needs one finite weight per run ({n_runs}), got {weights!r}")
        return method, k, w, norm
    if weights:
        raise HarnessError(f"weights apply to wsum only, not to {method}")
    return method, k, None, norm


def _number(x: object) -> bool:
    return not isinstance(x, bool) and isinstance(x, int | float)


def fuse(runs: Sequence[Run], method: str = "rrf", k: float = DEFAULT_K, weights: Sequence[float] | None = None,
         norm: str | None = None, name: str | None = None) -> Run:
    """The fusion of ``runs`` (see the module docstring), ordered as trec_eval orders a run."""
    method, k, w, norm = check_fusion(len(runs), method, k, weights, norm)
    queries = list(dict.fromkeys(q for run in runs for q in run))
    fused = {q: fuse_scores([ranked(run, q) if q in run else [] for run in runs], method, k, w, norm)
             for q in queries}
    return Run.from_scores(fused, name=name or method)
