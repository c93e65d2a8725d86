"""``--dataset irds:ID`` offline: datasets placed in a temporary ``IR_DATASETS_HOME`` in ir_datasets' own
layout (tests/irds_layout.py) give the figures pytrec_eval gives on the same qrels and those of the tasks
that read the same files (TREC DL 2019's 0.5058 from its scored documents, SciFact's 0.6827 with BM25); query
fields reach a task's ``query_format``; a missing file is one line naming it, the id and ``IR_DATASETS_HOME``;
a licensed collection passes ir_datasets' instructions through. Each evaluation runs as a ``harness``
process: ir_datasets fixes its home when it is first imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

from harness.formats.trec import read_qrels
from harness.runtime.extras import available

from .irds_layout import TOUCHE_QRELS, beir_folder, place_dl19, place_scifact, place_touche

# found, not imported: importing ir_datasets registers every dataset under the home of this process
pytestmark = pytest.mark.skipif(not available("ir_datasets"),
                                reason="irds datasets need ir-datasets: pip install 'harness-ir[irds]'")


def harness(home: Path, *args: str, cwd: Path | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "HARNESS_AUTO_DOWNLOAD": "0",
           "IR_DATASETS_DL_DISABLE_PBAR": "true"}
    argv = [sys.executable, "-c", code] if code else [sys.executable, "-m", "harness.cli", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=900)


def pytrec_mean(qrels: dict[str, dict[str, int]], run_file: Path, measure: str = "ndcg_cut_10") -> float:
    run: dict[str, dict[str, float]] = {}
    for line in run_file.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    return sum(v[measure] for v in per_query.values()) / len(per_query)


def test_touche_fields_reach_the_query_format_and_figures_equal_pytrec_eval(tmp_path: Path):
    home = tmp_path / "irds"
    place_touche(home)
    toml = tmp_path / "touche-desc.toml"
    toml.write_text('name = "touche-desc"\ndataset = "irds:beir/webis-touche2020/v2"\nmetrics = ["nDCG@10"]\n'
                    'first_stage = "retrieve"\nretriever = "bm25"\ndepth = 10\nquery_format = "{description}"\n')
    code = ("import sys, warnings; warnings.simplefilter('ignore'); from harness.concepts.task import load_task_file;"
            "from harness.api import evaluate; from pathlib import Path;"
            f"evaluate(load_task_file(Path({str(toml)!r})), output={str(tmp_path / 'desc')!r}, progress=False)")
    done = harness(home, code=code)
    assert done.returncode == 0, done.stderr[-3000:]
    plain = harness(home, "eval", "--dataset", "irds:beir/webis-touche2020/v2", "-o", str(tmp_path / "text"), "-q")
    assert plain.returncode == 0, plain.stderr[-3000:]
    for name, field in (("desc", "description"), ("text", "text")):  # the BEIR loader on the same texts
        ref = harness(home, "eval", "--dataset", f"beir:path={beir_folder(tmp_path / f'beir-{field}', field)}",
                      "--retriever", "bm25", "-k", "10", "-o", str(tmp_path / f"ref-{name}"), "-q")
        assert ref.returncode == 0, ref.stderr[-3000:]
        assert (tmp_path / name / "run.trec").read_text() == (tmp_path / f"ref-{name}" / "run.trec").read_text()
        data = json.loads((tmp_path / name / "results.json").read_text())
        assert data["metrics"]["nDCG@10"] == pytest.approx(pytrec_mean(TOUCHE_QRELS, tmp_path / name / "run.trec"),
                                                           abs=1e-12)
    assert (tmp_path / "desc" / "run.trec").read_text() != (tmp_path / "text" / "run.trec").read_text()
    data = json.loads((tmp_path / "desc" / "results.json").read_text())
    irds = data["dataset"]["irds"]
    assert irds["id"] == "beir/webis-touche2020/v2" and irds["ir_datasets_version"]
    (source,) = [f for f in data["dataset"]["files"] if f["path"].endswith("source.zip")]
    assert source["path"] == "beir/webis-touche2020/v2/source.zip" and len(source["sha256"]) == 64
    assert source["md5_recorded"] and source["url"].endswith("webis-touche2020.zip")


def test_dl19_scoreddocs_are_the_candidates_and_give_0_5058(data_dir: Path, tmp_path: Path):
    home = tmp_path / "irds"
    place_dl19(home, data_dir)
    done = harness(home, "eval", "--dataset", "irds:msmarco-passage/trec-dl-2019/judged", "-o", str(tmp_path / "o"),
                   "-q", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads(done.stdout)
    assert round(metrics["nDCG@10"], 4) == 0.5058
    qrels = {q: {d: int(g) for d, g in docs.items()}
             for q, docs in read_qrels(data_dir / "trec-dl" / "qrels.dl19-passage.txt").items()}
    assert metrics["nDCG@10"] == pytest.approx(pytrec_mean(qrels, tmp_path / "o" / "run.trec"), abs=1e-12)
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["components"]["retriever"]["name"] == "candidates"  # scored documents: the re-ranking setting
    assert data["dataset"]["n_queries"]["default"] == 43
    assert set(data["dataset"]["irds"]["relevance_levels"]) == {"0", "1", "2", "3"}
    (qrels_file,) = [f for f in data["dataset"]["files"] if f["path"] == "msmarco-passage/trec-dl-2019/qrels"]
    assert qrels_file["md5_recorded"] == "2f4be390198da108f6845c822e5ada14"  # ir_datasets' record of NIST's file
    # the candidates' documents only, through ir_datasets' docstore
    only = harness(home, "eval", "--dataset", "irds:msmarco-passage/trec-dl-2019/judged:corpus=candidates", "-q",
                   "--json")
    assert only.returncode == 0, only.stderr[-3000:]
    assert json.loads(only.stdout) == metrics


def test_scifact_bm25_equals_the_scifact_task(data_dir: Path, tmp_path: Path):
    home = tmp_path / "irds"
    place_scifact(home, data_dir)
    done = harness(home, "eval", "--dataset", "irds:beir/scifact/test", "--retriever", "bm25", "-o",
                   str(tmp_path / "o"), "-q", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    ndcg = json.loads(done.stdout)["nDCG@10"]
    assert round(ndcg, 4) == 0.6827  # the scifact task's figure on the same files
    qrels = {q: {d: int(g) for d, g in docs.items()}
             for q, docs in read_qrels(data_dir / "scifact" / "qrels.beir-v1.0.0-scifact.test.txt").items()}
    assert ndcg == pytest.approx(pytrec_mean(qrels, tmp_path / "o" / "run.trec"), abs=1e-12)


def test_a_missing_file_is_one_line_naming_it_the_id_and_the_home(tmp_path: Path):
    home = tmp_path / "irds"
    done = harness(home, "eval", "--dataset", "irds:beir/webis-touche2020/v2", "-q")
    assert done.returncode == 2
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert "irds:beir/webis-touche2020/v2" in line and f"IR_DATASETS_HOME={home}" in line
    assert str(home / "beir" / "webis-touche2020" / "v2" / "source.zip") in line and "Traceback" not in done.stderr
    licensed = harness(home, "eval", "--dataset", "irds:disks45/nocr/trec-robust-2004", "-q")
    assert licensed.returncode == 2 and "Traceback" not in licensed.stderr
    (line,) = [ln for ln in licensed.stderr.splitlines() if ln.startswith("Error:")]
    assert "ir_datasets cannot download it; it says:" in line and "NIST" in line  # its own instructions
    unknown = harness(home, "eval", "--dataset", "irds:beir/scifact/tset", "-q")
    assert unknown.returncode == 2 and "did you mean: beir/scifact/test" in unknown.stderr


def test_query_fields_qrels_and_scored_documents_are_read_strictly(capsys: pytest.CaptureFixture[str]):
    """The conversions on records shaped as ir_datasets' (its NamedTuples' fields), without a home."""
    from collections import namedtuple

    from harness.concepts.errors import DataError
    from harness.datasets.irds import _candidates, _qrels, _query

    TrecQuery = namedtuple("TrecQuery", "query_id title description narrative")
    q = _query(TrecQuery("301", "International Organized Crime", "Identify organizations...", "A relevant ..."))
    assert q.text == "International Organized Crime" and q.instruction == ""
    assert q.meta == {"title": "International Organized Crime", "description": "Identify organizations...",
                      "narrative": "A relevant ..."}  # "{title} {description}" in a task's query_format
    CovidQuery = namedtuple("BeirCovidQuery", "query_id text query narrative")
    assert _query(CovidQuery("1", "coronavirus origin", "what is the origin", "n")).meta == {
        "irds_query": "what is the origin", "narrative": "n"}

    class Rows:
        def __init__(self, rows, kind):
            self.rows, self.kind = rows, kind

        def has_qrels(self):
            return True

        def qrels_iter(self):
            return iter(self.rows)

        def scoreddocs_iter(self):
            return iter(self.rows)

    Qrel = namedtuple("TrecQrel", "query_id doc_id relevance iteration")
    qrels, dups = _qrels(Rows([Qrel("1", "a", 2, "0"), Qrel("1", "a", 2, "0"), Qrel("1", "b", 0, "0")], "q"))
    assert dict(qrels["1"]) == {"a": 2, "b": 0} and dups == 1
    with pytest.raises(DataError, match="judged twice"):
        _qrels(Rows([Qrel("1", "a", 2, "0"), Qrel("1", "a", 1, "0")], "q"))
    with pytest.raises(DataError, match="relevance"):
        _qrels(Rows([Qrel("1", "a", 10**6, "0")], "q"))
    Scored = namedtuple("GenericScoredDoc", "query_id doc_id score")
    run = _candidates(Rows([Scored("1", "a", 0.0), Scored("1", "c", 0.0), Scored("1", "b", 0.0)], "s"))
    assert run.doc_ids("1") == ["c", "b", "a"]  # no scores: trec_eval's tie rule, and stderr says so
    assert "carry no scores" in capsys.readouterr().err
