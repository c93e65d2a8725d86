"""External runs as systems: ``harness eval --task T --run FILE`` scores a TREC run file made elsewhere as
trec_eval scores it (the README's 0.5058 on TREC DL 2019's own BM25 run; pytrec_eval on the file), lists
the ids the task does not know instead of dropping them, writes a results folder that compare, view and
export read, and ``run-file:PATH`` is ``run-file:path=PATH``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval
from click.testing import CliRunner

from harness.cli import cli
from harness.concepts.task import Task
from harness.datasets.loaders import load_demo_dataset
from harness.evaluation.external_runs import evaluate_runs, run_file_spec, system_name
from harness.evaluation.pipeline import evaluate
from harness.formats.rankllm import read_rankllm
from harness.formats.trec import read_qrels, write_run
from harness.view.catalog import Catalog

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def runner() -> CliRunner:
    """stdout and stderr apart (click 8.1 mixes them unless told; 8.2 keeps both)."""
    import inspect

    return CliRunner(mix_stderr=False) if "mix_stderr" in inspect.signature(CliRunner).parameters else CliRunner()


def invoke(*args: str) -> tuple[str, str]:
    res = runner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout, res.stderr


def pytrec(qrels_path: Path, run_lines: list[str], measure: str = "ndcg_cut_10") -> dict[str, float]:
    """pytrec_eval on a qrels file and run lines, as trec_eval computes them."""
    run: dict[str, dict[str, float]] = {}
    for line in run_lines:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    qrels = {q: {d: int(g) for d, g in docs.items()} for q, docs in read_qrels(qrels_path).items()}
    return {q: v[measure] for q, v in pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run).items()}


def test_trec_dl19_own_bm25_run_gives_the_readme_figure(data_dir: Path, tmp_path: Path):
    candidates = read_rankllm(data_dir / "trec-dl/bm25_top100.dl19.json").candidates
    run_file = write_run(candidates, tmp_path / "bm25.dl19.trec", tag="bm25")
    out, err = invoke("--data-dir", str(data_dir), "eval", "--task", "trec-dl19", "--run", str(run_file),
                      "-o", str(tmp_path / "bm25"), "--json", "--quiet")
    metrics = json.loads(out)
    assert round(metrics["nDCG@10"], 4) == 0.5058
    per_query = pytrec(data_dir / "trec-dl/qrels.dl19-passage.txt", run_file.read_text().splitlines())
    assert metrics["nDCG@10"] == pytest.approx(sum(per_query.values()) / len(per_query), abs=1e-12)
    data = json.loads((tmp_path / "bm25" / "results.json").read_text())
    comp = data["components"]["retriever"]
    assert comp["name"] == "run-file" and comp["source"] == "run file" and comp["system"] == "bm25.dl19"
    assert comp["stats"]["unknown_queries"] == 0 and comp["stats"]["unknown_documents"] == 0
    assert comp["path"] == str(run_file.resolve()) and len(comp["sha256"]) == 64 and comp["tag"] == "bm25"
    assert "candidates_set_aside" in comp  # the task's own candidates were replaced, and results.json says so


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo-run")
    invoke("eval", "--task", "demo", "-o", str(root / "bm25"), "--quiet")
    return root / "bm25" / "run.trec"


def _demo_qrels(tmp_path: Path) -> Path:
    qrels = tmp_path / "demo.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {int(g)}\n" for q, docs in load_demo_dataset().qrels["default"].items()
                             for d, g in docs.items()))
    return qrels


def test_unknown_ids_are_counted_listed_and_kept(demo_run: Path, tmp_path: Path):
    lines = demo_run.read_text().splitlines()
    odd = [*lines, "zz-unknown Q0 dia1 1 9.0 x", "q1 Q0 not-a-doc 1 100.0 x", "q2 Q0 not-a-doc 1 -5.0 x"]
    run_file = tmp_path / "odd.trec"
    run_file.write_text("\n".join(odd) + "\n")
    out, err = invoke("eval", "--task", "demo", "--run", str(run_file), "-o", str(tmp_path / "odd"), "--json",
                      "--quiet")
    assert "1 of its queries are not among the evaluation's queries" in err
    assert "2 ranked documents (1 distinct) are not in the dataset's corpus" in err
    stats = json.loads((tmp_path / "odd" / "results.json").read_text())["components"]["retriever"]["stats"]
    assert stats["unknown_queries"] == 1 and stats["unknown_queries_listed"] == ["zz-unknown"]
    assert stats["unknown_documents"] == 2 and stats["unknown_documents_listed"] == ["not-a-doc"]
    # kept, not dropped: q1's unknown document is ranked first and counts as not relevant, as in trec_eval
    written = (tmp_path / "odd" / "run.trec").read_text().splitlines()
    assert [ln.split()[2] for ln in written if ln.startswith("q1 ")][0] == "not-a-doc"
    ours = json.loads(out)["nDCG@10"]
    expected = pytrec(_demo_qrels(tmp_path), [ln for ln in odd if not ln.startswith("zz-unknown")])
    assert ours == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12)


def test_a_run_is_scored_whole_and_ties_follow_trec_eval(demo_run: Path, tmp_path: Path):
    lines = demo_run.read_text().splitlines()
    tied = [" ".join([*ln.split()[:4], "1.0", "tie"]) if ln.startswith("q3 ") else ln for ln in lines]
    run_file = tmp_path / "tied.trec"
    run_file.write_text("\n".join(tied) + "\n")
    shallow = Task(name="demo-shallow", dataset="demo", metrics=["nDCG@10", "Recall@40"], first_stage="retrieve",
                   depth=3)  # the task's depth is 3; the run file's lists are 40 deep and are scored whole
    result = evaluate(shallow, retriever=run_file_spec(run_file), progress=False)
    assert all(len(hits) == 40 for hits in result.runs["default"].values())
    qrels = _demo_qrels(tmp_path)
    for name, measure in (("nDCG@10", "ndcg_cut_10"), ("Recall@40", "recall_40")):
        expected = pytrec(qrels, tied, measure)
        assert result.metrics[name] == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12)
    q3 = result.runs["default"].doc_ids("q3")
    assert q3 == sorted(q3, reverse=True)  # all tied: document id descending, as trec_eval orders them
    cut = evaluate(shallow, retriever=run_file_spec(run_file), depth=5, progress=False)
    assert all(len(hits) == 5 for hits in cut.runs["default"].values())  # --depth still cuts


def test_several_runs_one_folder_each_then_compare_view_and_names(demo_run: Path, tmp_path: Path):
    other = tmp_path / "reversed.run"
    by_query: dict[str, list[str]] = {}
    for ln in demo_run.read_text().splitlines():
        by_query.setdefault(ln.split()[0], []).append(ln.split()[2])
    other.write_text("".join(f"{q} Q0 {d} {i + 1} {float(-i)} rev\n" for q, ds in by_query.items()
                             for i, d in enumerate(reversed(ds))))
    out, _ = invoke("eval", "--task", "demo", "--run", str(demo_run), "--run", str(other), "--name", "bm25",
                    "-o", str(tmp_path / "runs"), "--quiet")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["bm25", "reversed"]
    assert out.count("nDCG@10") == 2
    as_json, _ = invoke("eval", "--task", "demo", "--run", str(demo_run), "--run", str(other), "--name", "bm25",
                        "--json", "--quiet")
    by_name = json.loads(as_json)
    assert set(by_name) == {"bm25", "reversed"} and by_name["bm25"]["nDCG@10"] > by_name["reversed"]["nDCG@10"]
    compared, _ = invoke("compare", str(tmp_path / "runs" / "bm25"), str(tmp_path / "runs" / "reversed"),
                         "--metric", "nDCG@10", "-B", "200")
    assert "bm25 (baseline)" in compared and "reversed" in compared
    catalog = Catalog([tmp_path / "runs"])
    labels = [r["label"] for r in catalog.runs_payload()["runs"]]
    assert labels == ["bm25", "reversed"]
    q = catalog.query_payload("r1", "q1")
    assert [d for d, _, _ in q["rankings"]["final[default]"]] == by_query["q1"]
    bundle, _ = invoke("view", str(tmp_path / "runs"), "--bundle", str(tmp_path / "bundle"))
    assert "2 runs written" in bundle and (tmp_path / "bundle" / "index.html").is_file()


def test_run_file_specs_and_names(tmp_path: Path, demo_run: Path):
    assert run_file_spec(demo_run).startswith("run-file:path=")
    for name in ("../up", "a/b", ".hidden", ""):
        with pytest.raises(Exception, match="system name"):
            system_name(tmp_path / "x.trec", name or "/")
    assert system_name(tmp_path / "bm25.dl19.trec") == "bm25.dl19"
    res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--run", str(demo_run), "-r", "bm25"])
    assert res.exit_code == 2 and "--run replaces the first stage" in res.output
    res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--run", str(tmp_path / "missing.trec")])
    assert res.exit_code == 2 and "run file not found" in res.output
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 nan x\n")
    res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--run", str(bad)])
    assert res.exit_code == 2 and "line 1" in res.output and "Traceback" not in res.output
    done = evaluate_runs([demo_run], task="demo", progress=False)  # the Python face
    same = evaluate("demo", retriever=f"run-file:{demo_run}", progress=False)  # NAME:REST is NAME:path=REST
    assert done[0][1].metrics == same.metrics


def test_export_mteb_reads_a_run_folder(data_dir: Path, tmp_path: Path):
    invoke("--data-dir", str(data_dir), "eval", "--task", "scifact", "-o", str(tmp_path / "bm25"), "--quiet")
    invoke("--data-dir", str(data_dir), "eval", "--task", "scifact", "--run", str(tmp_path / "bm25" / "run.trec"),
           "--name", "pyserini-like", "-o", str(tmp_path / "ext"), "--quiet")
    a = json.loads((tmp_path / "bm25" / "results.json").read_text())["metrics"]
    b = json.loads((tmp_path / "ext" / "results.json").read_text())["metrics"]
    assert a == b and round(a["nDCG@10"], 4) == 0.6827
    invoke("--data-dir", str(data_dir), "export", "mteb", str(tmp_path / "ext"), "-o", str(tmp_path / "mteb"),
           "--model", "external-bm25", "--revision", "0")
    (exported,) = (tmp_path / "mteb").rglob("SciFact.json")
    scores = json.loads(exported.read_text())["scores"]["test"][0]
    assert scores["ndcg_at_10"] == pytest.approx(b["nDCG@10"], abs=1e-6)


def test_name_rest_specs_need_a_spec_tail():
    """``NAME:REST`` is ``NAME:<spec_tail>=REST`` only for a factory that names its ``spec_tail``."""
    from harness.components.lazy import lazy
    from harness.components.registry import Component, Registry
    from harness.concepts.errors import HarnessError

    def tailed(where, k=1):
        return (where, k)

    tailed.spec_tail = "where"
    reg = Registry()
    reg.add(Component("retriever", "tailed", tailed, "", "x"))
    reg.add(Component("retriever", "plain", lambda **kw: kw, "", "x"))
    reg.add(Component("retriever", "run-file", lazy("harness.retrievers.run_file:RunFileRetriever"), "", "x"))
    assert reg.create("retriever", "tailed:/a/b.tsv:k=3") == ("/a/b.tsv", 3)
    assert reg.create("retriever", "tailed:where=x") == ("x", 1)
    assert reg.resolve("retriever", "run-file:/runs/a.trec")[1].args == {"path": "/runs/a.trec"}
    with pytest.raises(HarnessError):  # no spec_tail: "plain:x" still names a component x from a source plain
        reg.create("retriever", "plain:x")
