"""InstructIR end to end from an empty data folder through the Hub imitation; Robustness@10 hand-computed
where the minimum per group matters, and equal to MTEB's ``robustness_at_10`` and to the authors'
``robustness_evaluate`` on the same run and qrels."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import defaultdict
from importlib import metadata

import pytest
from harness import Context, evaluate
from harness.formats import read_trec_run
from harness.metrics import id_group, robustness
from harness.testing import HubServer, plugin_registry
from instructir_fixture import BASE, INSTRUCTIONS, QRELS, TableRetriever, repository

import harness_instructir
from harness_instructir import FORMS, REPO, REVISION

ALL_METRICS = ["nDCG@10", "instructir-Robustness@10", "instructir-Robustness@10:group=text"]


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """``mteb/InstructIR-mteb`` at MTEB's pin, reached through HF_ENDPOINT; downloads on. CI sets
    HF_HUB_OFFLINE=1 (nothing may reach the internet); the imitation is on loopback, so offline mode is
    turned off for these tests (``HubServer.online``)."""
    with HubServer() as server:
        server.add_repo(REPO, repository(), commit=REVISION)
        server.downloading(monkeypatch, tmp_path / "hf")
        yield server


def _context(tmp_path) -> Context:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return Context.create(registry=plugin_registry(harness_instructir), data_dir=data)


# -- hand-computed -------------------------------------------------------------------------------------
def test_min_per_group_hand_computed(hub, tmp_path):
    """Target ranks (one relevant document per query, nDCG@10 = 1/log2(rank + 1)):
    1078446_1 rank 1 -> 1; 1078446_2 rank 3 -> 1/log2(4) = 0.5; 1078446_3 rank 2 -> 1/log2(3) = 0.6309;
    839488_1 rank 7 -> 1/log2(8) = 1/3; 839488_2 rank 1 -> 1.
    Minima: 1078446 -> 0.5, 839488 -> 1/3; Robustness@10 = (0.5 + 1/3) / 2 = 0.41667, while the mean
    nDCG@10 (the authors' micro average) is (1 + 0.5 + 0.6309 + 1/3 + 1) / 5 = 0.6929."""
    retriever = TableRetriever()
    res = evaluate("instructir", retriever=retriever, metrics=ALL_METRICS, progress=False,
                   context=_context(tmp_path))
    assert res.metrics["Robustness@10"] == pytest.approx((0.5 + 1 / 3) / 2)
    assert res.metrics["Robustness@10[text]"] == pytest.approx((0.5 + 1 / 3) / 2)
    from math import log2

    assert res.metrics["nDCG@10"] == pytest.approx((1 + 0.5 + 1 / log2(3) + 1 / 3 + 1) / 5)
    assert res.metric_details["Robustness@10 groups"] == 2
    # the authors' query text: instruction [SEP] query
    assert retriever.seen == {q: f"{i} [SEP] {BASE[q.split('_')[0]]}" for q, i in INSTRUCTIONS.items()}


def test_mteb_query_form(hub, tmp_path):
    """``instructir:mteb`` gives the retriever MTEB's ``text + " " + instruction``; the same ranking scores
    the same (the metric does not read the query text under ``group=id``)."""
    retriever = TableRetriever()
    res = evaluate("instructir:mteb", retriever=retriever, progress=False, context=_context(tmp_path))
    assert retriever.seen == {q: f"{BASE[q.split('_')[0]]} {i}" for q, i in INSTRUCTIONS.items()}
    assert res.metrics["Robustness@10"] == pytest.approx((0.5 + 1 / 3) / 2)
    assert FORMS == {"authors": "{instruction} [SEP] {text}", "mteb": "{text} {instruction}"}


def test_grouping_is_a_parameter():
    """The core's ``robustness`` with MTEB's id grouping and with a text grouping that parts from it: a_2's
    text is b's base query. Values a_1 0.2, a_2 0.9, b_1 1.0.
    By id: a -> min(0.2, 0.9) = 0.2, b -> 1.0: mean 0.6. By text: "query a" -> 0.2, "query b" ->
    min(0.9, 1.0) = 0.9: mean 0.55. The plain mean would be 0.7."""
    per = {"a_1": 0.2, "a_2": 0.9, "b_1": 1.0}
    assert robustness(per, id_group) == (pytest.approx(0.6), {"a": 0.2, "b": 1.0})
    text = {"a_1": "query a", "a_2": "query b", "b_1": "query b"}
    assert robustness(per, text)[0] == pytest.approx(0.55)
    assert robustness(per, text)[1] == {"query a": 0.2, "query b": 0.9}


# -- the same run scored by MTEB's and the authors' code -------------------------------------------------
def _written_run(out) -> dict[str, dict[str, float]]:
    (path,) = list(out.rglob("*.trec"))
    run = read_trec_run(path)
    return {q: dict(run.scores(q)) for q in run}


def authors_robustness_evaluate(queries: dict[str, str], qrels: dict[str, dict[str, int]],
                                results: dict[str, dict[str, float]], k_values: list[int]) -> dict[str, float]:
    """A transcription of kaistAI/InstructIR ``eval/robust_eval.py::CustomEvaluateRetrieval.robustness_evaluate``
    (commit 58162a0fb2484eaf02080a538f040221362eecba), ``type='query'``, ``ignore_identical_ids=True``;
    NDCG only (MAP, Recall, P are computed alike). Line numbers of that file."""
    import pytrec_eval

    for qid, rels in results.items():  # l. 20-27: identical query and document ids are dropped
        for pid in list(rels):
            if qid == pid:
                results[qid].pop(pid)
    group_metric: dict[str, list[float]] = {}
    for k in k_values:  # l. 32-41
        group_metric[f"NDCG@{k}"] = []
        group_metric[f"NDCG@{k}_min"] = []
    ndcg_string = "ndcg_cut." + ",".join([str(k) for k in k_values])  # l. 44
    group_per_query: dict[str, dict[str, dict[str, float]]] = {}
    for qid, rels in results.items():  # l. 49-64: grouped by the query after [SEP]
        instruction, query = queries[qid].split("[SEP]")
        query = query.strip()
        group_per_query.setdefault(query, {})[qid] = rels
    for _, group_results in group_per_query.items():  # l. 78-110
        ndcg: dict[str, list[float]] = {f"NDCG@{k}": [] for k in k_values}
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {ndcg_string})
        group_scores = evaluator.evaluate(group_results)
        for query_id in group_scores.keys():
            for k in k_values:
                ndcg[f"NDCG@{k}"].append(group_scores[query_id]["ndcg_cut_" + str(k)])
        for k in k_values:
            group_metric[f"NDCG@{k}_min"].append(min(ndcg[f"NDCG@{k}"]))
            group_metric[f"NDCG@{k}"].extend(ndcg[f"NDCG@{k}"])
    return {f"cluster_{name}_avg": sum(v) / len(v) for name, v in group_metric.items()}  # l. 116-117


@pytest.mark.parametrize("first_stage", ["table", "bm25"])
def test_equals_the_authors_robustness_evaluate(hub, tmp_path, first_stage):
    """The written run and the qrels through the authors' function (queries as the authors wrote them,
    ``instruction [SEP] query``): ``cluster_NDCG@10_min_avg`` is Robustness@10 (either grouping),
    ``cluster_NDCG@10_avg`` is nDCG@10."""
    out = tmp_path / "out"
    res = evaluate("instructir", retriever=TableRetriever() if first_stage == "table" else "bm25",
                   metrics=ALL_METRICS, progress=False, context=_context(tmp_path), output=str(out))
    queries = {q: f"{i} [SEP] {BASE[q.split('_')[0]]}" for q, i in INSTRUCTIONS.items()}
    theirs = authors_robustness_evaluate(queries, QRELS, _written_run(out), [1, 3, 5, 10, 100, 1000])
    assert res.metrics["Robustness@10"] == pytest.approx(theirs["cluster_NDCG@10_min_avg"], abs=1e-12)
    assert res.metrics["Robustness@10[text]"] == pytest.approx(theirs["cluster_NDCG@10_min_avg"], abs=1e-12)
    assert res.metrics["nDCG@10"] == pytest.approx(theirs["cluster_NDCG@10_avg"], abs=1e-12)


@pytest.mark.parametrize("first_stage", ["table", "bm25"])
def test_equals_mtebs_robustness_at_10(hub, tmp_path, first_stage):
    """MTEB's own evaluation of the written run (``calculate_retrieval_scores``, then the ``InstructIR``
    task's ``task_specific_scores``, which calls ``robustness_at_10``)."""
    pytest.importorskip("mteb", reason="mteb is not installed: MTEB's robustness_at_10 cannot be run here")
    import mteb
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores

    out = tmp_path / "out"
    res = evaluate("instructir:mteb", retriever=TableRetriever() if first_stage == "table" else "bm25",
                   progress=False, context=_context(tmp_path), output=str(out))
    results = _written_run(out)
    scores = calculate_retrieval_scores(results, QRELS, [1, 3, 5, 10, 20, 100, 1000])
    task = mteb.get_task("InstructIR")
    assert task.metadata.dataset == {"path": REPO, "revision": REVISION}
    theirs = task.task_specific_scores(scores.all_scores, QRELS, results, hf_split="test", hf_subset="default")
    assert res.metrics["Robustness@10"] == pytest.approx(theirs["robustness_at_10"], abs=1e-12)
    assert res.metrics["nDCG@10"] == pytest.approx(scores.ndcg["NDCG@10"], abs=1e-5)  # MTEB rounds to 5 places
    groups = defaultdict(list)
    for q in QRELS:
        groups[q.split("_")[0]].append(q)
    assert len(groups) == res.metric_details["Robustness@10 groups"] == 2


# -- the CLI from an empty data folder -----------------------------------------------------------------
def _installed() -> bool:
    return any(ep.value == "harness_instructir" for ep in metadata.entry_points(group="harness"))


needs_install = pytest.mark.skipif(not _installed(), reason="the CLI sees installed plugins only: "
                                                            "pip install -e plugins/harness-instructir")


def _cli(*args: str, data) -> subprocess.CompletedProcess:
    env = dict(os.environ, HARNESS_DATA=str(data))
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)


@needs_install
def test_eval_from_an_empty_data_folder(hub, tmp_path):
    """``harness eval --task instructir`` in a subprocess (HF_ENDPOINT read as a shell would): every file
    fetched at the pin, results.json naming the repository, the commit and the sha256 of each byte read,
    the MTEB block (with ``differs``: the authors' query form); ``harness export mteb`` refuses it and
    exports ``instructir:mteb``."""
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "out"
    done = _cli("eval", "--task", "instructir", "-o", str(out), "-q", data=data)
    assert done.returncode == 0, done.stderr
    served = repository()
    gets = {r.path for r in hub.requests if r.method == "GET" and r.file is not None}
    assert gets == {f"/datasets/{REPO}/resolve/{REVISION}/{p}" for p in served}
    saved = json.loads((out / "results.json").read_text())
    ident = saved["dataset"]
    assert ident["repo"] == REPO and ident["revision"] == REVISION
    rel = f"mteb/{REPO}/{REVISION}"
    assert {f["path"]: f["sha256"] for f in ident["files"]} == {
        f"{rel}/{p}": hashlib.sha256(v).hexdigest() for p, v in served.items()}
    assert saved["task"]["query_format"] == "{instruction} [SEP] {text}"
    block = saved["task"]["mteb"]
    assert block["task_name"] == "InstructIR" and block["main_score"] == "robustness_at_10" and block["differs"]
    assert {"nDCG@10", "Robustness@10"} <= set(saved["metrics"])

    refused = _cli("export", "mteb", str(out), "-o", str(tmp_path / "mteb"), "--model", "bm25s", "--revision", "0",
                   data=data)
    assert refused.returncode != 0 and "instruction [SEP] query" in refused.stderr
    out2 = tmp_path / "out-mteb"
    assert _cli("eval", "--task", "instructir:mteb", "-o", str(out2), "-q", data=data).returncode == 0
    done = _cli("export", "mteb", str(out2), "-o", str(tmp_path / "mteb"), "--model", "bm25s", "--revision", "0",
                data=data)
    assert done.returncode == 0, done.stderr
    exported = json.loads((tmp_path / "mteb" / "bm25s" / "0" / "InstructIR.json").read_text())
    (entry,) = exported["scores"]["test"]
    assert exported["dataset_revision"] == REVISION
    saved2 = json.loads((out2 / "results.json").read_text())
    assert entry["main_score"] == entry["robustness_at_10"] == round(saved2["metrics"]["Robustness@10"], 6)


@needs_install
def test_data_download_says_what_it_fetched(hub, tmp_path):
    """A task with no file list (the ``mteb`` reader fetches at load time): ``harness data download`` names
    what it fetched; run again, nothing is fetched and it says the data is in place."""
    data = tmp_path / "data"
    first = _cli("data", "download", "instructir", data=data)
    assert first.returncode == 0, first.stderr
    size = sum(len(v) for v in repository().values())
    assert first.stdout.splitlines() == [
        f"instructir: fetched {len(repository())} file(s), {size:,} bytes, into {data} (read by the task's "
        "loader; the task publishes no file list)"]
    again = _cli("data", "download", "instructir", data=data)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "instructir: nothing to download (the task publishes no files); its data is in place"]
    gets = [r.path for r in hub.requests if r.method == "GET" and r.file is not None]
    assert len(gets) == len(repository())  # the second run fetched nothing
