"""``harness judge fill`` over three DL19 runs (the BM25 candidates; BM25 over the corpus with two settings)
against a loopback assessor: exactly the unjudged pairs of the union of their top K are judged, once each;
the human judgments are written unchanged; ``Hole@10`` equals a count from the files and is 0 under the
filled qrels; ``judge rankcorr`` equals ``scipy.stats.kendalltau`` on orders computed with pytrec_eval;
``eval --qrels`` and ``compare --qrels`` score under the filled qrels; a dry run prices the fill and writes
nothing; failed calls make it INCOMPLETE and write nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import pytrec_eval
from click.testing import CliRunner

from harness.cli import cli
from harness.testing import TestServer, require_data
from tests.assessor_fixtures import Dl19, holes, jsonl, read_qrels_lines, read_trec_run, top_k, unjudged_grade
from tests.conftest import shared_data_path

SYSTEMS = {"bm25-candidates": [], "bm25-corpus": ["--retriever", "bm25"],
           "bm25-flat": ["--retriever", "bm25:k1=0.6,b=0.3"]}
DEPTH = 10


def invoke(*args: str, ok: bool = True):
    res = CliRunner().invoke(cli, list(args))
    if ok:
        assert res.exit_code == 0, res.output
    return res


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Three DL19 results folders, run here (no model needed)."""
    data = require_data(shared_data_path(), "trec-dl/bm25_top100.dl19.json")
    root = tmp_path_factory.mktemp("dl19-runs")
    for name, extra in SYSTEMS.items():
        invoke("--data-dir", str(data), "eval", "--task", "trec-dl19", *extra, "-o", str(root / name), "--quiet",
               "-m", "nDCG@10", "-m", "Hole@10")
    return {name: root / name for name in SYSTEMS}


@pytest.fixture(scope="module")
def dl19() -> Dl19:
    return Dl19.read(require_data(shared_data_path(), "trec-dl/qrels.dl19-passage.txt"))


def expected_holes(dl19: Dl19, runs: dict[str, Path]) -> set[tuple[str, str]]:
    """The unjudged pairs of the union of the runs' top DEPTH, from the files."""
    out = set()
    for folder in runs.values():
        for q, hits in read_trec_run(folder / "run.trec").items():
            out |= {(q, d) for d in top_k(hits, DEPTH) if q in dl19.qrels and d not in dl19.qrels[q]}
    return out


def ndcg10(run_file: Path, qrels: dict[tuple[str, str], int]) -> float:
    nested: dict[str, dict[str, int]] = {}
    for (q, d), g in qrels.items():
        nested.setdefault(q, {})[d] = g
    per_query = pytrec_eval.RelevanceEvaluator(nested, {"ndcg_cut_10"}).evaluate(read_trec_run(run_file))
    return sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)


@pytest.fixture(scope="module")
def filled(runs, dl19, tmp_path_factory):
    """``judge fill`` run once: the output qrels, the pairs the server received, and the output."""
    out = tmp_path_factory.mktemp("filled") / "dl19.filled.qrels"
    cache = tmp_path_factory.mktemp("llm-cache")
    with TestServer(reply=dl19.assessor(no_grade=lambda q, d: d.endswith("99"))) as srv:
        res = invoke("--data-dir", str(dl19.root.parent), "judge", "fill", *map(str, runs.values()), "--task",
                     "trec-dl19", "--depth", str(DEPTH), "--llm", srv.spec("gpt-4o-mini"), "--cache-dir",
                     str(cache), "-o", str(out))
        asked = dl19.judged(srv)
        rerun = invoke("--data-dir", str(dl19.root.parent), "judge", "fill", *map(str, runs.values()), "--task",
                       "trec-dl19", "--depth", str(DEPTH), "--llm", srv.spec("gpt-4o-mini"), "--cache-dir",
                       str(cache), "-o", str(out.with_name("again.qrels")))
        warm_requests = srv.requests_total - len(asked)
    return {"path": out, "asked": asked, "output": res.output, "warm_requests": warm_requests, "rerun": rerun}


def test_fill_judges_exactly_the_unjudged_pairs_of_the_union_once(filled, runs, dl19):
    expected = expected_holes(dl19, runs)
    assert len(expected) > 50  # the corpus runs surface passages nobody judged in 2019
    assert sorted(filled["asked"]) == sorted(expected) and len(filled["asked"]) == len(set(filled["asked"]))
    assert filled["warm_requests"] == 0
    assert filled["path"].read_bytes() == filled["path"].with_name("again.qrels").read_bytes()


def test_the_filled_qrels_keep_every_human_judgment_and_add_the_graded_holes(filled, runs, dl19):
    written = read_qrels_lines(filled["path"])
    human = read_qrels_lines(dl19.qrels_file)
    assert all(written[pair] == grade for pair, grade in human.items())  # unchanged, none missing
    added = {pair: grade for pair, grade in written.items() if pair not in human}
    graded = {(q, d) for q, d in expected_holes(dl19, runs) if not d.endswith("99")}
    assert set(added) == graded and all(g == unjudged_grade(d) for (_, d), g in added.items())
    provenance = jsonl(Path(str(filled["path"]) + ".provenance.jsonl"))
    assert {(r["query_id"], r["doc_id"]) for r in provenance} == graded and len(provenance) == len(graded)
    row = provenance[0]
    assert row["judge"] == "umbrela" and row["model"] == "gpt-4o-mini" and row["template"] == "zeroshot-bing"
    assert len(row["prompt_sha256"]) == 64 and row["found_in"]
    left = len(expected_holes(dl19, runs)) - len(graded)
    assert f"{len(graded)} filled, {left} left without a grade" in filled["output"]


def test_hole_at_10_is_a_count_from_the_files_and_0_under_the_filled_qrels(filled, runs, dl19, tmp_path):
    human, written = read_qrels_lines(dl19.qrels_file), read_qrels_lines(filled["path"])
    no_grade = {(q, d) for q, d in expected_holes(dl19, runs) if d.endswith("99")}
    for name, folder in runs.items():
        run = read_trec_run(folder / "run.trec")
        stored = json.loads((folder / "results.json").read_text())["metrics"]["Hole@10"]
        assert stored == pytest.approx(holes(run, human, DEPTH, dl19.qrels)), name
        res = invoke("score", "--qrels", str(filled["path"]), "--run", str(folder / "run.trec"), "-m", "Hole@10",
                     "--json")
        left = sum(1 for q, d in no_grade if d in top_k(run[q], DEPTH)) / DEPTH / len(dl19.qrels)
        assert json.loads(res.output)["aggregate"]["Hole@10"] == pytest.approx(holes(run, written, DEPTH, dl19.qrels))
        assert json.loads(res.output)["aggregate"]["Hole@10"] == pytest.approx(left)
    assert no_grade  # the holes the assessor gave no grade stay holes; every other is filled


def test_rankcorr_equals_scipys_kendall_tau_on_the_two_orders(filled, runs, dl19):
    from scipy.stats import kendalltau

    human, written = read_qrels_lines(dl19.qrels_file), read_qrels_lines(filled["path"])
    before = [ndcg10(f / "run.trec", human) for f in runs.values()]
    after = [ndcg10(f / "run.trec", written) for f in runs.values()]
    res = invoke("--data-dir", str(dl19.root.parent), "judge", "rankcorr", *map(str, runs.values()), "--task",
                 "trec-dl19", "--qrels", str(filled["path"]), "--json")
    out = json.loads(res.output)
    expected = kendalltau(before, after)
    assert out["tau"] == pytest.approx(expected.statistic) and out["p_value"] == pytest.approx(expected.pvalue)
    assert [s["nDCG@10"]["task_qrels"] for s in out["systems"]] == pytest.approx(before)
    assert [s["nDCG@10"]["qrels_file"] for s in out["systems"]] == pytest.approx(after)
    order = sorted(range(3), key=lambda i: -after[i])
    assert [s["rank_qrels_file"] for s in out["systems"]] == [order.index(i) + 1 for i in range(3)]
    assert out["changed_places"] == [s["name"] for s in out["systems"] if s["rank_task_qrels"] != s["rank_qrels_file"]]
    assert [s["name"] for s in out["systems"]] == list(SYSTEMS)


def test_rankcorr_names_the_systems_that_change_places(runs, dl19, tmp_path):
    # qrels under which only bm25-flat's top documents are relevant put it first
    flat = read_trec_run(runs["bm25-flat"] / "run.trec")
    qrels = tmp_path / "flat.qrels"
    qrels.write_text("".join(f"{q} 0 {d} 3\n" for q, hits in flat.items() if q in dl19.qrels
                             for d in top_k(hits, 3)))
    res = invoke("--data-dir", str(dl19.root.parent), "judge", "rankcorr", *(f"{n}={p}" for n, p in runs.items()),
                 "--task", "trec-dl19", "--qrels", str(qrels), "--json")
    out = json.loads(res.output)
    assert [s["name"] for s in out["systems"] if s["rank_qrels_file"] == 1] == ["bm25-flat"]
    assert "bm25-flat" in out["changed_places"]


def test_eval_and_compare_score_under_the_filled_qrels(filled, runs, tmp_path):
    written = read_qrels_lines(filled["path"])
    folder = tmp_path / "eval"
    invoke("eval", "--task", "trec-dl19", "--qrels", str(filled["path"]), "-m", "nDCG@10", "-o", str(folder),
           "--quiet")
    data = json.loads((folder / "results.json").read_text())
    assert data["dataset"]["qrels_file"]["sha256"] == hashlib.sha256(filled["path"].read_bytes()).hexdigest()
    assert data["dataset"]["qrels_replaced"]["n_judgments"] == 9260
    assert data["metrics"]["nDCG@10"] == pytest.approx(ndcg10(runs["bm25-candidates"] / "run.trec", written))
    res = invoke("compare", str(runs["bm25-candidates"]), str(runs["bm25-corpus"]), "--qrels", str(filled["path"]),
                 "--metric", "nDCG@10", "--format", "json", "-B", "100")
    means = json.loads(res.output)["results"][0]["means"]
    assert means == pytest.approx({n: ndcg10(runs[n] / "run.trec", written) for n in ("bm25-candidates",
                                                                                       "bm25-corpus")})


def test_a_dry_run_prices_the_fill_and_writes_nothing(runs, dl19, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "dry.qrels"
    res = invoke("--data-dir", str(dl19.root.parent), "judge", "fill", *map(str, runs.values()), "--task",
                 "trec-dl19", "--llm", "openai:gpt-4o-mini", "--dry-run", "--cache-dir", str(tmp_path / "c"),
                 "-o", str(out))
    row = next(line for line in res.output.splitlines() if line.startswith("openai:gpt-4o-mini"))
    assert int(row.split()[1]) == len(expected_holes(dl19, runs)) and float(row.split()[-1]) > 0
    assert "DRY RUN" in res.output and not out.exists()


def test_failed_calls_make_the_fill_incomplete_and_write_nothing(runs, dl19, tmp_path):
    out = tmp_path / "failed.qrels"
    with TestServer(reply=dl19.assessor(fail=lambda q, d: d.endswith("7"))) as srv:
        res = invoke("--data-dir", str(dl19.root.parent), "judge", "fill", str(runs["bm25-corpus"]), "--task",
                     "trec-dl19", "--llm", srv.spec(), "--cache-dir", str(tmp_path / "c"), "--llm-budget", "2",
                     "-o", str(out), ok=False)
    assert res.exit_code == 3, res.output
    assert "INCOMPLETE" in res.output and not out.exists()


def test_a_results_folder_of_another_task_is_one_message(runs, dl19, tmp_path):
    res = invoke("--data-dir", str(dl19.root.parent), "judge", "fill", str(runs["bm25-corpus"]), "--task",
                 "trec-dl20", "--llm", "openai:gpt-4o-mini", "--dry-run", "-o", str(tmp_path / "x.qrels"), ok=False)
    assert res.exit_code == 2 and "not 'trec-dl20'" in res.output and "Traceback" not in res.output


def test_report_scores_under_the_filled_qrels(filled, runs, tmp_path):
    pytest.importorskip("jinja2", reason="needs jinja2: pip install 'harness-ir[report]'")
    written = read_qrels_lines(filled["path"])
    out = tmp_path / "report.html"
    invoke("report", str(runs["bm25-candidates"]), str(runs["bm25-corpus"]), "--qrels", str(filled["path"]),
           "-B", "100", "-o", str(out))
    html = out.read_text()
    for name in ("bm25-candidates", "bm25-corpus"):
        assert f"{ndcg10(runs[name] / 'run.trec', written):.4f}" in html
    before = json.loads((runs["bm25-corpus"] / "results.json").read_text())["metrics"]["nDCG@10"]
    assert f"{before:.4f}" not in html  # the stored figure, under NIST's qrels, is not the one shown


def test_the_grades_written_follow_the_scale(dl19):
    from types import SimpleNamespace

    from harness.assessment.fill import default_scale, written_grade
    from harness.concepts.qrels import Qrels

    assert default_scale(SimpleNamespace(qrels=Qrels(dl19.qrels))) == "judge"  # NIST graded 0-3
    assert default_scale(SimpleNamespace(qrels=Qrels({"q": {"a": 1, "b": 0}}))) == "binary"
    assert [written_grade(g, "binary", 2.0) for g in (0, 1, 2, 3)] == [0, 0, 1, 1]
    assert [written_grade(g, "judge", 2.0) for g in (0, 1, 2, 3)] == [0, 1, 2, 3]


def test_a_judge_spec_setting_its_own_depth_is_refused(runs, dl19, tmp_path):
    res = invoke("--data-dir", str(dl19.root.parent), "judge", "fill", str(runs["bm25-corpus"]), "--task",
                 "trec-dl19", "--judge", "umbrela:depth=3", "--llm", "openai:gpt-4o-mini", "--dry-run", "-o",
                 str(tmp_path / "x.qrels"), ok=False)
    assert res.exit_code == 2 and "leave depth out" in res.output
