"""`harness compare` on real demo results and on synthetic results folders: alignment, missing
queries, Holm family, output formats."""

from __future__ import annotations

import json

import pytest

from harness.compare import align, compare, load_system, load_systems
from harness.compare.format import render_result
from harness.concepts.errors import HarnessError
from harness.testing.synthetic import write_results_folder, write_suite_folder

from .compare_cli import invoke as _invoke


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from harness.evaluation.pipeline import evaluate

    root = tmp_path_factory.mktemp("demo")
    for name, spec in [("bm25", "bm25"), ("bm25b", "bm25:k1=0.9,b=0.4"), ("bm25c", "bm25")]:
        evaluate("demo", retriever=spec, output=str(root / name), progress=False)
    return root


def test_demo_compare_json(demo):
    r = _invoke("compare", str(demo / "bm25"), str(demo / "bm25b"), str(demo / "bm25c"), "--format", "json",
                "-B", "2000", "--metric", "nDCG@10")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["baseline"] == "bm25"
    assert data["settings"]["family"].startswith("systems vs the baseline")
    (res,) = data["results"]
    assert res["task"] == "demo" and res["metric"] == "nDCG@10" and res["n_queries"] == 10
    by = {c["system"]: c for c in res["comparisons"]}
    # bm25c is the same configuration as the baseline: identical runs, p = 1, not NaN
    assert by["bm25c"]["p_randomization"] == 1.0 and by["bm25c"]["p_t"] == 1.0
    assert by["bm25c"]["ties"] == 10 and by["bm25c"]["diff"] == 0
    assert set(res["tukey"]) == {"bm25", "bm25b", "bm25c"}
    assert res["tukey"]["bm25"]["bm25c"] == 1.0


def test_demo_same_seed_same_output(demo):
    args = ["compare", str(demo / "bm25"), str(demo / "bm25b"), "-B", "1000", "--seed", "5", "--format", "json"]
    a, b = _invoke(*args), _invoke(*args)
    assert json.loads(a.output)["results"] == json.loads(b.output)["results"]


def test_formats(demo):
    systems = load_systems([str(demo / "bm25"), f"tuned={demo / 'bm25b'}"])
    assert systems[1].name == "tuned"
    res = compare(systems, permutations=500)
    table = render_result(res, "table")
    assert "bm25 (baseline)" in table and "tuned" in table and "Holm" in table
    md = render_result(res, "markdown")
    assert "| system | mean |" in md and "|---|---:|" in md
    tex = render_result(res, "latex")
    for word in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}"):
        assert word in tex
    assert "nDCG@10" in tex
    assert json.loads(render_result(res, "json"))["systems"][1]["name"] == "tuned"


def _pq(values: dict[str, float], metric: str = "nDCG@10") -> dict[str, dict[str, float]]:
    return {q: {metric: v} for q, v in values.items()}


def test_missing_queries_are_an_error_unless_filled(tmp_path):
    write_results_folder(tmp_path / "a", "t", _pq({"q1": 0.5, "q2": 0.4, "q3": 0.9}))
    write_results_folder(tmp_path / "b", "t", _pq({"q1": 0.6, "q2": 0.1}))
    systems = load_systems([str(tmp_path / "a"), str(tmp_path / "b")])
    with pytest.raises(HarnessError, match="q3.*--fill"):
        align(systems, "t", "nDCG@10")
    z = align(systems, "t", "nDCG@10", fill="zero")
    assert z.query_ids == ["q1", "q2", "q3"] and z.values[2] == [0.9, 0.0] and z.filled == {"a": 0, "b": 1}
    assert "filled with 0" in z.note()
    d = align(systems, "t", "nDCG@10", fill="drop")
    assert d.query_ids == ["q1", "q2"] and d.dropped == ["q3"] and "1 queries dropped" in d.note()
    r = _invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert r.exit_code == 2 and "--fill" in r.output
    r = _invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--fill", "zero", "--format", "json", "-B", "100")
    data = json.loads(r.output)
    assert data["settings"]["fill"] == "zero" and "filled with 0" in data["results"][0]["note"]


def test_query_undefined_everywhere_is_left_out(tmp_path):
    write_results_folder(tmp_path / "a", "t", {"q1": {"WISE": 0.5}, "q2": {"WISE": None}, "q3": {"WISE": -0.2}})
    write_results_folder(tmp_path / "b", "t", {"q1": {"WISE": 0.1}, "q2": {"WISE": None}, "q3": {"WISE": 0.3}})
    al = align(load_systems([str(tmp_path / "a"), str(tmp_path / "b")]), "t", "WISE")
    assert al.query_ids == ["q1", "q3"] and al.dropped == ["q2"]


def test_holm_family_is_systems_vs_baseline_per_metric(tmp_path):
    import numpy as np

    from harness.compare.stats import holm

    rng = np.random.default_rng(0)
    base = rng.uniform(0, 1, 30)
    folders = []
    for k, shift in enumerate([0.0, 0.05, 0.1, 0.2]):
        vals = np.clip(base + shift + rng.normal(0, 0.1, 30), 0, 1)
        pq = {f"q{i}": {"m1": float(v), "m2": float(1 - v)} for i, v in enumerate(vals)}
        folders.append(str(write_results_folder(tmp_path / f"s{k}", "t", pq)))
    res = compare(load_systems(folders), permutations=1000)
    assert [r.metric for r in res.results] == ["m1", "m2"]
    for r in res.results:
        raw = [c.p_randomization for c in r.comparisons]
        assert [c.p_randomization_holm for c in r.comparisons] == pytest.approx(holm(raw))
        assert len(r.comparisons) == 3


def test_suites_compare_per_member_task(tmp_path):
    members = {f"is:{d}": _pq({"q1": 0.1 * i, "q2": 0.2, "q3": 0.5}, "WISE") for i, d in enumerate(["a", "b", "c"])}
    write_suite_folder(tmp_path / "x", "is", members)
    write_suite_folder(tmp_path / "y", "is", {k: _pq({q: v + 0.1 for q, v in {"q1": 0.0, "q2": 0.2, "q3": 0.4}.items()},
                                                   "WISE") for k in members})
    s = load_system(tmp_path / "x")
    assert s.suite == "is" and list(s.tasks) == list(members)
    res = compare(load_systems([str(tmp_path / "x"), str(tmp_path / "y")]), permutations=200, tasks=["is:b"])
    assert [r.task for r in res.results] == ["is:b"]


def test_errors(tmp_path):
    write_results_folder(tmp_path / "a", "t1", _pq({"q1": 0.5}))
    write_results_folder(tmp_path / "b", "t2", _pq({"q1": 0.5}))
    with pytest.raises(HarnessError, match="share no task"):
        compare(load_systems([str(tmp_path / "a"), str(tmp_path / "b")]))
    with pytest.raises(HarnessError, match="no results.json"):
        load_system(tmp_path / "nothing")
    with pytest.raises(HarnessError, match="baseline"):
        compare(load_systems([str(tmp_path / "a"), str(tmp_path / "a")]), baseline="zzz")


def test_demo_report(demo, tmp_path):
    out = tmp_path / "report.html"
    r = _invoke("report", str(demo / "bm25"), str(demo / "bm25b"), "-o", str(out), "-B", "500")
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert html.count('<table class="metrics" data-task="demo">') == 1
    assert "default: rank" in html  # worst queries' rankings read from run.trec
    assert out.stat().st_size < 1_000_000


def test_compare_shows_the_metrics_own_uncertainty(tmp_path):
    """A metric reported with an SE (results.json "uncertainty") reads ``mean ± SE`` in every format."""
    from harness.testing.synthetic import birco_like

    folders = birco_like(tmp_path)
    res = compare(load_systems(folders), permutations=200, metrics=["birco-ndcg@10"], tasks=["birco:wtb"])
    (mc,) = res.results
    stored = load_system(folders[1]).tasks["birco:wtb"].uncertainty["birco-ndcg@10"]
    assert mc.uncertainty["rerank"]["se"] == stored.se and mc.uncertainty["rerank"]["n"] == 20
    table = render_result(res, "table")
    assert f"{mc.means['rerank']:.4f} ± {stored.se:.4f}" in table and "standard error the metric reported" in table
    assert " ± " in render_result(res, "markdown")
    tex = render_result(res, "latex")
    assert r"$\pm$" in tex and "±" not in tex
    data = json.loads(render_result(res, "json"))
    assert data["results"][0]["uncertainty"]["e5"]["method"] == "standard error of the mean over queries"
    # a metric without an uncertainty keeps its plain mean
    write_results_folder(tmp_path / "a", "t", _pq({"q1": 0.5, "q2": 0.4}))
    write_results_folder(tmp_path / "b", "t", _pq({"q1": 0.6, "q2": 0.1}))
    plain = compare(load_systems([str(tmp_path / "a"), str(tmp_path / "b")]), permutations=100)
    assert "±" not in render_result(plain, "table")


def test_compare_reads_version_1_results(tmp_path):
    """Folders written before schema 2: SE, bootstrap and count names are neither compared nor listed."""
    for k, name in enumerate(["old", "older"]):
        folder = tmp_path / name
        folder.mkdir()
        pq = {f"q{i}": {"birco-ndcg@10": 0.1 * i + 0.05 * k} for i in range(5)}
        (folder / "per_query.jsonl").write_text("".join(json.dumps({"query_id": q, **v}) + "\n" for q, v in pq.items()))
        (folder / "results.json").write_text(json.dumps({
            "task": {"name": "birco:arguana"}, "files": {"per_query": "per_query.jsonl"},
            "metrics": {"birco-ndcg@10": 0.2 + 0.05 * k, "birco-ndcg@10:bootstrap": 0.21, "birco-ndcg@10:se": 0.03,
                        "birco-ndcg@10:queries": 5.0}}))
    res = compare(load_systems([str(tmp_path / "old"), str(tmp_path / "older")]), permutations=100)
    assert [r.metric for r in res.results] == ["birco-ndcg@10"]
    assert res.results[0].uncertainty["old"] == {"se": 0.03, "ci95": None, "n": 5, "estimate": 0.21,
                                                 "method": "bootstrap"}
