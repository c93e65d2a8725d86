"""``harness eval --qrels FILE``: the dataset's qrels replaced by a file's (figures equal pytrec_eval's on the
run written and the file), the file's identity in results.json, the MTEB export refusing such a run, and
every wrong use one message."""

from __future__ import annotations

import hashlib
import json

import pytest
import pytrec_eval
from click.testing import CliRunner

from harness.api import evaluate
from harness.cli import cli
from harness.concepts.dataset import Dataset
from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.concepts.task import Task
from harness.evaluation.other_qrels import with_qrels_file
from tests.assessor_fixtures import read_trec_run

# the demo's queries, judged otherwise: a few documents each, one grade 2
OTHER = "q1 0 dia2 2\nq1 0 slp4 1\nq2 0 dia1 1\nq3 0 slp1 2\nq3 0 zzz-unknown 1\n"


def test_eval_scores_against_the_file_and_records_it(tmp_path):
    qrels = tmp_path / "other.qrels"
    qrels.write_text(OTHER)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--qrels", str(qrels), "-m", "nDCG@10", "-m", "P@5",
                                   "-m", "Hole@5", "-o", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    data = json.loads((out / "results.json").read_text())
    ident = data["dataset"]["qrels_file"]
    assert ident["sha256"] == hashlib.sha256(qrels.read_bytes()).hexdigest() and ident["n_judgments"] == 5
    assert data["dataset"]["qrels_replaced"]["n_queries"] == 10 and data["dataset"]["n_qrels"] == {"default": 5}
    nested = {"q1": {"dia2": 2, "slp4": 1}, "q2": {"dia1": 1}, "q3": {"slp1": 2, "zzz-unknown": 1}}
    run = read_trec_run(out / "run.trec")
    per_query = pytrec_eval.RelevanceEvaluator(nested, {"ndcg_cut_10", "P_5"}).evaluate(run)
    assert data["metrics"]["nDCG@10"] == pytest.approx(sum(v["ndcg_cut_10"] for v in per_query.values()) / 3)
    assert data["metrics"]["P@5"] == pytest.approx(sum(v["P_5"] for v in per_query.values()) / 3)
    holes = [sum(d not in nested[q] for d in list(run[q])[:5]) / 5 for q in nested]
    assert data["metrics"]["Hole@5"] == pytest.approx(sum(holes) / 3)
    assert data["counts"]["unknown_ids"] == {"default:qrels_unknown_docs": 1}  # zzz-unknown, counted


def test_an_mteb_export_refuses_a_run_scored_against_other_qrels(data_dir, tmp_path):
    qrels = tmp_path / "scifact.qrels"
    qrels.write_bytes((data_dir / "scifact" / "qrels.beir-v1.0.0-scifact.test.txt").read_bytes())
    out = tmp_path / "sf"
    runner = CliRunner()
    res = runner.invoke(cli, ["--data-dir", str(data_dir), "eval", "--task", "scifact", "--qrels", str(qrels),
                              "-m", "nDCG@10", "-o", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["export", "mteb", str(out), "-o", str(tmp_path / "mteb"), "--model", "bm25s",
                              "--revision", "0"])
    assert res.exit_code == 2 and "qrels_file" in res.output and "--qrels" in res.output


def test_a_dataset_of_several_modes_a_suite_and_bad_files_are_one_message(tmp_path):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q 0 d 1\n")
    two = Dataset("two", {"d": Document("d", "x")}, {"a": {"q": Query("q", "x")}, "b": {"q": Query("q", "x")}},
                  {"a": Qrels({"q": {"d": 1}}), "b": Qrels({"q": {"d": 0}})})
    with pytest.raises(HarnessError, match="2 modes"):
        with_qrels_file(two, str(qrels))
    with pytest.raises(HarnessError, match="suite"):
        evaluate(Task(name="both", tasks=["demo", "demo"]), qrels=str(qrels), progress=False)
    (tmp_path / "bad.qrels").write_text("q 0 d\n")
    (tmp_path / "empty.qrels").write_text("\n")
    for name, words in (("bad.qrels", "expected 4 fields"), ("empty.qrels", "no judgment")):
        res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--qrels", str(tmp_path / name), "--quiet"])
        assert res.exit_code == 2 and words in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--qrels", str(tmp_path / "missing.qrels")])
    assert res.exit_code == 2 and "does not exist" in res.output
