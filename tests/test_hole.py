"""``Hole@k``: hand counts on a small case (ties in trec_eval's order, a short ranking, a query without
qrels), MTEB's own ``hole`` for the corpus scope, ir-measures' Judged@k for full rankings, the name
resolved through the registry, and a count from the DL19 files."""

from __future__ import annotations

import pytest

from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError
from harness.concepts.protocols import MetricInput
from harness.concepts.qrels import Qrels
from harness.concepts.run import Run
from harness.metrics.hole import HoleMetric, hole_per_query, parse_hole

# q1: d3 and d2 tie at 0.5; trec_eval's order puts d3 first (document id descending)
RUN = {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.5, "d4": 0.1}, "q2": {"d5": 1.0, "d1": 0.8}, "q3": {"d9": 1.0}}
QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d9": 2}}


def compute(k: int, scope: str = "pair"):
    qrels = Qrels(QRELS)
    return HoleMetric(k, scope).compute(MetricInput({"default": Run.from_scores(RUN)}, {"default": qrels},
                                                    Dataset.single("t", {}, {}, qrels)))


def test_pair_holes_equal_a_hand_count():
    res = compute(2)
    # q1 top 2: d1 (judged), d3 (not) -> 1/2; q2 top 2: d5, d1, neither judged for q2 -> 2/2; q3 has no qrels
    assert res.per_query == {"q1": {"Hole@2": 0.5}, "q2": {"Hole@2": 1.0}}
    assert res.aggregate == {"Hole@2": 0.75}
    # k beyond a ranking's length still divides by k (MTEB's rule): q2 has 2 documents, both holes -> 2/3
    assert compute(3).per_query["q2"] == {"Hole@3": pytest.approx(2 / 3)}


def test_corpus_holes_equal_a_hand_count_and_mtebs_hole():
    res = compute(2, "corpus")
    # judged anywhere: d1, d2, d9. q1: d1, d3 -> 1/2; q2: d5, d1 -> 1/2; q3: d9 -> 0 (over k = 2)
    assert res.per_query == {"q1": {"Hole@2:scope=corpus": 0.5}, "q2": {"Hole@2:scope=corpus": 0.5},
                             "q3": {"Hole@2:scope=corpus": 0.0}}
    metrics = pytest.importorskip("mteb._evaluators.retrieval_metrics", reason="needs mteb (the test extra)")
    theirs = metrics.hole(QRELS, RUN, [1, 2, 3])
    for k in (1, 2, 3):
        ours = hole_per_query(RUN, QRELS, k, "corpus")
        assert [ours[q] for q in RUN] == pytest.approx(theirs[f"Hole_at_{k}"])


def test_pair_holes_are_one_minus_judged_on_full_rankings():
    import ir_measures

    run = {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.4, "d4": 0.1}, "q2": {"d5": 1.0, "d1": 0.8, "d9": 0.7, "d0": 0.6}}
    judged = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 3], QRELS, run)}
    assert hole_per_query(run, QRELS, 3) == pytest.approx({q: 1 - v for q, v in judged.items()})


def test_names_resolve_through_the_registry():
    from harness.context import Context
    from harness.metrics.resolve import resolve_metrics

    metrics = resolve_metrics(Context.create().registry, ["nDCG@10", "Hole@10", "Hole@5:scope=corpus"])
    assert [m.names for m in metrics] == [["nDCG@10"], ["Hole@10"], ["Hole@5:scope=corpus"]]
    assert parse_hole("Hole@7").k == 7 and parse_hole("nDCG@7") is None
    with pytest.raises(HarnessError):
        HoleMetric(0)
    with pytest.raises(HarnessError, match="scope"):
        HoleMetric(5, "world")


def test_hole_on_dl19_equals_a_count_from_the_files(data_dir):
    import json

    from harness.formats.trec import read_qrels
    from harness.metrics.run_scores import score_run

    qrels_path = data_dir / "trec-dl" / "qrels.dl19-passage.txt"
    judged: dict[str, set[str]] = {}
    for line in qrels_path.read_text().splitlines():
        qid, _, doc, _ = line.split()
        judged.setdefault(qid, set()).add(doc)
    entries = json.loads((data_dir / "trec-dl" / "bm25_top100.dl19.json").read_text())
    run = {str(e["hits"][0]["qid"]): {str(h["docid"]): float(h["score"]) for h in e["hits"]} for e in entries}
    counts = []
    for qid, hits in run.items():
        top = sorted(hits.items(), key=lambda x: (x[1], x[0]), reverse=True)[:100]
        counts.append(sum(d not in judged[qid] for d, _ in top) / 100)
    res = score_run(Run.from_scores(run), read_qrels(qrels_path), ["Hole@100", "Hole@10"])
    assert res.aggregate["Hole@100"] == pytest.approx(sum(counts) / len(counts))
    assert res.aggregate["Hole@10"] == 0.0  # the pool of 2019 judged every BM25 top 10
