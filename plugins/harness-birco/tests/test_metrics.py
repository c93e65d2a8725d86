"""BIRCO's metrics: the notes' worked example, the permutation check, the bootstrap, the random baseline."""

from __future__ import annotations

import math

import pytest
from harness import DataError, Dataset, MetricInput, Qrels, Run, Uncertainty

from harness_birco.baselines import RandomOrder
from harness_birco.metrics import BircoNDCG, BircoRecall, bootstrap, ndcg, recall


def _worked():
    grades = {"A": 2, "B": 2, "C": 1, "D": 1, **{f"x{i}": 0 for i in range(8)}}
    ranking = ["x0", "A", "C", "x1", "B", "x2", "x3", "x4", "x5", "x6", "x7", "D"]
    return grades, ranking


def test_worked_example():
    grades, ranking = _worked()
    assert round(ndcg(ranking, grades, 10), 4) == 0.6048
    assert recall(ranking, grades, 5) == 0.75
    dcg = 2 / math.log2(3) + 1 / math.log2(4) + 2 / math.log2(6)
    idcg = 2 + 2 / math.log2(3) + 1 / 2 + 1 / math.log2(5)
    assert ndcg(ranking, grades, 10) == pytest.approx(dcg / idcg)


def test_binary_gold_at_rank_3_and_fractional_grades():
    grades = {"g": 1, **{f"x{i}": 0 for i in range(49)}}
    assert ndcg(["x0", "x1", "g"] + [f"x{i}" for i in range(2, 49)], grades) == pytest.approx(0.5)
    frac = {"a": 0.4, "b": 1.6, "c": 0.0}  # linear gain on the raw fraction, ideal from the whole pool
    assert ndcg(["a", "b", "c"], frac) == pytest.approx((0.4 + 1.6 / math.log2(3)) / (1.6 + 0.4 / math.log2(3)))
    assert recall(["a", "c", "b"], frac, 2) == 0.0 and recall(["b"], frac, 5) == 1.0
    assert recall(["a"], {"a": 0.4}, 5) is None  # no relevant document: skipped
    many = {f"r{i}": 1 for i in range(8)}
    assert recall(list(many), many, 5) == 5 / 8  # not capped by min(k, |R|)


def _input(run, qrels):
    ds = Dataset.single("t", {}, {}, Qrels(qrels))
    return MetricInput({"default": Run.from_order(run)}, {"default": Qrels(qrels)}, ds)


def test_metric_objects_keys_and_bootstrap():
    grades, ranking = _worked()
    qrels = {"q1": grades, "q2": {"A": 1, "B": 0}, "q3": {"A": 0.5, "B": 0}}
    run = {"q1": ranking, "q2": ["B", "A"], "q3": ["A", "B"]}
    res = BircoNDCG(cutoff=10).compute(_input(run, qrels))
    assert set(res.aggregate) == {"birco-ndcg@10"}  # the bootstrap is the value's uncertainty, not a metric
    vals = [ndcg(ranking, grades), 1 / math.log2(3), 1.0]
    assert res.aggregate["birco-ndcg@10"] == pytest.approx(sum(vals) / 3)
    b, se = bootstrap(vals)
    u = res.uncertainty["birco-ndcg@10"]
    assert u == Uncertainty(se=se, n=3, estimate=b, method="bootstrap, 1000 resamples, seed 42")
    assert u.ci95 is None and set(res.uncertainty) == {"birco-ndcg@10"}
    assert bootstrap(vals) == (b, se)  # seeded: repeatable
    rec = BircoRecall(cutoff=5).compute(_input(run, qrels))
    assert rec.uncertainty["birco-recall@5"].n == 2  # q3 has no grade >= 1
    assert set(rec.per_query) == {"q1", "q2"}


def test_bootstrap_matches_numpy_legacy_seed():
    import numpy as np

    vals = [0.1, 0.5, 0.9, 0.3, 0.0]
    np.random.seed(42)
    means = [np.mean(np.random.choice(vals, len(vals), replace=True)) for _ in range(1000)]
    assert bootstrap(vals) == pytest.approx((float(np.mean(means)), float(np.std(means))))


@pytest.mark.parametrize("ranking", [["A"], ["A", "B", "Z"], []])
def test_not_a_permutation_is_an_error(ranking):
    qrels = {"q1": {"A": 1, "B": 0}}
    ds = Dataset.single("t", {}, {}, Qrels(qrels))
    run = Run({"q1": [(d, 10.0 - i) for i, d in enumerate(ranking)]}) if ranking else Run({})
    with pytest.raises(DataError, match="not a permutation"):
        BircoNDCG().compute(MetricInput({"default": run}, {"default": Qrels(qrels)}, ds))


def test_random_baseline_expectation():
    """One relevant document in a pool of 50: E[nDCG@10] = 4.5436/50 = 0.0909 (notes §4)."""
    pool = [f"d{i}" for i in range(50)]
    grades = {d: int(d == "d0") for d in pool}
    run = Run.from_order({f"q{i}": pool for i in range(2000)})
    shuffled = RandomOrder(seed=1).rerank({}, run, {})
    vals = [ndcg(shuffled.doc_ids(q), grades) for q in shuffled]
    assert sum(vals) / len(vals) == pytest.approx(4.5436 / 50, abs=0.006)
    assert shuffled.doc_ids("q0") == RandomOrder(seed=1).rerank({}, run, {}).doc_ids("q0")  # deterministic


def test_rank_file_with_a_repeated_id_is_an_error(tmp_path):
    """A Run cannot hold a repeated document, so repeats are caught when a rank file is read."""
    import pickle

    from harness_birco.baselines import RankFile

    path = tmp_path / "r.pickle"
    path.write_bytes(pickle.dumps({"q1": ["A", "A", "B"]}))
    with pytest.raises(DataError, match="repeated"):
        RankFile(str(path))
