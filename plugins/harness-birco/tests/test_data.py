"""BIRCO data: tasks, pools, objectives, E5 candidates, files, and the paper's E5 figures."""

from __future__ import annotations

import re

import pytest
from harness import DataError, evaluate

import harness_birco
from harness_birco.data import load_birco, read_ranks, read_set
from harness_birco.objectives import OBJECTIVES

#: Table 5/7: E5-large-v2 nDCG@10 / R@5 (x100)
PAPER_E5 = {"arguana": (43.5, 62.0), "clinical-trial": (29.4, 10.5), "relic": (11.1, 14.9), "wtb": (36.6, 39.9)}
SIZES = {"arguana": (100, 50, 51), "clinical-trial": (50, 40, 153), "relic": (100, 50, 51), "wtb": (100, 50, 51)}


@pytest.mark.parametrize("task", sorted(PAPER_E5))
def test_e5_figures_reproduced_through_evaluate(birco_dir, task):
    res = evaluate(f"birco:{task}", progress=False)
    ndcg, r5 = PAPER_E5[task]
    u = res.uncertainty
    assert set(res.metrics) == {"birco-ndcg@10", "birco-recall@5"}  # no SE or count among the metrics
    assert abs(u["birco-ndcg@10"].estimate * 100 - ndcg) <= u["birco-ndcg@10"].se * 100
    assert abs(u["birco-recall@5"].estimate * 100 - r5) <= u["birco-recall@5"].se * 100
    # in fact the bootstrap means round to the printed figures exactly
    assert round(u["birco-ndcg@10"].estimate * 100, 1) == ndcg
    assert round(u["birco-recall@5"].estimate * 100, 1) == r5
    assert u["birco-ndcg@10"].method == "bootstrap, 1000 resamples, seed 42"


@pytest.mark.parametrize("task", sorted(SIZES))
def test_test_sets(birco_dir, task):
    ds = load_birco(task)
    n, lo, hi = SIZES[task]
    qs = ds.queries["default"]
    assert len(qs) == n
    pools = ds.qrels["default"]
    assert min(len(p) for p in pools.values()) == lo and max(len(p) for p in pools.values()) == hi
    cand = ds.candidates["default"]
    for q in qs:
        assert sorted(cand.doc_ids(q)) == sorted(pools[q])  # E5 order is a permutation of the pool
        assert qs[q].instruction == OBJECTIVES[task] and qs[q].meta["objective"] == OBJECTIVES[task]
    assert ds.meta["objective"] == OBJECTIVES[task]
    assert len(ds.identity["files"]) == 2
    assert not ds.validate()


def test_doris_mae_dev_fractional(birco_dir):
    ds = load_birco("doris-mae", "dev")
    grades = [g for p in ds.qrels["default"].values() for g in p.values()]
    assert len(ds.queries["default"]) == 40
    assert any(0 < g < 1 for g in grades) and all(isinstance(g, float) for g in grades)
    res = evaluate("birco:doris-mae", progress=False)
    assert res.uncertainty["birco-recall@5"].n < 40  # queries without a grade >= 1 are skipped


def test_dev_sets_load(birco_dir):
    for task in ("clinical-trial", "wtb"):
        ds = load_birco(task, "dev")
        assert ds.candidates["default"].doc_ids(next(iter(ds.queries["default"])))


def test_objectives_verbatim_from_readme(birco_dir):
    text = (birco_dir / "BIRCO_README.md").read_text(encoding="utf-8")
    heads = {"DORIS-MAE": "doris-mae", "ArguAna": "arguana", "WhatsThatBook": "wtb", "RELIC": "relic",
             "Clinical-Trial": "clinical-trial"}
    for head, key in heads.items():
        m = re.search(rf"^### {re.escape(head)}:\s*\n\s*\n(.+?)\n", text, flags=re.M)
        assert m and m.group(1).strip() == OBJECTIVES[key], head


def test_task_files_match_shasums(data_dir):
    sums_file = data_dir / "SHA256SUMS"
    if not sums_file.is_file():
        pytest.skip("no SHA256SUMS in the data folder")
    sums = {line.split()[1].removeprefix("./"): line.split()[0] for line in sums_file.read_text().splitlines()
            if line.strip()}
    for rel, (sha, size) in harness_birco.FILES.items():
        assert sums[rel] == sha, rel
        assert (data_dir / rel).stat().st_size == size
    for t in harness_birco.TASKS:
        task = harness_birco.birco_task(t)
        assert task.files and all(f.url.startswith("https://") and f.sha256 for f in task.files)
        assert task.depth >= 1000 and task.first_stage == "candidates" and task.query_format == "{text}"
    suite = harness_birco.birco_suite()
    assert suite.tasks == [f"birco:{t}" for t in harness_birco.TEST_TASKS]


def test_bad_task_and_ranks_file(birco_dir, tmp_path):
    import pickle

    with pytest.raises(DataError, match="unknown BIRCO task"):
        load_birco("nope")
    ranks = tmp_path / "ranks.pickle"
    ds = load_birco("relic")
    cand = ds.candidates["default"]
    order = {q: cand.doc_ids(q)[::-1] for q in cand}
    order[next(iter(order))] = order[next(iter(order))][:-1]  # one query loses a document
    ranks.write_bytes(pickle.dumps(order))
    with pytest.raises(DataError, match="not a permutation"):
        evaluate("birco:relic", rerankers=[f"birco-ranks:path={ranks}"], progress=False)


def test_suite_and_rank_file(birco_dir, tmp_path):

    res = evaluate("birco", progress=False, limit=5)
    assert set(res.members) == {f"birco:{t}" for t in harness_birco.TEST_TASKS}
    vals = [r.metrics["birco-ndcg@10"] for r in res.members.values()]
    assert res.metrics["birco-ndcg@10"] == pytest.approx(sum(vals) / len(vals))
    # a rank file in BIRCO's format holding the E5 order scores exactly as the candidates
    from harness_birco.unpickler import load

    e5 = birco_dir / "wtb" / "e5_rank.pickle"
    a = evaluate("birco:wtb", rerankers=[f"birco-ranks:path={e5}"], progress=False)
    b = evaluate("birco:wtb", progress=False)
    assert a.metrics == b.metrics
    assert load(e5)


GOOD_SET = {"query": {"q1": "text"}, "corpus": {"d1": "doc", "d2": "doc 2"}, "qrel": {"q1": {"d1": 1, "d2": 0}}}


@pytest.mark.parametrize(("raw", "message"), [
    ([GOOD_SET], r"expected a dict with keys 'query', 'corpus', 'qrel', got a list"),
    ({"query": {}, "corpus": {}}, r"got a dict without \['qrel'\]"),
    ({**GOOD_SET, "query": [("q1", "text")]}, r"'query': expected a dict \{id: text\}, got list"),
    ({**GOOD_SET, "corpus": {"d1": ["doc"]}}, r"'corpus'\['d1'\]: expected a str text, got list"),
    ({**GOOD_SET, "corpus": {None: "doc"}}, r"'corpus' key: expected a str \(or int\) id, got NoneType"),
    ({**GOOD_SET, "qrel": {"q1": ["d1", "d2"]}}, r"'qrel'\['q1'\]: expected a dict \{cid: relevance\}, got list"),
    ({**GOOD_SET, "qrel": {"q1": {"d1": "1"}}}, r"'qrel'\['q1'\]\['d1'\]: expected a number as relevance, got str"),
    ({**GOOD_SET, "qrel": {"q1": {"d1": None}}}, r"expected a number as relevance, got NoneType"),
])
def test_set_of_the_wrong_shape_is_a_data_error(tmp_path, raw, message):
    import pickle

    path = tmp_path / "test_set.pickle"
    path.write_bytes(pickle.dumps(raw))
    with pytest.raises(DataError, match=message) as err:
        read_set(path)
    assert str(path) in str(err.value)


def test_set_of_the_right_shape(tmp_path):
    import pickle

    path = tmp_path / "test_set.pickle"
    path.write_bytes(pickle.dumps({**GOOD_SET, "qrel": {7: {"d1": True, "d2": 0.5}}, "query": {7: "text"}}))
    assert read_set(path) == ({"7": "text"}, GOOD_SET["corpus"], {"7": {"d1": 1, "d2": 0.5}})


@pytest.mark.parametrize(("raw", "message"), [
    (["q1", ["d1"]], r"expected a dict \{qid: \[cid, \.\.\.\]\}, got list"),
    ({"q1": "d1 d2"}, r"ranking of query 'q1': expected a list of document ids, got str"),
    ({"q1": {"d1": 1}}, r"ranking of query 'q1': expected a list of document ids, got dict"),
    ({"q1": ["d1", 2.5]}, r"ranking of query 'q1': expected a str \(or int\) id, got float"),
    ({"q1": ["d1", "d1"]}, r"1 repeated document ids"),
])
def test_ranks_of_the_wrong_shape_are_a_data_error(tmp_path, raw, message):
    import pickle

    path = tmp_path / "e5_rank.pickle"
    path.write_bytes(pickle.dumps(raw))
    with pytest.raises(DataError, match=message) as err:
        read_ranks(path)
    assert str(path) in str(err.value)
