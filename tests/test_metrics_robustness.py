"""``harness.metrics.Robustness`` (InstructIR's Robustness@k, shared by the InstructIR and InfoSearch plugins):
the minimum per group, under each grouping, against nDCG@10 computed directly with pytrec_eval."""

from __future__ import annotations

import math

import pytest

from harness import Dataset, HarnessError, MetricInput, Qrels, Query, Run
from harness.metrics import Robustness

#: one relevant document per query; a_2's text is b's base query; one meta group for all three
QUERIES = {"a_1": Query("a_1", "query a", "inst 1", {"group": "g"}),
           "a_2": Query("a_2", "query b", "inst 2", {"group": "g"}),
           "b_1": Query("b_1", "query b ", "inst 3", {"group": "g"})}
QRELS = Qrels({"a_1": {"d1": 1}, "a_2": {"d2": 1}, "b_1": {"d3": 1}})
RUN = Run.from_order({"a_1": ["x", "y", "d1"], "a_2": ["x", "y", "z", "d2"], "b_1": ["x", "d3"]})


def _ndcg() -> dict[str, float]:
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(QRELS.as_int_dict(), {"ndcg_cut.10"})
    return {q: v["ndcg_cut_10"] for q, v in ev.evaluate(RUN.to_dict()).items()}


@pytest.mark.parametrize(("group", "groups"), [
    ("id", [["a_1", "a_2"], ["b_1"]]),            # MTEB: qid.split("_")[0]
    ("text", [["a_1"], ["a_2", "b_1"]]),          # the authors: the base query text (stripped)
    ("meta", [["a_1", "a_2", "b_1"]]),            # InfoSearch: meta["group"]
])
def test_minimum_per_group(group, groups):
    """nDCG@10: a_1 target at rank 3 -> 0.5, a_2 rank 4 -> 1/log2(5) = 0.431, b_1 rank 2 -> 1/log2(3) = 0.631.
    Robustness@10: id (0.431 + 0.631) / 2 = 0.531; text (0.5 + 0.431) / 2 = 0.465; meta 0.431."""
    ndcg = _ndcg()
    assert ndcg == pytest.approx({"a_1": 0.5, "a_2": 1 / math.log2(5), "b_1": 1 / math.log2(3)})
    hand = {"id": (1 / math.log2(5) + 1 / math.log2(3)) / 2, "text": (0.5 + 1 / math.log2(5)) / 2,
            "meta": 1 / math.log2(5)}
    inp = MetricInput({"default": RUN}, {"default": QRELS}, Dataset.single("t", {}, QUERIES, QRELS))
    res = Robustness(cutoff=10, group=group).compute(inp)
    want = sum(min(ndcg[q] for q in g) for g in groups) / len(groups)
    assert want == pytest.approx(hand[group])
    assert res.aggregate == {"Robustness@10": pytest.approx(want)}
    assert res.details == {"Robustness@10 groups": float(len(groups))}


def test_a_grouping_that_does_not_exist_is_refused():
    with pytest.raises(HarnessError, match="group must be one of id, text, meta"):
        Robustness(group="instruction")
