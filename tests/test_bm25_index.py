"""BM25 top k among touched documents, and the BM25 index on disk (issue 28).

The selection is checked against two independent computations on many random queries (ties
included): rank_bm25's score vector ranked by ``Run.from_scores`` (score desc, then doc id desc) and
the full-partition method. The index is built, saved, loaded memory-mapped and must give the same
runs; tampered index files end in one message and exit 2 through the CLI.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from harness import Context, evaluate
from harness.api import build_index, index_info
from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.run import Run
from harness.retrievers.bm25 import BM25Retriever
from harness.retrievers.bm25_postings import build_postings
from harness.retrievers.bm25_topk import top_k_full

WORDS = [f"w{i}" for i in range(30)]


def random_corpus(seed: int, n_docs: int, n_words: int = 30, max_len: int = 12) -> dict[str, Document]:
    """Few words and short documents: many equal scores. Ids sort differently from their order."""
    rng = random.Random(seed)
    ids = rng.sample(range(10 * n_docs), n_docs)
    return {f"d{i}": Document(f"d{i}", " ".join(rng.choices(WORDS[:n_words], k=rng.randint(0, max_len))))
            for i in ids}


def random_queries(seed: int, n: int) -> dict[str, str]:
    rng = random.Random(seed + 1)
    pool = WORDS + ["unknown", "zz"]
    return {f"q{i}": " ".join(rng.choices(pool, k=rng.randint(1, 5))) for i in range(n)}


def reference_run(r: BM25Retriever, corpus: dict[str, Document], queries: dict[str, str], k: int):
    """rank_bm25's scores, ranked by Run.from_scores (score desc, then doc id desc), cut at k."""
    tokenized = [r.tokenizer(d.full_text()) for d in corpus.values()]
    ref = BM25Okapi(tokenized, k1=r.k1, b=r.b, epsilon=r.epsilon)
    out = {}
    for qid, text in queries.items():
        scores = ref.get_scores(r.tokenizer(text))
        run = Run.from_scores({qid: dict(zip(corpus, scores.tolist(), strict=True))})
        out[qid] = run[qid][:k]
    return out


def full_partition_run(r: BM25Retriever, queries: dict[str, str], k: int):
    ids = r.doc_ids
    out = {}
    for qid, text in queries.items():
        scores = r.get_scores(r.tokenizer(text))
        top = top_k_full(scores, k, r._arrays["rank"])
        out[qid] = [(ids[i], float(scores[i])) for i in top.tolist()]
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [1, 3, 10, 40, 1000])
def test_top_k_equals_rank_bm25_and_full_partition(seed, k):
    corpus = {d: doc for d, doc in random_corpus(seed, 60).items() if doc.text}  # rank_bm25: no 0/0
    r = BM25Retriever(stopwords="none", stemmer="none")
    r.index(corpus)
    queries = random_queries(seed, 40)
    run = r.search(queries, k)
    expected = reference_run(r, corpus, queries, k)
    full = full_partition_run(r, queries, k)
    for qid in queries:
        assert run[qid] == expected[qid] == full[qid], qid  # ids, order and scores bit for bit


def test_k_larger_than_touched_documents_pads_with_highest_ids():
    corpus = {f"d{i:02d}": Document(f"d{i:02d}", "common filler" if i % 3 else "rare common") for i in range(30)}
    r = BM25Retriever(stopwords="none", stemmer="none")
    r.index(corpus)
    # 'rare' touches 10 documents; 15 asked: the other 5 are zero-score documents, highest ids first
    run = r.search({"q": "rare"}, 15)
    touched = sorted((d for d in corpus if int(d[1:]) % 3 == 0), reverse=True)
    assert run.doc_ids("q")[:10] == touched and all(s > 0 for _, s in run["q"][:10])
    assert run["q"][10:] == [(d, 0.0) for d in ["d29", "d28", "d26", "d25", "d23"]]
    assert run["q"] == reference_run(r, corpus, {"q": "rare"}, 15)["q"]


def test_query_with_no_known_term_ranks_by_doc_id():
    corpus = random_corpus(3, 25)
    r = BM25Retriever(stopwords="none", stemmer="none")
    r.index(corpus)
    run = r.search({"q": "nothing here matches"}, 7)
    assert run["q"] == [(d, 0.0) for d in sorted(corpus, reverse=True)[:7]]
    assert r.search({"q": "nothing"}, 100).doc_ids("q") == sorted(corpus, reverse=True)


@pytest.mark.parametrize("epsilon", [-0.5, 0.0])
def test_negative_or_zero_idf_floor_matches_reference(epsilon):
    # most documents hold 'common': its idf is negative and floored to epsilon * average_idf <= 0
    corpus = {f"d{i}": Document(f"d{i}", "common " + " ".join(WORDS[i % 4: i % 4 + 2]) if i % 5 else "common")
              for i in range(20)}
    r = BM25Retriever(epsilon=epsilon, stopwords="none", stemmer="none")
    r.index(corpus)
    assert r._arrays["weights"].min() <= 0
    queries = {"a": "common", "b": "common w1", "c": "w0 w3 common common", "d": "zz"}
    for k in (3, 20, 50):
        run = r.search(queries, k)
        expected = reference_run(r, corpus, queries, k)
        assert all(run[q] == expected[q] for q in queries)


def test_blocked_build_equals_one_block(monkeypatch):
    from harness.retrievers import bm25_postings

    corpus = random_corpus(5, 300, max_len=30)
    texts = [d.full_text() for d in corpus.values()]
    r = BM25Retriever(stopwords="english", stemmer="none")
    one = build_postings(texts, r.tokenizer, 1.5, 0.75, 0.25)
    monkeypatch.setattr(bm25_postings, "CHUNK", 5)  # weights written a few terms at a time
    blocked = build_postings(texts, r.tokenizer, 1.5, 0.75, 0.25, block_docs=7)
    assert one.terms == blocked.terms and one.avgdl == blocked.avgdl
    for name in ("weights", "docs", "offsets", "idf", "doc_len"):
        assert np.array_equal(getattr(one, name), getattr(blocked, name)), name


def test_empty_corpus_and_all_empty_documents_are_errors(tmp_path):
    with pytest.raises(HarnessError, match="empty"):
        BM25Retriever().index({})
    with pytest.raises(HarnessError, match="no(ne of the)? .*token"):
        BM25Retriever().index({"a": Document("a", ""), "b": Document("b", "the of")})
    assert not (tmp_path / "idx").exists()


# -- the index on disk ---------------------------------------------------------------------------


def test_saved_index_gives_the_same_runs(tmp_path):
    from harness.retrievers.bm25 import build_index as build_bm25

    corpus = random_corpus(11, 200, max_len=20)
    queries = random_queries(11, 60)
    mem = BM25Retriever(k1=1.2, b=0.6, stopwords="english", stemmer="none")
    report = build_bm25(mem, corpus, tmp_path / "idx")
    assert report.documents == 200 and report.postings == mem._arrays["weights"].size
    loaded = BM25Retriever(index=str(tmp_path / "idx"))
    assert isinstance(loaded._arrays["weights"], np.ndarray) and not loaded._arrays["weights"].flags.writeable
    assert loaded.config()["k1"] == 1.2 and loaded.config()["stopwords"] == "english"
    loaded.index(corpus)  # checks the corpus
    for k in (1, 10, 500):
        assert loaded.search(queries, k) == mem.search(queries, k)
    assert loaded.idf == mem.idf and loaded.doc_ids == mem.doc_ids
    with pytest.raises(HarnessError, match="other parameters"):
        BM25Retriever(index=str(tmp_path / "idx"), k1=0.9)
    with pytest.raises(HarnessError, match="already holds an index"):
        build_bm25(BM25Retriever(), corpus, tmp_path / "idx")
    other = dict(corpus)
    first = next(iter(other))
    other[first] = Document(first, other[first].text + " extra")
    with pytest.raises(HarnessError, match="other texts"):
        loaded.index(other)
    with pytest.raises(HarnessError, match="another corpus"):
        loaded.index(dict(list(corpus.items())[:-1]))


def test_demo_index_reproduces_the_published_figure(tmp_path):
    context = Context.create(cache_dir=str(tmp_path / "cache"))
    report = build_index(tmp_path / "idx", task="demo", retriever="bm25", context=context)
    assert report.documents == 40
    assert index_info(tmp_path / "idx")["kind"] == "harness-bm25-index"
    res = evaluate("demo", retriever=f"bm25:index={tmp_path / 'idx'}", context=context, progress=False)
    mem = evaluate("demo", retriever="bm25", context=context, progress=False)
    assert round(res.metrics["nDCG@10"], 4) == 0.7491 == round(mem.metrics["nDCG@10"], 4)
    assert {m: dict(run) for m, run in res.runs.items()} == {m: dict(run) for m, run in mem.runs.items()}


def harness_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          env={**os.environ})


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bm25idx")
    res = harness_cli("index", "build", "-r", "bm25", "--task", "demo", "-o", str(root / "idx"))
    assert res.returncode == 0, res.stderr
    assert "BM25 index of 40 documents" in res.stdout
    return root / "idx"


def _set_manifest(folder: Path, **changes) -> None:
    m = json.loads((folder / "index.json").read_text())
    m.update(changes)
    (folder / "index.json").write_text(json.dumps(m))


def _save(folder: Path, name: str, arr: np.ndarray, allow_pickle: bool = False) -> None:
    with open(folder / f"{name}.npy", "wb") as fh:
        np.save(fh, arr, allow_pickle=allow_pickle)


TAMPER = {
    "k1 a string": (lambda f: _set_manifest(f, k1="1.5"), "'k1'"),
    "documents huge": (lambda f: _set_manifest(f, documents=10**15), "counts out of bounds"),
    "postings wrong": (lambda f: _set_manifest(f, postings=2000), "index.json"),
    "arrays not a dict": (lambda f: _set_manifest(f, arrays=[1]), "'arrays'"),
    "complete false": (lambda f: _set_manifest(f, complete=False), "did not finish"),
    "other kind": (lambda f: _set_manifest(f, kind="harness-dense-index"), "index.json"),
    "docs shape": (lambda f: _save(f, "docs", np.zeros(7, dtype=np.int32)), "docs.npy"),
    "weights dtype": (lambda f: _save(f, "weights", np.load(f / "weights.npy").astype(np.float32)), "weights.npy"),
    "pickled rank": (lambda f: _save(f, "rank", np.array([{"a": 1}] * 40, dtype=object), True), "rank.npy"),
    "doc out of range": (lambda f: _save(f, "docs", np.load(f / "docs.npy") + 1000), "outside the corpus"),
    "offsets decrease": (lambda f: _save(f, "offsets", np.load(f / "offsets.npy")[::-1].copy()), "offsets.npy"),
    "weight nan": (lambda f: _save(f, "weights", np.load(f / "weights.npy") * np.nan), "not finite"),
    "rank repeats": (lambda f: _save(f, "rank", np.zeros(40, dtype=np.int32)), "rank.npy"),
    "ids not strings": (lambda f: (f / "ids.json").write_text(json.dumps(list(range(40)))), "ids.json"),
    "ids renamed": (lambda f: (f / "ids.json").write_text(json.dumps([f"x{i}" for i in range(40)])), "digest"),
    "terms truncated": (lambda f: (f / "terms.json").write_text("[\"a\", "), "terms.json"),
    "manifest not json": (lambda f: (f / "index.json").write_text("{"), "index.json"),
    "array missing": (lambda f: (f / "idf.npy").unlink(), "idf.npy is missing"),
    "array a link": (lambda f: ((f / "idf.npy").rename(f.parent / "elsewhere.npy"),
                                (f / "idf.npy").symlink_to(f.parent / "elsewhere.npy")), "symbolic link"),
}


@pytest.mark.parametrize("case", sorted(TAMPER))
def test_tampered_index_is_one_message_and_exit_2(pristine, tmp_path, case):
    """With verify=false (no sha256 of the files: tests/test_untrusted_bm25.py checks those), each
    malformed file is still refused by the checks of its structure and values."""
    folder = tmp_path / "idx"
    shutil.copytree(pristine, folder)
    tamper, needle = TAMPER[case]
    tamper(folder)
    res = harness_cli("eval", "--task", "demo", "--retriever", f"bm25:index={folder},verify=false", "--quiet")
    err = res.stderr.strip()
    assert res.returncode == 2, (res.returncode, err)
    assert "Traceback" not in err and needle in err and len(err.splitlines()) == 1, err
    assert "nDCG" not in res.stdout


def test_cli_index_of_another_corpus_is_refused(pristine, tmp_path):
    from harness.retrievers.bm25 import build_index as build_bm25

    build_bm25(BM25Retriever(), random_corpus(2, 40), tmp_path / "other")
    res = harness_cli("eval", "--task", "demo", "--retriever", f"bm25:index={tmp_path / 'other'}", "--quiet")
    assert res.returncode == 2 and "another corpus" in res.stderr and "Traceback" not in res.stderr, res.stderr
    again = harness_cli("index", "build", "-r", "bm25", "--task", "demo", "-o", str(pristine))
    assert again.returncode == 2 and "--overwrite" in again.stderr and "Traceback" not in again.stderr
    info = harness_cli("index", "info", str(pristine))
    assert info.returncode == 0 and "BM25: k1 1.5" in info.stdout and "40, 966 terms" in info.stdout, info.stderr


def test_pickled_array_is_never_unpickled(pristine, tmp_path, monkeypatch):
    import pickle

    folder = tmp_path / "idx"
    shutil.copytree(pristine, folder)
    _save(folder, "idf", np.array([object()] * 3, dtype=object), allow_pickle=True)
    calls = []
    monkeypatch.setattr(pickle, "load", lambda *a, **k: calls.append(a))
    with pytest.raises(HarnessError, match="idf.npy"):
        BM25Retriever(index=str(folder))
    assert calls == []


def test_scifact_index_gives_the_published_figure(tmp_path):
    from harness.testing import require_data, shared_data_dir

    data = shared_data_dir(Path(__file__).resolve().parents[1])
    require_data(data, "scifact/scifact_csv.zip", "scifact/qrels.beir-v1.0.0-scifact.test.txt", fetch="scifact")
    context = Context.create(cache_dir=str(tmp_path / "cache"), data_dir=str(data))
    build_index(tmp_path / "idx", task="scifact", retriever="bm25", context=context)
    disk = evaluate("scifact", retriever=f"bm25:index={tmp_path / 'idx'}", context=context, progress=False)
    mem = evaluate("scifact", retriever="bm25", context=context, progress=False)
    assert round(disk.metrics["nDCG@10"], 4) == 0.6827 == round(mem.metrics["nDCG@10"], 4)
    assert {m: dict(run) for m, run in disk.runs.items()} == {m: dict(run) for m, run in mem.runs.items()}
