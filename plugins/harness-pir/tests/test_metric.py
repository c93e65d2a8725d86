"""p-Recall@k: the notes' worked example, the singleton policies, per-label and root-query recall
with the perspective bias, and resolution of ``p-recall@k`` through the registry."""

from __future__ import annotations

import math

import pytest
from harness import Document, HarnessError, MetricInput, PluginHost, Run
from harness.metrics import resolve_metrics

from harness_pir.data import build_dataset
from harness_pir.metric import PRecall

DOCS = {f"d{i}": Document(f"d{i}", f"text {i}") for i in range(1, 9)}

# (qid, root, label, gold, ranking) of the worked example (docs/pir.md), k = 2
EXAMPLE = [
    ("q1", "r1", "support", ["d1"], ["d2", "d1", "d3"]),
    ("q2", "r1", "oppose", ["d2"], ["d1", "d3", "d2"]),
    ("q3", "r2", "left", ["d4"], ["d4", "d5", "d6"]),
    ("q4", "r2", "right", ["d5"], ["d4", "d6", "d5"]),
    ("q5", "r2", "center", ["d6"], ["d6", "d4", "d5"]),
]
SINGLETON = ("q6", "r3", "left", ["d7"], ["d7", "d1", "d2"])


def _input(rows, root_runs=None):
    ds = build_dataset("example", "example", DOCS, [
        {"id": q, "text": f"{label} {root}", "root": root, "perspective": label, "label": label, "gold": gold}
        for q, root, label, gold, _ in rows], identity={}, root_queries=root_runs is not None)
    runs = {"default": Run.from_order({q: ranking for q, *_, ranking in rows})}
    if root_runs is not None:
        runs["root"] = Run.from_order(root_runs)
    return MetricInput(runs, dict(ds.qrels), ds)


def test_worked_example_mean_policy():
    res = PRecall(cutoff=2).compute(_input(EXAMPLE))
    assert res.aggregate["p-recall@2"] == pytest.approx((0.5 + 2 / 3) / 2)
    assert round(res.aggregate["p-recall@2"], 3) == 0.583
    assert res.aggregate["hit@2"] == pytest.approx(0.6)
    assert res.per_query["q1"] == {"hit@2": 1.0} and res.per_query["q2"] == {"hit@2": 0.0}
    assert res.aggregate["hit@2/left"] == 1.0 and res.aggregate["hit@2/right"] == 0.0
    assert res.aggregate["hit@2/label-macro"] == pytest.approx((1 + 0 + 1 + 0 + 1) / 5)


@pytest.mark.parametrize(("policy", "expected"), [
    ("mean", (0.5 + 2 / 3 + 1) / 3),  # 0.722
    ("zero", (0.5 + 2 / 3 + 0) / 3),  # 0.389, the authors' code (Table 2)
    ("drop", (0.5 + 2 / 3) / 2),  # 0.583
])
def test_singleton_policies(policy, expected):
    res = PRecall(cutoff=2, singleton=policy).compute(_input([*EXAMPLE, SINGLETON]))
    key = "p-recall@2" if policy == "mean" else f"p-recall@2:{policy}"
    assert res.aggregate[key] == pytest.approx(expected)
    assert {"mean": 0.722, "zero": 0.389, "drop": 0.583}[policy] == round(res.aggregate[key], 3)


def test_bad_options():
    with pytest.raises(HarnessError, match="singleton"):
        PRecall(singleton="max")
    with pytest.raises(HarnessError, match="cutoff"):
        PRecall(cutoff=0)


def test_root_queries_and_bias():
    # root ids are the first member's id: r1 -> q1, r2 -> q3
    inp = _input(EXAMPLE, root_runs={"q1": ["d2", "d1", "d3"], "q3": ["d8", "d7", "d5", "d4"]})
    assert set(inp.dataset.queries["root"]) == {"q1", "q3"}
    assert inp.dataset.qrels["root"]["q3"] == {"d4": 1, "d5": 1, "d6": 1}
    res = PRecall(cutoff=2).compute(inp)
    assert res.aggregate["root-hit@2"] == 0.5  # r1 hits (d2), r2 misses in the top 2
    # the one success's first gold is d2, the gold of the "oppose" query
    assert res.aggregate["root-share@2/oppose"] == 1.0 and res.aggregate["root-share@2/support"] == 0.0
    res4 = PRecall(cutoff=4).compute(inp)
    assert res4.aggregate["root-hit@4"] == 1.0
    assert res4.aggregate["root-share@4/right"] == 0.5 and res4.aggregate["root-share@4/oppose"] == 0.5
    shares = [v for n, v in res4.aggregate.items() if n.startswith("root-share@4/")]
    assert math.isclose(sum(shares), 1.0)
    assert res4.per_query["q3"]["root-hit@4"] == 1.0
    cfg = PRecall(cutoff=2)
    cfg.compute(inp)
    assert cfg.config()["roots"] == 2 and cfg.config()["root_successes"] == 1


def test_no_details():
    res = PRecall(cutoff=2, details=False).compute(_input(EXAMPLE, root_runs={"q1": ["d1"], "q3": ["d4"]}))
    assert set(res.aggregate) == {"p-recall@2", "hit@2", "root-hit@2"}


def test_family_resolves_with_cutoff():
    import harness_pir

    host = PluginHost(load_entry_points=False)
    host.register_plugin(harness_pir, "pir")
    (m,) = resolve_metrics(host.registry, ["p-recall@5"])
    assert isinstance(m, PRecall) and m.cutoff == 5 and m.singleton == "mean"
    (z,) = resolve_metrics(host.registry, ["p-recall@10:singleton=zero,details=false"])
    assert z.cutoff == 10 and z.singleton == "zero" and not z.details
