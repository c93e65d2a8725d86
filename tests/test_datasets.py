"""Dataset factories on the real benchmark files, the packaged demo and the task definitions."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.concepts.errors import DataError
from harness.concepts.task import load_task_file
from harness.datasets import loaders as D
from harness.formats.trec import write_run

REPO = Path(__file__).resolve().parents[1]
TASKS = sorted((REPO / "tasks").glob("*.toml"))


@pytest.fixture
def shared(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_DATA", str(data_dir))
    return data_dir


def mean_ndcg10(ds: D.Dataset) -> float:
    import pytrec_eval

    qrels = ds.qrels["default"]
    ev = pytrec_eval.RelevanceEvaluator(qrels.as_int_dict(), {"ndcg_cut.10"})
    res = ev.evaluate(ds.candidates["default"].to_dict())
    return sum(r["ndcg_cut_10"] for r in res.values()) / len(res)


def sha256sums(root: Path) -> dict[str, str]:
    out = {}
    for line in (root / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        out[name.removeprefix("./")] = digest
    return out


@pytest.mark.parametrize(("year", "n_queries", "expected"), [("19", 43, 0.5058), ("20", 54, 0.4796)])
def test_rankllm_bm25_ndcg10_matches_published(
    shared: Path, year: str, n_queries: int, expected: float
) -> None:
    ds = D.load_rankllm_dataset(f"trec-dl/bm25_top100.dl{year}.json", f"trec-dl/qrels.dl{year}-passage.txt")
    assert len(ds.queries["default"]) == n_queries
    assert all(len(hits) == 100 for hits in ds.candidates["default"].values())
    assert round(mean_ndcg10(ds), 4) == expected
    sums = sha256sums(shared)
    assert [f["path"] for f in ds.identity["files"]] == [
        f"trec-dl/bm25_top100.dl{year}.json", f"trec-dl/qrels.dl{year}-passage.txt"]
    assert all(f["sha256"] == sums[f["path"]] for f in ds.identity["files"])


def test_rankllm_dl20_candidates_decide_query_set(shared: Path) -> None:
    ds = D.load_rankllm_dataset("trec-dl/bm25_top100.dl20.json", "trec-dl/qrels.dl20-passage.txt",
                                topics="trec-dl/topics.dl20.tsv")
    assert len(ds.queries["default"]) == 54  # of 200 topics
    assert ds.meta["topic_text_mismatches"] == 0


def test_trec_dataset_keeps_all_topics_and_run_round_trip(shared: Path, tmp_path: Path) -> None:
    ref = D.load_rankllm_dataset("trec-dl/bm25_top100.dl20.json", "trec-dl/qrels.dl20-passage.txt")
    run_file = write_run(ref.candidates["default"], tmp_path / "bm25.dl20.run", tag="bm25")
    ds = D.load_trec_dataset("trec-dl/topics.dl20.tsv", "trec-dl/qrels.dl20-passage.txt", candidates=run_file)
    assert ds.meta["queries"] == 200 and ds.meta["queries_with_qrels"] == 54
    assert round(mean_ndcg10(ds), 4) == 0.4796
    assert ds.identity["files"][2]["path"] == str(run_file.resolve())  # outside the data folder: absolute


def test_trec_dataset_with_tsv_corpus(tmp_path: Path) -> None:
    (tmp_path / "topics.tsv").write_text("1\tcats\n2\tdogs\n")
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n")
    (tmp_path / "corpus.tsv").write_text("a\tcats purr\nb\tdogs bark\n")
    ds = D.load_trec_dataset(tmp_path / "topics.tsv", tmp_path / "qrels.txt", corpus=tmp_path / "corpus.tsv")
    assert set(ds.corpus) == {"a", "b"} and set(ds.queries["default"]) == {"1", "2"}
    assert ds.name == "topics"


def test_scifact(shared: Path) -> None:
    ds = D.load_scifact_dataset()
    assert len(ds.corpus) == 5183 and len(ds.queries["default"]) == 300
    assert ds.qrels["default"].n_judgments() == 339 and ds.meta["unknown_ids"] == {}
    sums = sha256sums(shared)
    assert {f["path"]: f["sha256"] for f in ds.identity["files"]} == {
        p: sums[p] for p in ("scifact/scifact_csv.zip", "scifact/topics.beir-v1.0.0-scifact.test.tsv.gz",
                             "scifact/qrels.beir-v1.0.0-scifact.test.txt")}


def test_noveleval(shared: Path) -> None:
    ds = D.load_noveleval_dataset()
    assert len(ds.queries["default"]) == 21 and len(ds.corpus) == 420
    assert all(len(h) == 20 for h in ds.candidates["default"].values())


def test_demo_dataset_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "empty"))  # needs nothing from the data folder
    ds = D.load_demo_dataset()
    qs, qrels = ds.queries["default"], ds.qrels["default"]
    assert ds.name == "demo" and len(ds.corpus) == 40 and len(qs) == 10
    assert all(q.instruction for q in qs.values()) and ds.meta["unknown_ids"] == {}
    assert {g for d in qrels.values() for g in d.values()} == {0, 1, 2}
    assert all(2 in qrels[q].values() for q in qs)
    # the same query text with different instructions has different best documents
    same = [q for q in qs.values() if q.text == "What is diabetes?"]
    assert len(same) == 3
    best = [frozenset(qrels.relevant(q.id, 2)) for q in same]
    assert len(set(best)) == 3
    assert [f["path"] for f in ds.identity["files"]] == [
        "harness/data/demo/corpus.jsonl", "harness/data/demo/queries.jsonl", "harness/data/demo/qrels/test.tsv"]


def test_beir_split_queries(tmp_path: Path) -> None:
    root = tmp_path / "b"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "b"}\n')
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert list(D.load_beir_dataset(root).queries["default"]) == ["q1"]
    assert list(D.load_beir_dataset(root, split_queries=False).queries["default"]) == ["q1", "q2"]
    assert D.load_beir_dataset(root).name == "b"


def test_empty_query_set_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "topics.tsv").write_text("\n")
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n")
    with pytest.raises(DataError, match="query set is empty") as exc:
        D.load_trec_dataset(tmp_path / "topics.tsv", tmp_path / "qrels.txt")
    assert str(tmp_path / "topics.tsv") in str(exc.value)
    (tmp_path / "c.json").write_text("[]")
    with pytest.raises(DataError, match="empty"):
        D.load_rankllm_dataset(tmp_path / "c.json", tmp_path / "qrels.txt")


def test_missing_file_names_path_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    with pytest.raises(DataError) as exc:
        D.load_scifact_dataset()
    msg = str(exc.value)
    assert str(tmp_path / "scifact" / "scifact_csv.zip") in msg and "HARNESS_DATA" in msg
    assert "harness data download" in msg


def test_registry_builds_demo() -> None:
    from harness.context import Context

    context = Context.create()
    ds = context.registry.create("dataset", "demo", context)
    assert len(ds.corpus) == 40


@pytest.mark.parametrize("path", TASKS, ids=[p.stem for p in TASKS])
def test_task_files_match_data_and_load(path: Path, shared: Path) -> None:
    task = load_task_file(path)
    assert task.name == path.stem and task.metrics[0] == "nDCG@10"
    sums = sha256sums(shared)
    for f in task.files:
        assert f.url.startswith("https://") and f.sha256 == sums[f.path]
        assert f.size == (shared / f.path).stat().st_size
    factory = getattr(D, {"rankllm": "load_rankllm_dataset", "noveleval": "load_noveleval_dataset",
                          "scifact": "load_scifact_dataset", "demo": "load_demo_dataset"}[task.dataset])
    ds = factory(**task.dataset_args)
    assert ds.queries["default"]
    if task.first_stage == "candidates":
        assert ds.candidates and all(len(h) <= task.depth for h in ds.candidates["default"].values())
    identity_paths = {f["path"] for f in ds.identity["files"]}
    assert {f.path for f in task.files} <= identity_paths
    assert hashlib.sha256(b"").hexdigest() not in {f["sha256"] for f in ds.identity["files"]}
