"""`harness export mteb` and MTEB result files as leaderboard rows of `harness compare` / `harness report`:
the files load with mteb's own reader where mteb is installed, values equal the run's, a task that differs
from MTEB's is refused, malformed MTEB files are one message."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness import Task
from harness.cli import _Group
from harness.cli.compare import compare_cmd, report_cmd
from harness.cli.export import export_group
from harness.concepts.errors import DataError, HarnessError
from harness.mteb.result_files import export_mteb
from harness.testing import require_data, requires_plugin

from .plugin_fixtures import make_distribution

REV = "d56462d0e63a25450459c4f213e49ffdb866f7f9"
BLOCK = {"task_name": "HarnessDemoRetrieval", "dataset": "example/demo", "dataset_revision": REV,
         "metrics": {"nDCG@10": "ndcg_at_10", "MRR@10": "mrr_at_10", "Recall@10": "recall_at_10"}}


@click.group(cls=_Group)  # the main CLI's group: HarnessError -> one line, exit status 2
def _cli() -> None:
    pass


for _c in (compare_cmd, report_cmd, export_group):
    _cli.add_command(_c)


def _invoke(*args: str):
    return CliRunner().invoke(_cli, list(args), catch_exceptions=False)


def _task(name: str = "demo-mteb", **mteb) -> Task:
    return Task(name=name, dataset="demo", metrics=["nDCG@10", "MRR@10", "Recall@10"], first_stage="retrieve",
                retriever="bm25", mteb={**BLOCK, **mteb})


#: the export and compare take a run's MTEB task from the task registered under its name (docs/mteb.md), so
#: the demo tasks with an mteb block are registered by a plugin installed for this module (an entry point)
DEMO_TASKS_PLUGIN = f"""
from harness import Task
from harness.plugins.hookspecs import hookimpl

BLOCK = {BLOCK!r}


def _task(name, **mteb):
    return Task(name=name, dataset="demo", metrics=["nDCG@10", "MRR@10", "Recall@10"], first_stage="retrieve",
                retriever="bm25", mteb={{**BLOCK, **mteb}})


@hookimpl
def register_tasks(register):
    register("demo-mteb", lambda: _task("demo-mteb"), "The demo as an MTEB task (test plugin)")
    register("demo-mteb-differs", lambda: _task("demo-mteb-differs", differs="another pool than MTEB's"),
             "The demo as an MTEB task it differs from (test plugin)")
"""


@pytest.fixture(scope="module", autouse=True)
def demo_tasks(tmp_path_factory):
    """The plugin registering ``demo-mteb`` and ``demo-mteb-differs``, installed while this module runs."""
    import sys

    root = make_distribution(tmp_path_factory.mktemp("plugin"), "harness-demo-mteb", "harness_demo_mteb_tasks",
                             DEMO_TASKS_PLUGIN)
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        mp.delenv("HARNESS_DISABLE_PLUGIN_AUTOLOAD", raising=False)
        mp.delenv("HARNESS_PLUGINS", raising=False)
        yield
    sys.modules.pop("harness_demo_mteb_tasks", None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from harness.evaluation.pipeline import evaluate

    root = tmp_path_factory.mktemp("runs")
    evaluate("demo-mteb", retriever="bm25", output=str(root / "bm25"), progress=False)
    evaluate("demo-mteb", retriever="bm25:k1=0.9,b=0.4", output=str(root / "bm25b"), progress=False)
    evaluate("demo-mteb-differs", retriever="bm25", output=str(root / "differs"), progress=False)
    return root


def test_the_mteb_block_is_checked():
    with pytest.raises(DataError, match="dataset_revision"):
        _task(dataset_revision="main")
    with pytest.raises(DataError, match="unknown mteb keys"):
        _task(revision=REV)
    with pytest.raises(DataError, match="main_score"):
        _task(main_score="map_at_10")
    with pytest.raises(DataError, match=r"mteb.metrics\['x'\]"):
        _task(metrics={"x": {"og": "a", "changed": "b"}})
    nested = _task(metrics={"p-MRR": "p-MRR", "MAP@1000[og]": {"og": "map_at_1000"}}, main_score="p-MRR")
    assert nested.as_dict()["mteb"]["metrics"]["MAP@1000[og]"] == {"og": "map_at_1000"}


def test_the_task_toml_loads_an_mteb_table():
    import harness

    t = harness.load_task("scifact")
    assert t.mteb["task_name"] == "SciFact" and t.mteb["dataset_revision"] == REV and "differs" not in t.mteb


@requires_plugin("harness-birco")
def test_a_plugin_task_says_how_mteb_differs():
    import harness

    assert harness.load_task("birco:arguana").mteb["differs"]  # MTEB's is a retrieval over the union of pools


def test_export_writes_mteb_task_results(runs, tmp_path):
    r = _invoke("export", "mteb", str(runs / "bm25"), "-o", str(tmp_path), "--model", "org/demo-model",
                "--revision", "abc123")
    assert r.exit_code == 0, r.output
    folder = tmp_path / "org__demo-model" / "abc123"
    data = json.loads((folder / "HarnessDemoRetrieval.json").read_text())
    ran = json.loads((runs / "bm25" / "results.json").read_text())
    entry = data["scores"]["test"][0]
    assert entry["ndcg_at_10"] == round(ran["metrics"]["nDCG@10"], 6) == entry["main_score"]
    assert entry["mrr_at_10"] == round(ran["metrics"]["MRR@10"], 6)
    assert entry["recall_at_10"] == round(ran["metrics"]["Recall@10"], 6)
    assert entry["hf_subset"] == "default" and entry["languages"] == ["eng-Latn"]
    assert data["dataset_revision"] == REV and data["task_name"] == "HarnessDemoRetrieval"
    assert set(data) == {"dataset_revision", "task_name", "mteb_version", "scores", "evaluation_time",
                         "kg_co2_emissions", "date"}
    meta = json.loads((folder / "model_meta.json").read_text())
    assert meta["name"] == "org/demo-model" and meta["revision"] == "abc123"


def test_export_loads_with_mteb(runs, tmp_path):
    mteb_results = pytest.importorskip("mteb.results", reason="mteb is not installed")
    export_mteb([runs / "bm25"], tmp_path, model="org/demo-model", revision="abc123")
    path = tmp_path / "org__demo-model" / "abc123" / "HarnessDemoRetrieval.json"
    loaded = mteb_results.TaskResult.from_disk(path)
    ran = json.loads((runs / "bm25" / "results.json").read_text())
    assert loaded.task_name == "HarnessDemoRetrieval" and loaded.dataset_revision == REV
    assert loaded.scores["test"][0]["main_score"] == pytest.approx(ran["metrics"]["nDCG@10"], abs=5e-7)
    assert loaded.scores["test"][0]["ndcg_at_10"] == round(ran["metrics"]["nDCG@10"], 6)


def test_export_refuses_a_task_that_differs(runs, tmp_path):
    r = _invoke("export", "mteb", str(runs / "bm25"), str(runs / "differs"), "-o", str(tmp_path / "out"),
                "--model", "org/m")
    assert r.exit_code == 2
    assert "differs from MTEB's HarnessDemoRetrieval: another pool than MTEB's" in r.output
    assert "Traceback" not in r.output and not (tmp_path / "out").exists()  # nothing written


def test_export_refuses_a_run_without_mteb_block_or_model(runs, tmp_path):
    from harness.evaluation.pipeline import evaluate

    evaluate("demo", retriever="bm25", output=str(tmp_path / "plain"), progress=False)
    with pytest.raises(HarnessError, match="no MTEB counterpart"):
        export_mteb([tmp_path / "plain"], tmp_path / "out", model="org/m")
    with pytest.raises(HarnessError, match="--model ORG/NAME"):
        export_mteb([runs / "bm25"], tmp_path / "out")
    with pytest.raises(HarnessError, match="both give MTEB task"):
        export_mteb([runs / "bm25", runs / "bm25b"], tmp_path / "out", model="org/m")


def test_export_refuses_a_dataset_override_of_a_registered_task(tmp_path):
    """scifact is registered with an mteb block; a run whose results.json names other data is refused."""
    from harness.testing.synthetic import write_results_folder

    folder = tmp_path / "r"
    write_results_folder(folder, "scifact", {"q1": {"nDCG@10": 0.5}})
    data = json.loads((folder / "results.json").read_text())
    data["task"] = {"name": "scifact", "dataset": "beir", "dataset_args": {"path": "elsewhere"}}
    (folder / "results.json").write_text(json.dumps(data))
    with pytest.raises(HarnessError, match="not the task's 'scifact'"):
        export_mteb([folder], tmp_path / "out", model="org/m")


def test_compare_shows_the_mteb_file_as_a_row_without_a_test(runs, tmp_path):
    export_mteb([runs / "bm25"], tmp_path / "mteb", model="org/demo-model", revision="abc123")
    file = tmp_path / "mteb" / "org__demo-model" / "abc123" / "HarnessDemoRetrieval.json"
    r = _invoke("compare", str(runs / "bm25b"), str(file), "--metric", "nDCG@10", "-B", "200")
    assert r.exit_code == 0, r.output
    ran = json.loads((runs / "bm25" / "results.json").read_text())["metrics"]["nDCG@10"]
    row = next(line for line in r.output.splitlines() if line.startswith("org__demo-model (MTEB)*"))
    assert f"{ran:.4f}" in row and row.count("—") == 3  # the leaderboard value, no p-value
    assert "no paired test is claimed" in r.output
    js = json.loads(_invoke("compare", str(runs / "bm25b"), str(runs / "bm25"), str(file.parent), "--format", "json",
                            "-B", "200").output)
    nd = next(x for x in js["results"] if x["metric"] == "nDCG@10")
    assert nd["leaderboard"] == {"org__demo-model": round(ran, 6)}
    assert [c["system"] for c in nd["comparisons"]] == ["bm25"]  # the run is tested, the MTEB file is not


def test_report_shows_the_mteb_row(runs, tmp_path):
    pytest.importorskip("jinja2")
    export_mteb([runs / "bm25"], tmp_path / "mteb", model="org/demo-model", revision="abc123")
    out = tmp_path / "report.html"
    r = _invoke("report", str(runs / "bm25b"), str(tmp_path / "mteb" / "org__demo-model" / "abc123"), "-o", str(out),
                "-B", "200")
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert "org__demo-model" in html and "no per-query scores" in html


@pytest.mark.parametrize("content, message", [
    (b"[1, 2]", "not an MTEB result file"),
    (b"{not json", "HarnessDemoRetrieval.json"),
    (json.dumps({"task_name": "HarnessDemoRetrieval", "dataset_revision": REV, "scores": {"test": [
        {"ndcg_at_10": "high", "main_score": 0.5, "hf_subset": "default", "languages": []}]}}).encode(),
     "not a number"),
    (json.dumps({"task_name": "HarnessDemoRetrieval", "dataset_revision": "0" * 40, "scores": {}}).encode(),
     "is not the revision"),
    (json.dumps({"task_name": "Other", "dataset_revision": REV, "scores": {}}).encode(), "none of the tasks"),
    (json.dumps({"task_name": "HarnessDemoRetrieval", "dataset_revision": REV, "scores": {"dev": []}}).encode(),
     "no scores for split 'test'"),
])
def test_malformed_mteb_files_are_one_message(runs, tmp_path, content, message):
    f = tmp_path / "HarnessDemoRetrieval.json"
    f.write_bytes(content)
    r = _invoke("compare", str(runs / "bm25"), str(f))
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_an_oversized_mteb_file_is_refused(runs, tmp_path, monkeypatch):
    from harness.compare import mteb_files

    monkeypatch.setattr(mteb_files, "MAX_MTEB_FILE", 100)
    f = tmp_path / "HarnessDemoRetrieval.json"
    f.write_text(json.dumps({"task_name": "HarnessDemoRetrieval", "pad": "x" * 200}))
    r = _invoke("compare", str(runs / "bm25"), str(f))
    assert r.exit_code == 2 and "100 bytes" in r.output


def test_scifact_export_keeps_the_published_figure(tmp_path):
    """The seed SciFact BM25 run (nDCG@10 0.6827) exported as MTEB's SciFact at mteb/scifact's revision."""
    from harness import Context
    from harness.evaluation.pipeline import evaluate
    from harness.testing import shared_data_dir

    data = shared_data_dir(Path(__file__).resolve().parents[1])
    require_data(data, "scifact/scifact_csv.zip", "scifact/qrels.beir-v1.0.0-scifact.test.txt", fetch="scifact")
    ctx = Context.create(cache_dir=str(tmp_path / "cache"), data_dir=str(data))
    res = evaluate("scifact", output=str(tmp_path / "run"), progress=False, context=ctx)
    assert round(res.metrics["nDCG@10"], 4) == 0.6827
    export_mteb([tmp_path / "run"], tmp_path / "out", model="org/bm25", revision="r1", context=ctx)
    data = json.loads((tmp_path / "out" / "org__bm25" / "r1" / "SciFact.json").read_text())
    assert data["dataset_revision"] == REV and data["scores"]["test"][0]["main_score"] == round(
        res.metrics["nDCG@10"], 6)
