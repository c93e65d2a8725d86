"""The statistics behind `harness compare`: randomization test against full enumeration, the
paired t-test against scipy, Holm against a textbook example, Tukey HSD, reproducibility."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from harness.compare.stats import (
    exact_randomization_p,
    holm,
    paired_summary,
    paired_t_test,
    randomization_test,
    randomized_tukey_hsd,
)

B = 10_000


def _pair(seed: int, n: int = 12, shift: float = 0.08) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    b = rng.uniform(0, 1, n)
    a = np.clip(b + shift + rng.normal(0, 0.15, n), 0, 1)
    return a, b


@pytest.mark.parametrize("seed,shift", [(1, 0.08), (2, 0.05), (3, 0.12), (4, 0.0)])
def test_randomization_matches_full_enumeration(seed, shift):
    a, b = _pair(seed, 12, shift)
    exact = exact_randomization_p(a, b)  # 2^12 sign flips
    p = randomization_test(a, b, permutations=B, seed=seed)
    se = math.sqrt(exact * (1 - exact) / B)
    assert abs(p - exact) <= 4 * se + 1 / (B + 1), (p, exact)


def test_exact_enumeration_small_case_by_hand():
    # d = (1, 2, 3): |sum| = 6; of the 8 sign flips only +++ and --- reach 6
    assert exact_randomization_p([1, 2, 3], [0, 0, 0]) == pytest.approx(2 / 8)
    # with B resamples the smallest possible p is 1/(B+1)
    assert randomization_test([1, 2, 3], [0, 0, 0], permutations=99, seed=0) >= 1 / 100


def test_same_seed_same_p_whatever_the_threads():
    a, b = _pair(7, 40)
    p1 = randomization_test(a, b, permutations=5_500, seed=42)
    p2 = randomization_test(a, b, permutations=5_500, seed=42)
    p4 = randomization_test(a, b, permutations=5_500, seed=42, workers=4)
    assert p1 == p2 == p4
    count = randomization_test(a, b, permutations=5_500, seed=43) * 5_501 - 1  # p = (c + 1) / (B + 1)
    assert abs(count - round(count)) < 1e-6


def test_p_value_form():
    a, b = _pair(8, 30, 0.3)  # a large effect: no resample reaches it
    assert randomization_test(a, b, permutations=999, seed=0) == pytest.approx(1 / 1000)


def test_identical_runs_give_p_one():
    x = [0.1, 0.5, 0.7, 0.2]
    assert randomization_test(x, x, permutations=500) == 1.0
    t = paired_t_test(x, x)
    assert (t.t, t.p) == (0.0, 1.0)
    s = paired_summary(x, x)
    assert (s.diff, s.ci_low, s.ci_high, s.effect_size, s.wins, s.ties, s.losses) == (0, 0, 0, 0, 0, 4, 0)
    p = randomized_tukey_hsd(np.array([x, x, x]).T, permutations=200)
    assert np.all(p == 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_t_test_equals_scipy(seed):
    a, b = _pair(seed, 25)
    ours = paired_t_test(a, b)
    ref = sps.ttest_rel(a, b)
    assert ours.t == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-10)
    assert ours.df == 24


def test_interval_and_effect_size_match_scipy():
    a, b = _pair(5, 20)
    s = paired_summary(a, b)
    ci = sps.ttest_rel(a, b).confidence_interval(0.95)
    assert (s.ci_low, s.ci_high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    d = a - b
    assert s.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    assert s.diff == pytest.approx(d.mean())
    assert s.wins + s.ties + s.losses == 20
    assert s.wins == int((d > 0).sum())


def test_holm_textbook_example():
    # Wikipedia, "Holm–Bonferroni method", example: p = 0.01, 0.04, 0.03, 0.005 at alpha = 0.05:
    # H4 (0.005 < 0.05/4) and H1 (0.01 < 0.05/3) are rejected; H3 (0.03 > 0.05/2) stops the procedure.
    p = [0.01, 0.04, 0.03, 0.005]
    adj = holm(p)
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [a <= 0.05 for a in adj] == [True, False, False, True]


def test_holm_edge_cases():
    assert holm([]) == []
    assert holm([0.2]) == [0.2]
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert holm([0.01, 0.01]) == [0.02, 0.02]


def test_tukey_with_two_systems_is_the_randomization_test():
    a, b = _pair(11, 12)
    exact = exact_randomization_p(a, b)
    p = randomized_tukey_hsd(np.stack([a, b], axis=1), permutations=B, seed=3)
    se = math.sqrt(exact * (1 - exact) / B)
    assert abs(p[0, 1] - exact) <= 4 * se + 1 / (B + 1)
    assert p[0, 1] == p[1, 0] and p[0, 0] == 1.0


def test_tukey_reproducible_and_detects_the_outlier_system():
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 1, 50)
    x = np.stack([base, base + rng.normal(0, 0.05, 50), base + 0.3 + rng.normal(0, 0.05, 50)], axis=1)
    p1 = randomized_tukey_hsd(x, permutations=2_000, seed=9)
    p2 = randomized_tukey_hsd(x, permutations=2_000, seed=9, workers=3)
    assert np.array_equal(p1, p2)
    assert p1[0, 2] < 0.01 and p1[1, 2] < 0.01 and p1[0, 1] > 0.05


def test_bad_input():
    with pytest.raises(ValueError):
        randomization_test([1, 2], [1])
    with pytest.raises(ValueError):
        randomization_test([1, float("nan")], [1, 2])
    with pytest.raises(ValueError):
        randomization_test([], [])
