"""Dev triplets by the released rules, and pairwise accuracy."""

from __future__ import annotations

import pytest
from harness import Dataset, MetricInput, Qrels, Run, evaluate

from harness_birco.triplets import PairwiseAccuracy, extract_triplets, pick_rule, query_triplets


def test_rules():
    assert sorted(query_triplets({"a": 1, "b": 0, "c": 0}, "binary")) == [("a", "b"), ("a", "c")]
    ct = query_triplets({"two": 2, "one": 1, "zero": 0}, "graded")
    assert ct == [("two", "one"), ("two", "zero"), ("one", "zero")]
    # DORIS: max 1.6 -> x > 0.8, and 0.8 <= y <= x - 0.25
    doris = query_triplets({"a": 1.6, "b": 1.2, "c": 0.9, "d": 0.5}, "doris")
    assert sorted(doris) == [("a", "b"), ("a", "c"), ("b", "c")]  # not (c, d): 0.5 < 0.8
    assert pick_rule({"q": {"a": 0.4}}) == "doris" and pick_rule({"q": {"a": 2, "b": 0}}) == "graded"
    assert pick_rule({"q": {"a": 1, "b": 0}}) == "binary"
    assert len(extract_triplets({"q": {"a": 1, **{f"n{i}": 0 for i in range(50)}}}, sample=10)) == 10


def test_pairwise_accuracy():
    qrels = Qrels({"q": {"a": 2, "b": 1, "c": 0}})
    ds = Dataset.single("t", {}, {}, qrels)
    run = Run.from_order({"q": ["b", "a", "c"]})
    res = PairwiseAccuracy().compute(MetricInput({"default": run}, {"default": qrels}, ds))
    assert res.aggregate == {"birco-pairwise": pytest.approx(2 / 3)} and res.details["birco-pairwise:triplets"] == 3


def test_dev_tasks(birco_dir):
    res = evaluate("birco-dev:clinical-trial", progress=False)
    assert 0 <= res.metrics["birco-pairwise"] <= 1 and res.metric_details["birco-pairwise:triplets"] > 100
    assert "birco-pairwise:triplets" not in res.metrics
