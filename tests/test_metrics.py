"""Standard measures: known values, trec_eval semantics, name resolution, bad input."""

from __future__ import annotations

import math

import pytest

from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError, UnknownComponentError
from harness.concepts.protocols import MetricInput
from harness.concepts.qrels import Qrels
from harness.concepts.run import Run
from harness.metrics.resolve import resolve_metrics
from harness.metrics.standard import StandardMetric
from harness.plugins.host import PluginHost


def compute(names, run, qrels):
    m = StandardMetric(names=names)
    return m.compute(MetricInput({"default": run}, {"default": qrels}, Dataset.single("t", {}, {}, qrels)))


def test_ifir_worked_example_ndcg20():
    # ifir_instfol notes: gold {d1, d4}, ranking d1..d4 -> (1 + 1/log2 5) / (1 + 1/log2 3) = 0.877
    res = compute(["nDCG@20"], Run.from_order({"q": ["d1", "d2", "d3", "d4"]}), Qrels({"q": {"d1": 1, "d4": 1}}))
    expected = (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert res.aggregate["nDCG@20"] == pytest.approx(expected, abs=1e-12)
    assert round(expected, 3) == 0.877


def test_infosearch_example_three_positives():
    # infosearch notes: positives at ranks 1, 3 and 12 -> 1.5 / 2.1309 = 0.7039
    order = [f"d{i}" for i in range(1, 13)]
    res = compute(["nDCG@10"], Run.from_order({"q": order}), Qrels({"q": {"d1": 1, "d3": 1, "d12": 1}}))
    assert res.aggregate["nDCG@10"] == pytest.approx(0.7039, abs=1e-4)


def test_graded_gain_is_linear_and_mrr_cut():
    run = Run.from_order({"a": ["x", "y", "z"], "b": ["u", "v", "w"]})
    qrels = Qrels({"a": {"y": 3, "z": 1}, "b": {"w": 2}})
    res = compute(["nDCG@3", "MRR@2", "MRR", "Recall@2", "P@1", "MAP"], run, qrels)
    dcg_a = 3 / math.log2(3) + 1 / math.log2(4)
    idcg_a = 3 + 1 / math.log2(3)
    ndcg_b = (2 / math.log2(4)) / 2
    assert res.per_query["a"]["nDCG@3"] == pytest.approx(dcg_a / idcg_a)
    assert res.aggregate["nDCG@3"] == pytest.approx((dcg_a / idcg_a + ndcg_b) / 2)
    assert res.per_query["a"]["MRR@2"] == 0.5 and res.per_query["b"]["MRR@2"] == 0.0
    assert res.per_query["b"]["MRR"] == pytest.approx(1 / 3)
    assert res.per_query["a"]["Recall@2"] == 0.5
    assert res.aggregate["P@1"] == 0.0


def test_ties_are_broken_as_trec_eval_does():
    # equal scores: trec_eval ranks by docid descending, so "b" comes before "a"
    run = Run({"q": [("a", 1.0), ("b", 1.0)]})
    res = compute(["MRR"], run, Qrels({"q": {"a": 1}}))
    assert res.aggregate["MRR"] == 0.5


def test_mean_is_over_run_queries_with_qrels():
    run = Run.from_order({"q1": ["d1"], "q2": ["d9"], "nojudgments": ["d1"]})
    qrels = Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}})
    res = compute(["P@1"], run, qrels)
    assert set(res.per_query) == {"q1", "q2"}
    assert res.aggregate["P@1"] == 0.5


def test_fractional_qrels_are_refused_clearly():
    with pytest.raises(HarnessError, match="fractional"):
        compute(["nDCG@10"], Run.from_order({"q": ["d"]}), Qrels({"q": {"d": 0.5}}))


def test_ir_measures_syntax_and_resolution():
    reg = PluginHost(load_entry_points=False).registry
    metrics = resolve_metrics(reg, ["nDCG@10", "AP(rel=2)@100", "Judged@10", "nDCG@10"])
    assert len(metrics) == 1 and metrics[0].names == ["nDCG@10", "AP(rel=2)@100", "Judged@10"]
    res = metrics[0].compute(MetricInput({"m": Run.from_order({"q": ["a", "b"]})},
                                         {"m": Qrels({"q": {"a": 1, "b": 2}})}, Dataset.single("t", {}, {}, Qrels())))
    assert res.aggregate["AP(rel=2)@100"] == 0.5  # only b counts as relevant, at rank 2
    assert res.aggregate["Judged@10"] == 1.0
    with pytest.raises(UnknownComponentError, match="nDCG@10"):
        resolve_metrics(reg, ["nDGC@10"])
