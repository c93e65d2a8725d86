"""The statistics of `harness compare`'s family-wise analysis, each recomputed independently: the
Wilcoxon test against scipy, the corrections against textbook examples (and statsmodels when it is
installed), TOST against two one-sided `ttest_rel` calls, and every bootstrap figure (rank intervals,
the bootstrap test, the stratified mean over tasks, a metric's interval) against a plain-numpy loop
that draws the same seeded streams one resample at a time."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from harness.compare import (
    adjust,
    benjamini_hochberg,
    benjamini_yekutieli,
    bonferroni,
    bootstrap_test,
    holm,
    rank_intervals,
    tost,
    wilcoxon_test,
)
from harness.compare.across import across_rows
from harness.compare.family import FamilyOptions, Table
from harness.compare.ranks import rank_groups
from harness.metrics import bootstrap_uncertainty

# -- an independent resampler: one resample at a time, the documented streams ---------------------


def _streams(b: int, seed: int):
    """(generator, size) per block of 1,000: ``SeedSequence(seed).spawn(n)[i]`` (docs/compare.md)."""
    sizes = [1000] * (b // 1000) + ([b % 1000] if b % 1000 else [])
    seqs = np.random.SeedSequence(seed).spawn(len(sizes))
    return [(np.random.Generator(np.random.PCG64(s)), n) for s, n in zip(seqs, sizes)]


def _resampled_means(strata: list[np.ndarray], b: int, seed: int) -> np.ndarray:
    """B x T x k: in each block, each stratum in turn draws its resamples' row indices, one row at a time."""
    out = np.empty((b, len(strata), strata[0].shape[1]))
    start = 0
    for rng, size in _streams(b, seed):
        for t, x in enumerate(strata):
            for j in range(size):
                idx = rng.integers(0, x.shape[0], size=x.shape[0])
                out[start + j, t] = x[idx].mean(axis=0)
        start += size
    return out


def _scores(seed: int, n: int, shifts: list[float], ties: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 1, n)
    cols = [np.clip(base + s + rng.normal(0, 0.12, n), 0, 1) for s in shifts]
    x = np.column_stack(cols)
    return np.round(x * 4) / 4 if ties else x  # graded values tie, as nDCG@1 or MRR do


# -- Wilcoxon ---------------------------------------------------------------------------------------
WILCOXON_CASES = [  # (seed, n, ties): exact (n <= 50, no ties), sign flips (n <= 13, ties), normal (n > 13, ties)
    (0, 8, False), (1, 20, False), (2, 50, False), (3, 10, True), (4, 13, True), (5, 14, True), (6, 40, True),
    (7, 51, False), (8, 300, True), (9, 300, False),
]


@pytest.mark.parametrize("seed,n,ties", WILCOXON_CASES)
def test_wilcoxon_equals_scipy(seed, n, ties):
    x = _scores(seed, n, [0.0, 0.04], ties)
    assert wilcoxon_test(x[:, 1], x[:, 0]) == pytest.approx(sps.wilcoxon(x[:, 1], x[:, 0]).pvalue, rel=1e-10)
    assert wilcoxon_test(x[:, 0], x[:, 1]) == pytest.approx(sps.wilcoxon(x[:, 0], x[:, 1]).pvalue, rel=1e-10)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # scipy's own 0/0 on identical runs
def test_wilcoxon_with_zero_differences_and_identical_runs():
    a = np.array([0.5, 0.2, 0.9, 0.4, 0.4, 0.1, 0.7, 0.3, 0.6, 0.8, 0.2, 0.5, 0.9, 0.0, 0.3, 0.6] * 2)
    b = a.copy()
    b[::3] += 0.1  # 11 non-zero differences, 21 zeros
    assert wilcoxon_test(b, a) == pytest.approx(sps.wilcoxon(b, a).pvalue, rel=1e-10)
    assert wilcoxon_test(b[:12], a[:12]) == pytest.approx(sps.wilcoxon(b[:12], a[:12]).pvalue, rel=1e-10)
    assert wilcoxon_test(a, a) == 1.0  # scipy: NaN for more than 13 zero differences
    assert sps.wilcoxon(a[:10], a[:10]).pvalue == wilcoxon_test(a[:10], a[:10]) == 1.0


def test_wilcoxon_small_case_by_hand():
    # d = (1, 2, 3, 4): R+ = 10, the largest of the 16 equally likely subset sums: p = 2 / 16
    assert wilcoxon_test([1, 2, 3, 4], [0, 0, 0, 0]) == pytest.approx(2 / 16)


# -- corrections ------------------------------------------------------------------------------------
#: Benjamini & Hochberg (1995), section 3.2: 15 p-values of a clinical trial; at q = 0.05 Bonferroni
#: rejects 3 hypotheses, the FDR procedure 4
BH_1995 = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528,
           0.7590, 1.000]
#: the step-up values min_{j >= i} p_(j) * 15 / j, worked out by hand
BH_1995_ADJUSTED = [0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.063857142857, 0.063857142857, 0.0645, 0.0765, 0.486,
                    0.581181818182, 0.71487500, 0.753230769231, 0.813214285714, 1.0]


def test_bh_and_bonferroni_on_the_1995_example():
    bh = benjamini_hochberg(BH_1995)
    assert bh == pytest.approx(BH_1995_ADJUSTED, rel=1e-9)
    assert sum(p <= 0.05 for p in bh) == 4
    assert sum(p <= 0.05 for p in bonferroni(BH_1995)) == 3
    assert bonferroni(BH_1995) == pytest.approx([min(1.0, 15 * p) for p in BH_1995])


def test_by_is_bh_times_the_harmonic_sum():
    c = sum(1 / i for i in range(1, 16))  # c(15) = 3.3182...
    assert c == pytest.approx(3.318228993)
    assert benjamini_yekutieli(BH_1995) == pytest.approx([min(1.0, c * p) for p in BH_1995_ADJUSTED], rel=1e-9)
    assert sum(p <= 0.05 for p in benjamini_yekutieli(BH_1995)) == 3  # 0.0095 * c = 0.0315; 0.0356 * c > 0.05


def test_holm_textbook_and_order_free():
    # Holm (1979) worked by hand: sorted 0.005 x 4, 0.01 x 3, 0.03 x 2, 0.04 x 1, then the running maximum
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust([0.01, 0.04, 0.03, 0.005], "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    shuffled = [BH_1995[i] for i in (3, 14, 0, 7, 1, 12, 5, 9, 2, 11, 4, 13, 6, 10, 8)]
    assert benjamini_hochberg(shuffled) == pytest.approx([BH_1995_ADJUSTED[i] for i in
                                                          (3, 14, 0, 7, 1, 12, 5, 9, 2, 11, 4, 13, 6, 10, 8)])


def test_adjust_keeps_nan_and_none():
    assert adjust([0.01, float("nan"), 0.02], "none") == pytest.approx([0.01, float("nan"), 0.02], nan_ok=True)
    out = adjust([0.01, float("nan"), 0.02], "bh")
    assert math.isnan(out[1]) and out[0] == pytest.approx(0.03) and out[2] == pytest.approx(0.03)
    with pytest.raises(ValueError, match="choose one of"):
        adjust([0.1], "fdr")


@pytest.mark.parametrize("method,sm", [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh"),
                                       ("by", "fdr_by")])
def test_corrections_equal_statsmodels(method, sm):
    multitest = pytest.importorskip("statsmodels.stats.multitest", reason="statsmodels not installed")
    rng = np.random.default_rng(3)
    for m in (1, 2, 7, 40):
        p = np.concatenate([rng.uniform(0, 0.05, m // 2), rng.uniform(0, 1, m - m // 2)])
        ref = multitest.multipletests(p, method=sm)[1]
        assert adjust(list(p), method) == pytest.approx(list(ref), rel=1e-12)


# -- TOST -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed,margin", [(0, 0.02), (1, 0.05), (2, 0.1), (3, 0.01)])
def test_tost_is_the_larger_of_two_one_sided_ttest_rel(seed, margin):
    x = _scores(seed, 40, [0.0, 0.01], ties=False)
    a, b = x[:, 0], x[:, 1]
    lower = sps.ttest_rel(b + margin, a, alternative="greater").pvalue
    upper = sps.ttest_rel(b - margin, a, alternative="less").pvalue
    assert tost(a, b, margin) == pytest.approx(max(lower, upper), rel=1e-10)


def test_tost_edge_cases():
    a = [0.1, 0.2, 0.3]
    assert tost(a, a, 0.01) == 0.0  # identical: equivalent at any margin
    assert tost(a, [v + 0.5 for v in a], 0.1) == 1.0  # a constant shift beyond the margin
    assert math.isnan(tost([0.1], [0.2], 0.1))
    with pytest.raises(ValueError, match="margin"):
        tost(a, a, 0.0)


# -- bootstrap figures ------------------------------------------------------------------------------
def test_bootstrap_test_equals_a_plain_numpy_bootstrap():
    x = _scores(4, 35, [0.0, 0.05])
    a, b = x[:, 0], x[:, 1]
    d = b - a
    means = _resampled_means([x], 2500, 11)[:, 0, :]
    centred = means[:, 1] - means[:, 0] - d.mean()  # the mean of the resampled centred differences d - mean(d)
    c = np.count_nonzero(np.abs(centred) >= abs(d.mean()) - 1e-9 * max(1, abs(d.mean())))
    assert bootstrap_test(a, b, resamples=2500, seed=11) == pytest.approx((c + 1) / 2501)
    assert bootstrap_test(a, a, resamples=300) == 1.0


def _ranks_by_hand(x: np.ndarray, b: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    means = _resampled_means([x], b, seed)[:, 0, :]
    ranks = np.array([sps.rankdata(-m, method="average") for m in means])
    return sps.rankdata(-x.mean(axis=0), method="average"), *np.percentile(ranks, [2.5, 97.5], axis=0)


@pytest.mark.parametrize("seed,b", [(0, 2000), (5, 1500)])
def test_rank_intervals_equal_a_plain_numpy_bootstrap(seed, b):
    x = _scores(seed, 45, [0.0, 0.03, 0.03, 0.1, -0.05])
    names = ["s0", "s1", "s2", "s3", "s4"]
    x[:, 2] = x[:, 1]  # two identical systems: tied in every resample, both at their mean rank
    rank, low, high = _ranks_by_hand(x, b, seed)
    got = {r.system: r for r in rank_intervals(x, names, resamples=b, seed=seed)}
    for i, name in enumerate(names):
        assert (got[name].rank, got[name].low, got[name].high) == pytest.approx((rank[i], low[i], high[i]))
    assert got["s1"].rank == got["s2"].rank == pytest.approx(rank[1]) and rank[1] % 1 == 0.5
    assert [r.system for r in rank_intervals(x, names, resamples=b, seed=seed)][0] == "s3"
    lower = {r.system: r.rank for r in rank_intervals(x, names, resamples=200, seed=seed, lower_is_better=True)}
    assert lower["s4"] == 1.0  # lowest mean first


def test_rank_groups_rule():
    # intervals [1,2], [1,3], [2,3], [4,4], [4,5], [4,5]: a = {A, B, C}, b = {D, E, F}
    ranks, low, high = [1, 2, 3, 4, 5, 6], [1, 1, 2, 4, 4, 4], [2, 3, 3, 4, 5, 5]
    assert rank_groups(ranks, low, high) == [[0, 1, 2], [3, 4, 5]]
    # a chain: [1,2], [2,3], [3,4]: A~B, B~C, A and C apart -> groups {A, B}, {B, C}
    assert rank_groups([1, 2, 3], [1, 2, 3], [2, 3, 4]) == [[0, 1], [1, 2]]
    assert rank_groups([1, 2], [1, 2], [1, 2]) == [[0], [1]]


def test_across_tasks_equals_a_hand_written_stratified_bootstrap():
    tasks = [_scores(1, 30, [0.0, 0.02, 0.06]), _scores(2, 12, [0.0, 0.05, -0.02]), _scores(3, 55, [0.0, 0.0, 0.03])]
    names = ["a", "b", "c"]
    tables = [Table(f"t{i}", "m", names, x) for i, x in enumerate(tasks)]
    b, seed, margin = 3000, 4, 0.02
    rows, ranks = across_rows(tables, "m", [("a", "b"), ("a", "c"), ("b", "c")],
                              FamilyOptions(bootstrap=b, equivalence=margin), seed)
    boot = _resampled_means(tasks, b, seed).mean(axis=1)  # mean of task means, each resample
    observed = np.mean([x.mean(axis=0) for x in tasks], axis=0)
    for row in rows:
        i, j = names.index(row.a), names.index(row.b)
        delta = observed[j] - observed[i]
        star = boot[:, j] - boot[:, i]
        tol = 1e-9 * max(1, abs(delta))
        assert row.delta == pytest.approx(delta) and row.mean_a == pytest.approx(observed[i])
        assert row.ci == pytest.approx(list(np.percentile(star, [2.5, 97.5])))
        assert row.p_value == pytest.approx((np.count_nonzero(np.abs(star - delta) >= abs(delta) - tol) + 1) / (b + 1))
        lower = (np.count_nonzero(star - delta >= delta + margin - 1e-9 * max(1, abs(delta) + margin)) + 1) / (b + 1)
        upper = (np.count_nonzero(star - delta <= delta - margin + 1e-9 * max(1, abs(delta) + margin)) + 1) / (b + 1)
        assert row.p_equivalence == pytest.approx(max(lower, upper))
        assert row.n == 97 and row.extra["tasks"] == ["t0", "t1", "t2"]
    by_rank = np.array([sps.rankdata(-m, method="average") for m in boot])
    lo, hi = np.percentile(by_rank, [2.5, 97.5], axis=0)
    for r in ranks:
        i = names.index(r.system)
        assert r.rank_ci == pytest.approx([lo[i], hi[i]])
        assert r.rank == sps.rankdata(-observed, method="average")[i]


def test_bootstrap_uncertainty_equals_a_plain_numpy_bootstrap():
    values = list(_scores(9, 25, [0.0], ties=False)[:, 0] - 0.5)
    u = bootstrap_uncertainty(values, resamples=1200, seed=3, unit="topics")
    means = _resampled_means([np.array(values)[:, None]], 1200, 3)[:, 0, 0]
    assert u.ci95 == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert u.se == pytest.approx(means.std(ddof=1)) and u.n == 25 and u.estimate is None
    assert "bootstrap over topics, 1200 resamples, seed 3" in u.method
    assert bootstrap_uncertainty([0.3]) is None and bootstrap_uncertainty([0.1, float("nan")]) is None
