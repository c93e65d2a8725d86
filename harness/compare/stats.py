"""Paired significance tests for comparing systems on the same queries.

* :func:`randomization_test`: two-sided paired randomization (sign-flip) test on the mean
  difference, ``p = (c + 1) / (B + 1)`` where ``c`` counts the ``B`` random sign assignments whose
  absolute mean difference is at least the observed one.
* :func:`exact_randomization_p`: the same test by full enumeration of the ``2^n`` sign flips.
* :func:`paired_t_test`: the paired t-test (equal to ``scipy.stats.ttest_rel`` where that is
  defined; identical runs give ``t = 0, p = 1`` instead of NaN).
* :func:`randomized_tukey_hsd`: the randomized Tukey HSD test (Carterette, 2012): each query's
  scores are shuffled across the systems, and each pair's observed difference is compared with
  the range (max - min) of the shuffled system means.
* :func:`holm`: Holm's step-down adjustment of a family of p-values.
* :func:`paired_summary`: mean difference with a 95% t interval, effect size (Cohen's d_z),
  wins/ties/losses.

Reproducibility: the ``B`` resamples are cut into fixed blocks of :data:`BLOCK` resamples; block
``i`` draws from its own stream ``SeedSequence(seed).spawn(...)[i]``, so the result is the same for
a given seed whatever the number of worker threads (``workers``) used to run the blocks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np

from harness.metrics.bootstrap import block_generators

_MEM = 2_000_000  # floats per chunk inside a block
TIE_TOL = 1e-12


def _as_array(x: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError("expected a 1-d sequence of per-query values")
    if not np.all(np.isfinite(a)):
        raise ValueError("per-query values must be finite (fill or drop missing values first)")
    return a


def _run_blocks(b: int, seed: int, workers: int, fn: Callable[[np.random.Generator, int], int]) -> int:
    """Sum ``fn(rng_i, size_i)`` over the fixed blocks (:func:`harness.metrics.bootstrap.block_generators`);
    independent of ``workers``."""
    jobs = block_generators(b, seed)
    if workers <= 1 or len(jobs) == 1:
        return sum(fn(rng, n) for rng, n in jobs)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(lambda job: fn(*job), jobs))


def tolerance(x: float) -> float:
    """How close to the observed statistic ``x`` a resampled one may fall and still count as "at least as
    extreme" (equal up to rounding)."""
    return 1e-9 * max(1.0, abs(x))


def randomization_test(a: Sequence[float], b: Sequence[float], *, permutations: int = 10_000, seed: int = 0,
                       workers: int = 1) -> float:
    """Two-sided paired sign-flip randomization test of mean(a - b) = 0; returns ``(c+1)/(B+1)``."""
    x, y = _as_array(a), _as_array(b)
    if x.shape != y.shape:
        raise ValueError("paired samples must have the same length")
    d = x - y
    n = d.size
    if n == 0:
        raise ValueError("no queries to compare")
    total = float(d.sum())
    observed = abs(total)
    threshold = observed - tolerance(observed)
    rows = max(1, _MEM // n)

    def count(rng: np.random.Generator, size: int) -> int:
        c = 0
        for start in range(0, size, rows):
            r = min(rows, size - start)
            flips = rng.random((r, n)) < 0.5  # True: the query's difference changes sign
            sums = total - 2.0 * (flips @ d)
            c += int(np.count_nonzero(np.abs(sums) >= threshold))
        return c

    c = _run_blocks(permutations, seed, workers, count)
    return (c + 1) / (permutations + 1)


def exact_randomization_p(a: Sequence[float], b: Sequence[float]) -> float:
    """The exact two-sided sign-flip p-value: the share of all ``2^n`` sign assignments (the
    observed one included) whose absolute mean difference is at least the observed one."""
    d = _as_array(a) - _as_array(b)
    n = d.size
    if n > 24:
        raise ValueError("full enumeration is limited to 24 queries")
    observed = abs(float(d.sum()))
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    sums = np.abs(signs @ d)
    return float(np.count_nonzero(sums >= observed - tolerance(observed))) / signs.shape[0]


@dataclass
class TTest:
    t: float
    p: float
    df: int


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> TTest:
    """Two-sided paired t-test of mean(a - b) = 0 (as ``scipy.stats.ttest_rel``). A zero variance
    gives ``t = 0, p = 1`` when the mean difference is 0 and ``t = ±inf, p = 0`` otherwise."""
    from scipy import stats

    d = _as_array(a) - _as_array(b)
    n = d.size
    if n < 2:
        return TTest(float("nan"), float("nan"), max(n - 1, 0))
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd <= TIE_TOL * max(1.0, abs(mean)):
        if abs(mean) <= TIE_TOL:
            return TTest(0.0, 1.0, n - 1)
        return TTest(math.copysign(math.inf, mean), 0.0, n - 1)
    t = mean / (sd / math.sqrt(n))
    p = float(2 * stats.t.sf(abs(t), n - 1))
    return TTest(t, min(1.0, p), n - 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values: sorted ascending, ``p_(i) * (m - i + 1)`` made monotone
    and capped at 1. Reject hypothesis ``i`` at level alpha when its adjusted p <= alpha."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def randomized_tukey_hsd(scores: np.ndarray, *, permutations: int = 10_000, seed: int = 0,
                         workers: int = 1) -> np.ndarray:
    """Randomized Tukey HSD over a ``queries x systems`` matrix: returns the ``k x k`` matrix of
    p-values ``(c_ij + 1) / (B + 1)``, ``c_ij`` counting the resamples (each query's scores
    shuffled across systems) whose range of system means is at least ``|mean_i - mean_j|``."""
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError("expected a queries x systems matrix with at least two systems")
    if not np.all(np.isfinite(x)):
        raise ValueError("per-query values must be finite (fill or drop missing values first)")
    n, k = x.shape
    means = x.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    thresholds = np.array([observed[i, j] - tolerance(observed[i, j]) for i, j in pairs])
    rows = max(1, _MEM // (n * k))

    def count(rng: np.random.Generator, size: int) -> np.ndarray:
        c = np.zeros(len(pairs), dtype=np.int64)
        for start in range(0, size, rows):
            r = min(rows, size - start)
            shuffled = rng.permuted(np.broadcast_to(x, (r, n, k)), axis=2)  # each query's row, independently
            m = shuffled.mean(axis=1)
            ranges = m.max(axis=1) - m.min(axis=1)
            c += np.count_nonzero(ranges[:, None] >= thresholds[None, :], axis=0)
        return c

    counts = _run_blocks(permutations, seed, workers, count)
    p = np.ones((k, k))
    for (i, j), c in zip(pairs, counts):
        p[i, j] = p[j, i] = (int(c) + 1) / (permutations + 1)
    return p


@dataclass
class PairedSummary:
    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    effect_size: float  # Cohen's d_z = mean(d) / sd(d)
    wins: int
    ties: int
    losses: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def paired_summary(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> PairedSummary:
    """Mean difference ``a - b`` with a t interval, Cohen's d_z, and wins/ties/losses of ``a``."""
    from scipy import stats

    x, y = _as_array(a), _as_array(b)
    d = x - y
    n = d.size
    mean = float(d.mean()) if n else float("nan")
    sd = float(d.std(ddof=1)) if n > 1 else float("nan")
    if n > 1:
        half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    else:
        low = high = float("nan")
    if n > 1 and sd > TIE_TOL * max(1.0, abs(mean)):
        effect = mean / sd
    elif n > 1:
        effect = 0.0 if abs(mean) <= TIE_TOL else math.copysign(math.inf, mean)
    else:
        effect = float("nan")
    wins = int(np.count_nonzero(d > TIE_TOL))
    losses = int(np.count_nonzero(d < -TIE_TOL))
    return PairedSummary(n, float(x.mean()) if n else float("nan"), float(y.mean()) if n else float("nan"),
                         mean, low, high, effect, wins, n - wins - losses, losses)
