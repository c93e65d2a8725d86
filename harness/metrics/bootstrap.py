"""Seeded bootstrap resampling of per-query (or per-topic) values, one convention for every interval
the harness reports: a metric's interval over its queries or topics (FollowIR's and InfoSearch's
p-MRR), and ``harness compare``'s rank intervals, bootstrap test and mean over tasks.

The convention (the same blocks as ``harness compare``'s randomization test): the ``B`` resamples are
cut into fixed blocks of :data:`BLOCK`; block ``i`` draws from
``numpy.random.Generator(numpy.random.PCG64(numpy.random.SeedSequence(seed).spawn(n_blocks)[i]))``.
In a block of ``r`` resamples, each stratum ``t`` (a task; one stratum for a single sample) in turn draws
``rng.integers(0, n_t, size=(r, n_t))``: row ``j`` holds the row indices of resample ``j``, with
replacement, the same rows for every column (system) of the stratum, so the resample is paired. The
statistic of a resample is the mean over its rows of each column. Percentile intervals use
``numpy.percentile``'s default (linear) interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.concepts.uncertainty import Uncertainty

BLOCK = 1000  # resamples per independent random stream (as harness compare's randomization test)
DEFAULT_RESAMPLES = 10_000
_MEM = 2_000_000  # floats per chunk of resampled values


def block_sizes(resamples: int) -> list[int]:
    """The sizes of the fixed blocks of ``resamples`` resamples (the last one shorter)."""
    if resamples < 1:
        raise ValueError("the number of resamples must be at least 1")
    sizes = [BLOCK] * (resamples // BLOCK)
    if resamples % BLOCK:
        sizes.append(resamples % BLOCK)
    return sizes


def block_generators(resamples: int, seed: int) -> list[tuple[np.random.Generator, int]]:
    """``(generator, size)`` of each block: block ``i`` from ``SeedSequence(seed).spawn(n)[i]``."""
    sizes = block_sizes(resamples)
    seqs = np.random.SeedSequence(seed).spawn(len(sizes))
    return [(np.random.Generator(np.random.PCG64(s)), n) for s, n in zip(seqs, sizes)]


def _stratum_means(rng: np.random.Generator, x: np.ndarray, r: int) -> np.ndarray:
    """``(r, k)``: the column means of ``r`` resamples of the rows of ``x`` (``n x k``), drawn as one
    ``(r, n)`` array of indices (in chunks of rows: the same stream as one draw). Each resample's mean is
    computed from how often it drew each row (``counts @ x / n``, equal to the mean of the drawn rows up to
    rounding)."""
    n = x.shape[0]
    rows = max(1, _MEM // n)
    out = np.empty((r, x.shape[1]))
    for start in range(0, r, rows):
        m = min(rows, r - start)
        idx = rng.integers(0, n, size=(m, n))
        counts = np.bincount((idx + (np.arange(m) * n)[:, None]).ravel(), minlength=m * n).reshape(m, n)
        out[start:start + m] = (counts @ x) / n
    return out


def bootstrap_means(strata: Sequence[np.ndarray], resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """``(B, T, k)``: for each resample, each stratum's column means. ``strata``: one ``n_t x k`` array per
    stratum (rows: queries; columns: systems, the same columns in every stratum); rows are resampled
    within each stratum, paired across its columns (the module's convention)."""
    xs = [np.asarray(s, dtype=np.float64) for s in strata]
    if not xs or any(x.ndim != 2 or x.shape[0] == 0 for x in xs) or len({x.shape[1] for x in xs}) != 1:
        raise ValueError("expected one or more non-empty n x k arrays with the same k")
    if not all(np.all(np.isfinite(x)) for x in xs):
        raise ValueError("per-query values must be finite (fill or drop missing values first)")
    out = np.empty((resamples, len(xs), xs[0].shape[1]))
    start = 0
    for rng, size in block_generators(resamples, seed):
        for t, x in enumerate(xs):
            out[start:start + size, t] = _stratum_means(rng, x, size)
        start += size
    return out


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap ``samples`` (``numpy.percentile``, linear interpolation)."""
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(np.asarray(samples, dtype=np.float64), [tail, 100 - tail])
    return float(lo), float(hi)


def bootstrap_uncertainty(values: Sequence[float], resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                          unit: str = "queries") -> Uncertainty | None:
    """The bootstrap uncertainty of the mean of ``values`` (one per query or topic): ``ci95`` the
    percentile 95% interval of the ``resamples`` bootstrap means, ``se`` their standard deviation
    (``ddof=1``), ``n`` the number of values; ``method`` says how, naming the ``unit``. Non-finite values
    are left out; None when fewer than two remain."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if len(vals) < 2:
        return None
    means = bootstrap_means([np.array(vals)[:, None]], resamples, seed)[:, 0, 0]
    return Uncertainty(se=float(means.std(ddof=1)), ci95=percentile_interval(means), n=len(vals),
                       method=f"bootstrap over {unit}, {resamples} resamples, seed {seed}: percentile 95% "
                              "interval, se = sd of the bootstrap means")


__all__ = ["BLOCK", "DEFAULT_RESAMPLES", "block_generators", "block_sizes", "bootstrap_means", "bootstrap_uncertainty",
           "percentile_interval"]
