"""BRIGHT end to end from an empty data folder through the loopback Hub imitation (``HubServer`` via
``HF_ENDPOINT``), the CLI in a subprocess as a user's shell runs it. The repository holds the real layout
(``<config>/<split>-00000-of-00001.parquet``) at the pinned commit.

Every check is made on the WRITTEN run files: no ``excluded_ids`` document in any ranking, and the
metrics equal the official computation on the same run and qrels (pytrec_eval's ``ndcg_cut``,
``map_cut``, ``recall``, ``P``, ``recip_rank``, averaged over the queries pytrec_eval scores, as
BRIGHT's ``calculate_retrieval_metrics`` does) and MTEB's evaluator (``calculate_retrieval_scores``)
where ``mteb`` is installed."""

from __future__ import annotations

import importlib.util
import json
from importlib import metadata
from pathlib import Path

import pytest
from bright_fixture import BIO_EXAMPLES, BIO_GPT4, BIO_LONG, SPLITS, repository
from harness.testing import HubServer

from harness_bright import HUB_REPO, REVISION


def _installed() -> bool:
    return any(ep.value == "harness_bright" for ep in metadata.entry_points(group="harness"))


pytestmark = [
    pytest.mark.skipif(not _installed(),
                       reason="the CLI sees installed plugins only: pip install -e plugins/harness-bright"),
    pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="BRIGHT is Parquet: pip install pyarrow"),
]


@pytest.fixture
def hub():
    with HubServer() as server:
        server.add_repo(HUB_REPO, repository(), commit=REVISION)
        yield server


def make_shell(hub: HubServer, tmp_path: Path):
    """``harness ...`` in a subprocess with HF_ENDPOINT at the imitation and an empty data folder."""
    return hub.shell(tmp_path)


@pytest.fixture
def shell(hub, tmp_path):
    return make_shell(hub, tmp_path)


def fetched(hub: HubServer) -> set[str]:
    return {r.path for r in hub.requests if r.method == "GET" and r.file is not None}


def resolve(path: str) -> str:
    return f"/datasets/{HUB_REPO}/resolve/{REVISION}/{path}"


def written_run(out: Path) -> dict[str, dict[str, float]]:
    """The run file results.json names, read line by line (``qid Q0 doc rank score tag``)."""
    files = json.loads((out / "results.json").read_text())["files"]
    [name] = [v for k, v in files.items() if k.startswith("run[")]
    run: dict[str, dict[str, float]] = {}
    for line in (out / name).read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        assert doc not in run.setdefault(qid, {}), f"{doc} twice for {qid}"
        run[qid][doc] = float(score)
    return run


def qrels_of(examples: list[dict], field: str = "gold_ids") -> dict[str, dict[str, int]]:
    return {e["id"]: {g: 1 for g in e[field]} for e in examples}


def official(run: dict, qrels: dict) -> dict[str, float]:
    """BRIGHT's calculate_retrieval_metrics (xlang-ai/BRIGHT retrievers.py), unrounded."""
    import pytrec_eval

    ks = "1,5,10,25,50,100"
    scores = pytrec_eval.RelevanceEvaluator(qrels, {f"map_cut.{ks}", f"ndcg_cut.{ks}", f"recall.{ks}", f"P.{ks}",
                                                    "recip_rank"}).evaluate(run)
    n = len(scores)
    return {"nDCG@10": sum(s["ndcg_cut_10"] for s in scores.values()) / n,
            "MAP@10": sum(s["map_cut_10"] for s in scores.values()) / n,
            "Recall@100": sum(s["recall_100"] for s in scores.values()) / n,
            "P@5": sum(s["P_5"] for s in scores.values()) / n,
            "MRR": sum(s["recip_rank"] for s in scores.values()) / n}


def check_scores(out: Path, qrels: dict, metrics: tuple[str, ...] = ("nDCG@10", "MAP@10", "Recall@100", "P@5", "MRR")):
    """results.json's metrics equal the official computation on the written run (and MTEB's, rounded as
    both round: 5 decimals)."""
    got = json.loads((out / "results.json").read_text())["metrics"]
    run = written_run(out)
    expected = official(run, qrels)
    for name in metrics:
        assert got[name] == pytest.approx(expected[name], abs=1e-12), name
    if importlib.util.find_spec("mteb") is None:
        return  # the MTEB comparison is skipped where mteb is absent (it is not a project dependency)
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores

    res = calculate_retrieval_scores(run, qrels, [1, 5, 10, 100])
    mteb_keys = {"nDCG@10": res.ndcg["NDCG@10"], "MAP@10": res.map["MAP@10"], "Recall@100": res.recall["Recall@100"],
                 "P@5": res.precision["P@5"]}
    for name, value in mteb_keys.items():
        if name in metrics:
            assert round(got[name], 5) == value, name


def assert_no_excluded(run: dict, examples: list[dict]) -> None:
    for e in examples:
        excluded = set(e["excluded_ids"]) - {"N/A"}
        assert e["id"] in run
        assert not excluded & set(run[e["id"]]), (e["id"], excluded & set(run[e["id"]]))


def test_biology_runs_from_an_empty_folder_with_excluded_ids_removed(hub, shell, tmp_path):
    out = tmp_path / "out"
    res = shell("eval", "--task", "bright:biology", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    # exactly the two files the task reads were fetched, at the pinned commit
    assert fetched(hub) == {resolve("examples/biology-00000-of-00001.parquet"),
                            resolve("documents/biology-00000-of-00001.parquet")}
    run = written_run(out)
    assert_no_excluded(run, BIO_EXAMPLES)
    check_scores(out, qrels_of(BIO_EXAMPLES))
    saved = json.loads((out / "results.json").read_text())
    assert saved["dataset"]["repo"] == HUB_REPO and saved["dataset"]["revision"] == REVISION
    assert saved["dataset"]["excluded"] == {"queries": 2, "ids": 2, "not_in_corpus": 0}
    # the excluded documents are ones BM25 ranks in the top 10 when nothing is excluded (the same data,
    # the same retriever, called directly), and the written ranking is that one with them removed
    from harness import Context, load_dataset

    ctx = Context.create(data_dir=shell.data)
    ds = load_dataset("bright:task=biology", ctx)
    assert ds.excluded == {"0": frozenset({"insects/query_copy_1.txt"}),
                           "2": frozenset({"plants/Photosynthesis_1.txt"})}
    bm25 = ctx.registry.create("retriever", "bm25", ctx)
    bm25.index(ds.corpus)
    ranked = bm25.search({q: v.text for q, v in ds.queries["default"].items()}, 1000)
    assert ranked.doc_ids("0")[0] == "insects/query_copy_1.txt"
    assert "plants/Photosynthesis_1.txt" in ranked.doc_ids("2")[:10]
    for qid in ("0", "1", "2"):
        assert list(run[qid]) == [d for d in ranked.doc_ids(qid) if d not in ds.excluded.get(qid, ())]


def test_reasoning_queries_are_the_configs_query_field(hub, shell, tmp_path):
    out, base = tmp_path / "gpt4", tmp_path / "base"
    res = shell("eval", "--dataset", "bright:task=biology,query=gpt4_reason", "--depth", "1000",
                "--metric", "nDCG@10", "--metric", "MAP@10", "--metric", "Recall@100", "--metric", "P@5",
                "--metric", "MRR", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    assert resolve("gpt4_reason/biology-00000-of-00001.parquet") in fetched(hub)
    assert resolve("examples/biology-00000-of-00001.parquet") not in fetched(hub)
    run = written_run(out)
    assert_no_excluded(run, BIO_GPT4)
    check_scores(out, qrels_of(BIO_GPT4))
    assert json.loads((out / "results.json").read_text())["dataset"]["query"] == "gpt4_reason"
    # the reasoning text names birds, the original query does not: only the reasoning query scores them
    assert shell("eval", "--dataset", "bright:task=biology", "-o", str(base), "-q").returncode == 0
    assert run["1"]["birds/Migration_0.txt"] > 0 and written_run(base)["1"]["birds/Migration_0.txt"] == 0


def test_long_documents_are_scored_against_gold_ids_long(hub, shell, tmp_path):
    out = tmp_path / "long"
    res = shell("eval", "--dataset", "bright:task=biology,documents=long", "--metric", "nDCG@10",
                "--metric", "Recall@100", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    assert resolve("long_documents/biology-00000-of-00001.parquet") in fetched(hub)
    assert resolve("documents/biology-00000-of-00001.parquet") not in fetched(hub)
    run = written_run(out)
    assert {d for docs in run.values() for d in docs} == set(BIO_LONG)  # the long corpus, every document scored
    check_scores(out, qrels_of(BIO_EXAMPLES, "gold_ids_long"), ("nDCG@10", "Recall@100"))
    excluded = json.loads((out / "results.json").read_text())["dataset"]["excluded"]
    assert excluded["not_in_corpus"] == 2  # short-document ids: no long document has them


def test_long_documents_of_a_split_without_them_is_one_message(hub, shell):
    res = shell("eval", "--dataset", "bright:task=leetcode,documents=long")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "leetcode" in lines[0] and "pony" in lines[0], res.stderr
    assert fetched(hub) == set()


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                    reason="the dense reranker needs the dense extra: pip install 'harness-ir[dense]'")
def test_a_reranker_stage_never_ranks_an_excluded_document(hub, shell, tmp_path):
    out = tmp_path / "rerank"
    res = shell("eval", "--task", "bright:biology", "--reranker", "dense", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    saved = json.loads((out / "results.json").read_text())
    assert [r["spec"] for r in saved["components"]["rerankers"]] == ["dense"]
    run = written_run(out)
    assert_no_excluded(run, BIO_EXAMPLES)
    check_scores(out, qrels_of(BIO_EXAMPLES))


def test_the_suite_runs_every_task_and_reports_the_mean(hub, shell, tmp_path):
    out = tmp_path / "suite"
    res = shell("eval", "--task", "bright", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    assert fetched(hub) == {resolve(f"{c}/{s}-00000-of-00001.parquet")
                            for s in SPLITS for c in ("examples", "documents")}
    saved = json.loads((out / "results.json").read_text())
    members = [json.loads((out / f"bright_{s}" / "results.json").read_text()) for s in SPLITS]
    assert saved["metrics"]["nDCG@10"] == pytest.approx(sum(m["metrics"]["nDCG@10"] for m in members) / 12)
    for split in SPLITS:
        run = written_run(out / f"bright_{split}")
        if split != "biology":
            assert f"{split}/doc_3.txt" not in run[f"{split}-q0"]  # its excluded document
    assert_no_excluded(written_run(out / "bright_biology"), BIO_EXAMPLES)


def test_an_excluded_document_judged_relevant_is_one_message(tmp_path):
    bad = [dict(BIO_EXAMPLES[0]), *BIO_EXAMPLES[1:]]
    bad[0]["excluded_ids"] = ["insects/Phototaxis_2.txt"]  # also in its gold_ids
    with HubServer() as server:
        server.add_repo(HUB_REPO, repository({"biology": bad}), commit=REVISION)
        res = make_shell(server, tmp_path)("eval", "--task", "bright:biology", "-o", str(tmp_path / "o"), "-q")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "query '0'" in lines[0] and "insects/Phototaxis_2.txt" in lines[0] and "examples/biology" in lines[0]
