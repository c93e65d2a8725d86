"""InfoSearch metrics: the notes' worked example by hand-computed values, every branch of WISE and
SICR, p-MRR, the missing-document rule, Robustness@10."""

from __future__ import annotations

import math

import pytest
from harness import Dataset, Document, HarnessError, MetricInput, Qrels, Query, Run

from harness_infosearch.metrics import (
    PMRR,
    SICR,
    WISE,
    GoldRank,
    Robustness,
    pmrr_doc,
    sicr_indicator,
    wise_ideal,
    wise_penalty,
    wise_reward,
    wise_score,
)

MODES = ("og", "changed", "reversed")
LENGTH = 50  # every run lists 50 documents


def _ranked(placed: dict[str, tuple[int, float]]) -> list[tuple[str, float]]:
    """A 50-document list with the given documents at the given 1-based ranks and scores."""
    slots: list[tuple[str, float] | None] = [None] * LENGTH
    for doc, (rank, score) in placed.items():
        slots[rank - 1] = (doc, score)
    return [s if s is not None else (f"filler{i}", 0.3) for i, s in enumerate(slots, 1)]


# (R_ori, R_ins, R_rev), (S_ori, S_ins, S_rev) of the gold document; N = 3 for every query
WORKED = {
    "q1": ((3, 1, 7), (0.80, 0.86, 0.75)),
    "q2": ((5, 2, 4), (0.5, 0.5, 0.5)),
    "q3": ((2, 6, 1), (0.5, 0.5, 0.5)),
    "q4": ((12, 4, 30), (0.70, 0.74, 0.60)),
    "q5": ((25, 10, 40), (0.50, 0.49, 0.40)),
    "q6": ((4, 8, 9), (0.5, 0.5, 0.5)),
}


def _worked_input() -> MetricInput:
    runs: dict[str, dict[str, list]] = {m: {} for m in MODES}
    qrels: dict[str, dict[str, dict[str, int]]] = {m: {} for m in MODES}
    for qid, (ranks, scores) in WORKED.items():
        for i, m in enumerate(MODES):
            placed = {f"{qid}-gold": (ranks[i], scores[i])}
            if qid == "q1" and m == "og":  # q1's other positives: 1 -> 4 and 2 -> 2
                placed |= {"q1-a": (1, 0.9), "q1-b": (2, 0.85)}
            if qid == "q1" and m == "changed":
                placed |= {"q1-a": (4, 0.7), "q1-b": (2, 0.8)}
            runs[m][qid] = _ranked(placed)
        gold, a, b = f"{qid}-gold", f"{qid}-a", f"{qid}-b"
        qrels["og"][qid] = {gold: 1, a: 1, b: 1}
        qrels["changed"][qid] = {gold: 1, a: 0, b: 0}
        qrels["reversed"][qid] = {gold: 0, a: 1, b: 1}
    ds = Dataset("worked", {}, {m: {q: Query(q, "core") for q in WORKED} for m in MODES},
                 {m: Qrels(v) for m, v in qrels.items()})
    return MetricInput({m: Run(v) for m, v in runs.items()}, dict(ds.qrels), ds)


def test_worked_example_wise_code_and_paper():
    inp = _worked_input()
    code = WISE().compute(inp)
    paper = WISE(first_case="paper").compute(inp)
    assert round(code.aggregate["WISE"] * 100, 1) == -5.5
    assert round(paper.aggregate["WISE-paper"] * 100, 1) == -4.3
    assert WISE(first_case="paper").names == ["WISE-paper", "WISE-paper-ideal", "WISE-paper-per"]
    assert WISE(cutoff=10).names[0] == "WISE@10"
    assert code.aggregate["WISE"] == pytest.approx(-0.331422 / 6, abs=1e-6)
    assert paper.aggregate["WISE-paper"] == pytest.approx(-0.260711 / 6, abs=1e-6)
    expected_code = {"q1": 1 - math.sqrt(2) / 20, "q2": -0.2, "q3": -1.0, "q4": (1 - math.sqrt(8) / 20) / 2,
                     "q5": 0.01, "q6": -0.5}
    for q, v in expected_code.items():
        assert code.per_query[q]["WISE"] == pytest.approx(v)
    assert paper.per_query["q1"]["WISE-paper"] == 1.0
    # Ideal WISE (code) = mean(0.929289, 0.9, 1, 0.834169, 0.01, 0.913397) = 76.4; Per. = (ideal - act) / ideal
    ideal = code.aggregate["WISE-ideal"]
    assert round(ideal * 100, 1) == 76.4
    assert ideal == pytest.approx((0.929289 + 0.9 + 1 + 0.834169 + 0.01 + 0.913397) / 6, abs=1e-6)
    assert code.aggregate["WISE-per"] == pytest.approx((ideal - code.aggregate["WISE"]) / ideal)


def test_worked_example_sicr_pmrr_and_ranks():
    inp = _worked_input()
    sicr = SICR().compute(inp)
    assert round(sicr.aggregate["SICR"] * 100, 1) == 33.3
    assert {q for q, v in sicr.per_query.items() if v["SICR"]} == {"q1", "q4"}
    assert SICR(rank1="paper").compute(inp).aggregate["SICR-paper"] == pytest.approx(2 / 6)
    pm = PMRR().compute(inp)
    assert pm.per_query["q1"]["p-MRR"] == pytest.approx(0.375)
    # the other queries' demoted documents are missing from both runs: rank 51 in both -> 0
    assert all(pm.per_query[q]["p-MRR"] == 0.0 for q in WORKED if q != "q1")
    ranks = GoldRank().compute(inp)
    assert ranks.aggregate["R_ori"] == pytest.approx((3 + 5 + 2 + 12 + 25 + 4) / 6)
    assert ranks.aggregate["R_ins"] == pytest.approx((1 + 2 + 6 + 4 + 10 + 8) / 6)
    assert ranks.aggregate["R_rev"] == pytest.approx((7 + 4 + 1 + 30 + 40 + 9) / 6)


def test_wise_reward_branches():
    # first case: code R_ori < N, paper R_ori <= N; needs R_ins == 1
    assert wise_reward(2, 1, n=3) == 1.0 and wise_reward(2, 1, n=3, first_case="paper") == 1.0
    assert wise_reward(3, 1, n=3) == pytest.approx(1 - math.sqrt(2) / 20)
    assert wise_reward(3, 1, n=3, first_case="paper") == 1.0
    assert wise_reward(2, 2, n=3, first_case="paper") == pytest.approx(1 / math.sqrt(2))  # R_ins != 1
    # R_ori == 1 rewards (the gold stays first): code 1 < N is false for N = 1
    assert wise_score(1, 1, 2, n=1) == 1.0 and wise_score(1, 1, 2, n=1, first_case="paper") == 1.0
    assert wise_score(1, 1, 2, n=2) == 1.0
    # sqrt, K = 20, the boundary R_ori = K and the 0.01 floor beyond it
    assert wise_reward(20, 4, n=2) == pytest.approx((1 - math.sqrt(16) / 20) / 2)
    assert wise_reward(21, 4, n=2) == 0.01
    assert wise_reward(21, 4, n=2, k=30) == pytest.approx((1 - math.sqrt(17) / 30) / 2)
    assert wise_ideal(12, n=3) == pytest.approx(1 - math.sqrt(11) / 20)
    assert wise_ideal(2, n=3) == 1.0 and wise_ideal(25, n=3) == 0.01


def test_wise_penalty_branches_in_order():
    assert wise_penalty(2, 6, 1) == -1.0  # R_rev < R_ori < R_ins, checked first
    assert wise_penalty(4, 8, 9) == -0.5  # R_ori <= R_ins
    assert wise_penalty(3, 3, 2) == 0.0  # R_ori == R_ins (and R_rev < R_ori): tie -> 0, not -1
    assert wise_penalty(5, 2, 4) == pytest.approx(-0.2)  # R_rev <= R_ori
    assert wise_penalty(5, 2, 5) == 0.0  # R_rev == R_ori
    assert wise_penalty(5, 8, 5) == pytest.approx(-3 / 8)  # R_rev == R_ori < R_ins: second branch
    # reward vs penalty: R_ins <= R_ori < R_rev
    assert wise_score(3, 3, 4, n=1) > 0  # R_ins == R_ori is still a reward
    assert wise_score(3, 1, 3, n=1) == 0.0  # R_rev == R_ori: penalty, third branch
    assert wise_score(3, 4, 9, n=1) == -0.25
    for args in [(1, 1, 1), (1, 2, 1), (7, 3, 2), (1, 50, 50), (100, 1, 101)]:
        assert -1 <= wise_score(*args, n=2) <= 1


def test_wise_bad_option():
    with pytest.raises(HarnessError):
        WISE(first_case="both")
    with pytest.raises(HarnessError):
        SICR(rank1="none")


@pytest.mark.parametrize(
    "ranks,scores,paper,code",
    [
        ((3, 1, 7), (0.8, 0.86, 0.75), True, True),  # every condition holds
        ((3, 3, 7), (0.8, 0.86, 0.75), False, False),  # R_ins == R_ori
        ((3, 1, 7), (0.8, 0.80, 0.75), False, False),  # S_ins == S_ori
        ((3, 1, 3), (0.8, 0.86, 0.75), False, False),  # R_rev == R_ori
        ((3, 1, 7), (0.8, 0.86, 0.80), False, False),  # S_rev == S_ori
        ((1, 1, 3), (0.81, 0.81, 0.60), False, True),  # rank-1 relaxation: S_ins >= S_ori
        ((1, 1, 3), (0.81, 0.90, 0.60), False, True),
        ((1, 2, 3), (0.81, 0.90, 0.60), False, False),  # relaxation needs R_ins == 1
        ((1, 1, 1), (0.81, 0.90, 0.60), False, False),  # ... and R_rev > 1
        ((1, 1, 3), (0.81, 0.80, 0.60), False, False),  # ... and S_ins >= S_ori
        ((1, 1, 3), (0.81, 0.90, 0.81), False, False),  # ... and S_ori > S_rev
    ],
)
def test_sicr_branches(ranks, scores, paper, code):
    assert sicr_indicator(ranks, scores, rank1="paper") is paper
    assert sicr_indicator(ranks, scores, rank1="code") is code


def test_pmrr_doc():
    assert pmrr_doc(10, 5) == -0.5 and pmrr_doc(100, 50) == -0.5  # FollowIR's examples
    assert pmrr_doc(1, 4) == 0.75 and pmrr_doc(2, 2) == 0.0
    assert pmrr_doc(5, 10) == 0.5


def _small(changed_hits, reversed_hits) -> MetricInput:
    ds = Dataset("s", {}, {m: {"q": Query("q", "core")} for m in MODES}, {
        "og": Qrels({"q": {"g": 1, "o": 1}}), "changed": Qrels({"q": {"g": 1, "o": 0}}),
        "reversed": Qrels({"q": {"g": 0, "o": 1}})})
    runs = {"og": Run({"q": [("x", 3.0), ("g", 2.0), ("o", 1.0)]}), "changed": Run({"q": changed_hits}),
            "reversed": Run({"q": reversed_hits})}
    return MetricInput(runs, dict(ds.qrels), ds)


def test_missing_gold_document_ranks_len_plus_one_with_score_zero():
    inp = _small([("x", 3.0), ("o", 2.0), ("y", 1.0)], [("g", 5.0)])
    ranks = GoldRank().compute(inp).aggregate
    assert (ranks["R_ori"], ranks["R_ins"], ranks["R_rev"]) == (2, 4, 1)
    # gold missing from changed: (R_ori, R_ins, R_rev) = (2, 4, 1) -> R_rev < R_ori < R_ins -> -1
    assert WISE().compute(inp).aggregate["WISE"] == -1.0
    # p-MRR over the demoted "o": rank 3 in og, 2 in changed
    assert PMRR().compute(inp).aggregate["p-MRR"] == pytest.approx(2 / 3 - 1)
    # gold missing from the reversed run of 2 documents: R_rev = 3 and S_rev = 0
    inp2 = _small([("g", 9.0), ("o", 1.0)], [("x", 1.0), ("o", 0.5)])
    assert GoldRank().compute(inp2).aggregate["R_rev"] == 3
    assert SICR().compute(inp2).aggregate["SICR"] == 1.0  # (2, 1, 3), scores (2.0, 9.0, 0.0)
    inp3 = _small([("g", 1.5), ("o", 1.0)], [("x", 1.0), ("o", 0.5)])
    assert SICR().compute(inp3).aggregate["SICR"] == 0.0  # S_ins 1.5 < S_ori 2.0


def test_cross_mode_metric_needs_three_modes():
    ds = Dataset.single("one", {}, {"q": Query("q", "t")}, Qrels({"q": {"d": 1}}))
    with pytest.raises(HarnessError, match="modes"):
        WISE().compute(MetricInput({"default": Run({"q": [("d", 1.0)]})}, dict(ds.qrels), ds))


def test_robustness_is_min_over_variants_per_core_query():
    corpus = {d: Document(d, d) for d in ("a", "b", "c")}
    queries = {"q1": Query("q1", "core one"), "q2": Query("q2", "core one"), "q3": Query("q3", "core two")}
    ds = Dataset("r", corpus, {"changed": queries}, {"changed": Qrels({"q1": {"a": 1}, "q2": {"b": 1},
                                                                       "q3": {"c": 1}})})
    run = Run({"q1": [("a", 3.0), ("b", 2.0)], "q2": [("a", 3.0), ("b", 2.0)], "q3": [("c", 1.0)]})
    res = Robustness(cutoff=10).compute(MetricInput({"changed": run}, dict(ds.qrels), ds))
    # core one: min(1.0, 1/log2(3)) ; core two: 1.0
    assert res.aggregate["Robustness@10"] == pytest.approx((1 / math.log2(3) + 1.0) / 2)


def test_pmrr_reports_a_bootstrap_interval_over_its_queries():
    """The value is unchanged; its uncertainty is a bootstrap over the per-query p-MRR values, the resamples
    drawn one at a time from the documented streams (harness.metrics.bootstrap) here."""
    import numpy as np

    pm = PMRR(resamples=1500, seed=3).compute(_worked_input())
    values = [pm.per_query[q]["p-MRR"] for q in WORKED]
    assert pm.aggregate["p-MRR"] == pytest.approx(0.375 / 6)
    x, means = np.array(values), []
    for seq, size in zip(np.random.SeedSequence(3).spawn(2), (1000, 500)):
        rng = np.random.Generator(np.random.PCG64(seq))
        means += [x[rng.integers(0, 6, size=6)].mean() for _ in range(size)]
    u = pm.uncertainty["p-MRR"]
    assert u.n == 6 and u.ci95 == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert u.se == pytest.approx(np.std(means, ddof=1))
    assert PMRR().config()["interval"] == {"method": "bootstrap over the scored queries", "resamples": 10_000,
                                           "seed": 0}
    with pytest.raises(HarnessError, match="resamples must be a whole number"):
        PMRR(resamples=0)
