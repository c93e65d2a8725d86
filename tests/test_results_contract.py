"""The results contract: results.json schema 2 written and read back by the one reader
(``harness.results.store``), version-1 files converted on read, uncertainty as fields of a metric,
and the tables that show it."""

from __future__ import annotations

import inspect
import json
import math
import re
from pathlib import Path

import pytest

from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.concepts.task import Task
from harness.concepts.uncertainty import Uncertainty
from harness.results.layout import SCHEMA_VERSION, ResultsLayout
from harness.results.result import EvalResult
from harness.results.store import read_results, v1_non_metric
from harness.results.table import lookup, metrics_table, summary_table

BOOT = "bootstrap, 1000 resamples, seed 42"


def _result(name: str = "t", ndcg: float = 0.4361, se: float = 0.0318) -> EvalResult:
    queries = {"q1": Query("q1", "first"), "q2": Query("q2", "second")}
    ds = Dataset.single(name, {}, queries, Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}}))
    run = Run.from_order({"q1": ["d1", "d2"], "q2": ["d1", "d2"]})
    task = Task(name=name, dataset="x", table=[("nDCG@10", "ndcg:estimate", 100), ("R@5", "recall", 100)])
    return EvalResult(
        task, ds, {"retriever": {"spec": "bm25", "name": "bm25"}}, {"ndcg": ndcg, "recall": 0.62, "nan": math.nan},
        {"q1": {"ndcg": 0.5, "recall": 1.0}, "q2": {"ndcg": 0.3722, "recall": 0.24}}, {"default": run}, {},
        {"unknown_ids": {}}, {"total": 1.0},
        uncertainty={"ndcg": Uncertainty(se=se, n=2, estimate=0.4354, method=BOOT),
                     "recall": Uncertainty(ci95=(0.5, 0.7), n=2)},
        metric_details={"ndcg_queries_skipped": 3.0})


# ------------------------------------------------------------------------------------------ Uncertainty


def test_uncertainty_dict_round_trip_and_checks():
    u = Uncertainty(se=0.1, ci95=(0.2, 0.6), n=40, estimate=0.41, method="bootstrap")
    assert Uncertainty.from_dict(u.to_dict()) == u
    assert Uncertainty.from_dict(json.loads(json.dumps(u.to_dict()))) == u  # ci95 comes back a list
    assert u.to_dict() == {"se": 0.1, "ci95": [0.2, 0.6], "n": 40, "estimate": 0.41, "method": "bootstrap"}
    assert Uncertainty(se=float("nan")).se is None and Uncertainty().empty
    assert Uncertainty(n=12.0).n == 12
    assert Uncertainty(se=0.05).interval(0.5) == (0.45, 0.55)
    assert u.interval(0.4) == (0.2, 0.6)  # the 95% interval wins over ± SE
    for bad in ({"se": "x"}, {"n": -1}, {"n": 1.5}, {"ci95": [1]}, {"what": 1}, [1, 2]):
        with pytest.raises(ValueError):
            Uncertainty.from_dict(bad)
    assert Uncertainty(se=0.0318, n=100).format(0.4361, n=True) == "0.4361 ± 0.0318 (n=100)"
    assert Uncertainty(ci95=(0.1, 0.3)).format(0.2, digits=2) == "0.20 [0.10, 0.30]"


# ------------------------------------------------------------------------------------------ schema 2


def test_schema_v2_round_trip(tmp_path):
    res = _result()
    path = ResultsLayout(tmp_path / "out").write(res)
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == SCHEMA_VERSION == 2
    assert raw["metrics"] == {"ndcg": 0.4361, "recall": 0.62, "nan": None}  # still plain name -> number
    assert raw["uncertainty"]["ndcg"] == {"se": 0.0318, "ci95": None, "n": 2, "estimate": 0.4354, "method": BOOT}
    assert raw["metric_details"] == {"ndcg_queries_skipped": 3.0}
    assert raw["files"] == {"run[default]": "run.trec", "per_query": "per_query.jsonl"}

    back = read_results(tmp_path / "out")  # a folder or the file
    assert back.source_version == 2 and back.path == path and not back.is_suite
    assert back.metrics == {"ndcg": 0.4361, "recall": 0.62, "nan": None}
    assert back.uncertainty == res.uncertainty
    assert back.metric_details == res.metric_details
    assert back.task_name == "t"
    assert back.run_files() == {"default": tmp_path / "out" / "run.trec"}
    assert back.read_per_query() == {"q1": {"ndcg": 0.5, "recall": 1.0}, "q2": {"ndcg": 0.3722, "recall": 0.24}}
    assert read_results(path).data == back.data


def test_suite_v2_round_trip(tmp_path):
    members = {"s:a": _result("s:a", 0.4, 0.03), "s:b": _result("s:b", 0.6, 0.05)}
    for name, r in members.items():
        ResultsLayout(tmp_path / name.replace(":", "_")).write(r)
    suite = EvalResult(Task(name="s", tasks=list(members)), metrics={"ndcg": 0.5, "recall": 0.62}, members=members)
    ResultsLayout(tmp_path).write_suite(suite)
    back = read_results(tmp_path)
    assert back.is_suite and back.source_version == 2
    assert back.data["tasks"]["s:b"]["uncertainty"]["ndcg"]["se"] == 0.05
    assert back.data["tasks"]["s:a"]["metric_details"] == {"ndcg_queries_skipped": 3.0}
    assert back.uncertainty == {}  # the mean over tasks carries none
    got = back.members()
    assert set(got) == set(members) and got["s:a"].uncertainty["ndcg"].se == 0.03


# ------------------------------------------------------------------------------------------ schema 1


V1_BIRCO = {  # what harness wrote before schema 2 (no schema_version; uncertainty flattened into names)
    "harness_version": "0.1.0", "task": {"name": "birco:arguana"},
    "components": {"retriever": {"spec": "candidates"}},
    "metrics": {"birco-ndcg@10": 0.4361, "birco-ndcg@10:bootstrap": 0.4354, "birco-ndcg@10:se": 0.0318,
                "birco-ndcg@10:queries": 100.0, "birco-recall@5": 0.62, "birco-recall@5:se": 0.0483,
                "nDCG@10[og]": 0.3, "nDCG@10:se[og]": 0.02,
                "instfol": 12.5, "instfol_L1": 10.0, "instfol_queries": 30.0, "instfol_queries_skipped": 1.0,
                "instfol_positions_dropped": 4.0, "birco-pairwise:triplets": 120.0, "p-recall@5:zero": 0.4},
    "files": {"per_query": "per_query.jsonl", "run[default]": "run.trec"},
}


def test_v1_names():
    assert v1_non_metric("birco-ndcg@10:se") == "se" and v1_non_metric("nDCG@10:se[og]") == "se"
    assert v1_non_metric("birco-ndcg@10:bootstrap") == "estimate" and v1_non_metric("x:queries") == "n"
    assert v1_non_metric("instfol@10_positions_dropped") == "count" and v1_non_metric("instfol_queries") == "count"
    for metric in ("birco-ndcg@10", "instfol_L1", "p-recall@5:zero", "nDCG@10[og]", "WISE", "hit@5/label-macro"):
        assert v1_non_metric(metric) is None


def test_v1_file_converts_on_read(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(V1_BIRCO))
    (tmp_path / "per_query.jsonl").write_text(
        json.dumps({"query_id": "q1", "birco-ndcg@10": 0.5, "birco-ndcg@10:se": 0.1}) + "\n")
    got = read_results(tmp_path)
    assert got.source_version == 1 and got.data["schema_version"] == 2
    assert got.metrics == {"birco-ndcg@10": 0.4361, "birco-recall@5": 0.62, "nDCG@10[og]": 0.3, "instfol": 12.5,
                           "instfol_L1": 10.0, "p-recall@5:zero": 0.4}
    assert got.uncertainty == {
        "birco-ndcg@10": Uncertainty(se=0.0318, n=100, estimate=0.4354, method="bootstrap"),
        "birco-recall@5": Uncertainty(se=0.0483),
        "nDCG@10[og]": Uncertainty(se=0.02)}
    assert got.metric_details == {"instfol_queries": 30.0, "instfol_queries_skipped": 1.0,
                                  "instfol_positions_dropped": 4.0, "birco-pairwise:triplets": 120.0}
    assert got.read_per_query() == {"q1": {"birco-ndcg@10": 0.5}}


def test_v1_suite_converts_members_and_drops_averaged_uncertainty(tmp_path):
    member = dict(V1_BIRCO, files={})
    (tmp_path / "birco_arguana").mkdir()
    (tmp_path / "birco_arguana" / "results.json").write_text(json.dumps(member))
    suite = {"task": {"name": "birco"}, "metrics": dict(V1_BIRCO["metrics"]),
             "tasks": {"birco:arguana": {"metrics": dict(V1_BIRCO["metrics"]),
                                         "results": "birco_arguana/results.json"}}}
    (tmp_path / "results.json").write_text(json.dumps(suite))
    got = read_results(tmp_path)
    assert got.is_suite and got.source_version == 1
    assert "birco-ndcg@10:se" not in got.metrics and got.uncertainty == {}
    entry = got.data["tasks"]["birco:arguana"]
    assert set(entry["metrics"]) == set(read_results(tmp_path / "birco_arguana").metrics)
    assert entry["uncertainty"]["birco-ndcg@10"]["se"] == 0.0318
    assert got.members()["birco:arguana"].uncertainty["birco-ndcg@10"].estimate == 0.4354


@pytest.mark.parametrize("content,message", [
    ("{nope", "not JSON"),
    ("[1, 2]", "JSON object"),
    (json.dumps({"schema_version": 3, "metrics": {}}), "newer than this harness"),
    (json.dumps({"schema_version": 2, "metrics": {"a": "high"}}), "metrics['a'] is not a number"),
    (json.dumps({"schema_version": 2, "metrics": {"a": 1}, "uncertainty": {"a": {"se": "x"}}}), "uncertainty['a']"),
    (json.dumps({"metrics": {"a": [1]}}), "is not a number"),
])
def test_invalid_files_are_one_line_errors(tmp_path, content, message):
    (tmp_path / "results.json").write_text(content)
    with pytest.raises(HarnessError, match=re.escape(message)):
        read_results(tmp_path)


def test_missing_results_json(tmp_path):
    with pytest.raises(HarnessError, match="no results.json"):
        read_results(tmp_path / "nowhere")


def test_compare_and_report_read_through_the_one_reader(tmp_path, monkeypatch):
    """``harness compare`` and ``harness report`` parse no results.json themselves."""
    import harness.compare.analysis
    import harness.compare.report
    import harness.compare.runs
    from harness.compare import load_system
    from harness.testing.synthetic import write_results_folder

    for mod in (harness.compare.runs, harness.compare.report, harness.compare.analysis):
        assert "json.load" not in inspect.getsource(mod)
    calls: list[Path] = []
    real = harness.compare.runs.read_results

    def spy(path):
        calls.append(Path(path))
        return real(path)

    monkeypatch.setattr(harness.compare.runs, "read_results", spy)
    folder = write_results_folder(tmp_path / "a", "t", {"q1": {"m": 0.1}, "q2": {"m": 0.3}})
    system = load_system(folder)
    assert calls == [folder] and system.tasks["t"].stored.source_version == 2


# ------------------------------------------------------------------------------------------ tables


def test_metrics_table_shows_value_plus_minus_se():
    res = _result()
    text = metrics_table(res.metrics, "title", uncertainty=res.uncertainty, details=res.metric_details)
    lines = text.splitlines()
    assert lines[0] == "title" and lines[1].split() == ["metric", "value", "±", "SE", "n"]
    assert "0.4361 ± 0.0318" in text and "0.6200 [0.5000, 0.7000]" in text
    ndcg_row = next(ln for ln in lines if ln.startswith("ndcg "))
    assert ndcg_row.split()[-1] == "2"  # n
    assert "ndcg_queries_skipped" in text.split("\n\n")[1]  # details in a table of their own
    assert metrics_table({"a": 0.5}) == "metric  value\n------  ------\na       0.5000"  # unchanged without


def test_summary_table_reads_uncertainty_fields():
    res = _result()
    assert lookup(res.metrics, res.uncertainty, "ndcg:estimate") == 0.4354
    assert lookup(res.metrics, res.uncertainty, "ndcg:bootstrap") == 0.4354  # the version-1 name
    assert lookup(res.metrics, res.uncertainty, "ndcg:se") == 0.0318
    assert lookup(res.metrics, res.uncertainty, "ndcg:n") == 2
    assert lookup(res.metrics, res.uncertainty, "recall") == 0.62
    assert lookup(res.metrics, res.uncertainty, "missing:se") is None
    lines = summary_table(res).splitlines()
    assert lines[0].split() == ["nDCG@10", "R@5"]
    assert lines[2].split() == ["bm25", "|", "t", "43.5", "±", "3.2", "62.0"]
    assert summary_table(res, se=False).splitlines()[2].split() == ["bm25", "|", "t", "43.5", "62.0"]
    members = {"s:a": _result("s:a"), "s:b": _result("s:b", 0.5)}
    members["s:b"].uncertainty["ndcg"] = Uncertainty(se=0.01, estimate=0.5554)
    suite = EvalResult(Task(name="s", tasks=list(members)), metrics={"ndcg": 0.46805, "recall": 0.62}, members=members)
    rows = [ln.split() for ln in summary_table(suite, se=False).splitlines()[2:]]
    assert rows == [["bm25", "|", "s:a", "43.5", "62.0"], ["bm25", "|", "s:b", "55.5", "62.0"],
                    ["bm25", "|", "mean", "49.5", "62.0"]]  # the mean of the members' bootstrap means


def test_a_metric_without_a_value_says_why(tmp_path):
    """A note (why a metric is nan) is printed under the table and kept in results.json."""
    from harness.results.store import read_results
    from harness.results.table import metrics_table

    table = metrics_table({"instfol": float("nan"), "nDCG@10": 0.5}, notes={"instfol": "no usable judgment"})
    assert "instfol: no value: no usable judgment" in table
    result = _result()
    result.metric_notes = {"ndcg": "why not"}
    ResultsLayout(tmp_path / "out").write(result)
    assert read_results(tmp_path / "out").metric_notes == {"ndcg": "why not"}
