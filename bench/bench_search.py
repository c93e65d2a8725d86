"""Exact search over an embedding index on disk against the alternatives, on a synthetic index of
``--docs`` x ``--dim`` float16 vectors (default 1,000,000 x 384, about 768 MB) and ``--queries``
queries, top ``--k``.

Three ways, each in a fresh process (peak RSS is per process), the same queries:

- ``index``: :meth:`EmbeddingIndex.search`, the shards read through ``mmap`` in blocks of 50,000 rows
  with a running top-k merge, each shard's sha256 checked before it is first scored (what
  ``dense:index=FOLDER`` does);
- ``index-noverify``: the same without the checksums (``dense:index=FOLDER,verify=false``);
- ``memory``: every vector loaded as one float32 matrix and one full matrix product (what searching
  an in-memory corpus costs when nothing bounds it);
- ``faiss-flat``: FAISS ``IndexFlatIP`` over the float32 vectors (the ``faiss`` extra), when installed.

Printed: peak RSS and queries per second of each, and their ratios to ``memory``, plus whether the
three rankings agree (top-k identical to ``index``, up to float ties).

    python bench/bench_search.py                      # 1,000,000 x 384 float16, 100 queries, k = 100
    python bench/bench_search.py --docs 200000 --json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SHARD = 100_000


def make_index(folder: Path, docs: int, dim: int, seed: int = 0) -> None:
    from harness.retrievers.dense.embedding_index import (
        FORMAT,
        KIND,
        ShardPlan,
        ids_digest,
        plan_shards,
        write_manifest,
        write_shard,
    )

    rng = np.random.default_rng(seed)
    ids = [f"d{i}" for i in range(docs)]
    write_manifest(folder, {"kind": KIND, "format": FORMAT, "encoder": {}, "model": {}, "dimension": dim,
                            "dtype": "float16", "count": docs, "shard_size": SHARD, "ids_sha256": ids_digest(ids),
                            "query_template": "{text}", "doc_template": "{text}", "normalize": True,
                            "source": {"synthetic": True}, "complete": True})
    for plan in plan_shards(docs, SHARD):
        v = rng.standard_normal((plan.end - plan.start, dim), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        write_shard(folder, ShardPlan(plan.number, plan.start, plan.end), ids[plan.start:plan.end], v, "float16")


def queries(n: int, dim: int, seed: int = 1) -> np.ndarray:
    q = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def run_one(way: str, folder: str, nq: int, k: int) -> dict:
    """In a fresh process: one way's search; returns time, peak RSS and the top-k positions."""
    from harness.retrievers.dense.embedding_index import EmbeddingIndex

    index = EmbeddingIndex(folder, verify=way != "index-noverify")
    q = queries(nq, int(index.dimension))
    t = time.perf_counter()
    load = 0.0
    if way.startswith("index"):  # nothing to load: the shards are memory-mapped as they are scored
        idx, _ = index.search(q, k)
    elif way == "memory":
        matrix = index.load()
        load, t = time.perf_counter() - t, time.perf_counter()
        scores = q @ matrix.T
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
        idx = np.take_along_axis(part, order, axis=1)
    else:
        import faiss

        fi = faiss.IndexFlatIP(int(index.dimension))
        fi.add(index.load())
        load, t = time.perf_counter() - t, time.perf_counter()
        _, idx = fi.search(q, k)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"way": way, "load_seconds": load, "seconds": seconds, "qps": nq / seconds,
            "qps_with_load": nq / (seconds + load), "peak_rss_mb": peak / 2 ** 20, "top": np.asarray(idx).tolist()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", nargs=2, metavar=("WAY", "FOLDER"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(run_one(a.child[0], a.child[1], a.queries, a.k)))
        return 0
    ways = ["index", "index-noverify", "memory"]
    try:
        import faiss  # noqa: F401

        ways.append("faiss-flat")
    except ImportError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        make_index(Path(tmp), a.docs, a.dim)
        made = time.perf_counter() - t
        out = {}
        for way in ways:
            proc = subprocess.run([sys.executable, __file__, "--child", way, tmp, "--queries", str(a.queries),
                                   "--k", str(a.k)], capture_output=True, text=True, check=True)
            out[way] = json.loads(proc.stdout)
    base = out["memory"]
    agree = {w: sum(len(set(x) & set(y)) for x, y in zip(out[w]["top"], out["index"]["top"], strict=True))
             / (a.queries * a.k) for w in ways}
    summary = {"docs": a.docs, "dim": a.dim, "dtype": "float16", "queries": a.queries, "k": a.k,
               "index_size_mb": a.docs * a.dim * 2 / 2 ** 20, "build_seconds": round(made, 1),
               "ways": {w: {"qps": round(out[w]["qps"], 1), "peak_rss_mb": round(out[w]["peak_rss_mb"]),
                            "load_seconds": round(out[w]["load_seconds"], 2),
                            "qps_with_load": round(out[w]["qps_with_load"], 1),
                            "qps_ratio": round(out[w]["qps"] / base["qps"], 3),
                            "qps_with_load_ratio": round(out[w]["qps_with_load"] / base["qps_with_load"], 3),
                            "rss_ratio": round(out[w]["peak_rss_mb"] / base["peak_rss_mb"], 3),
                            "top_k_overlap_with_index": round(agree[w], 6)} for w in ways}}
    if a.json:
        print(json.dumps(summary))
        return 0
    print(f"{a.docs:,} x {a.dim} float16 ({summary['index_size_mb']:.0f} MB on disk), {a.queries} queries, "
          f"top {a.k}")
    for w, r in summary["ways"].items():
        print(f"  {w:<14} search {r['qps']:>7.1f} q/s ({r['qps_ratio']:.2f}x memory); with loading "
              f"{r['qps_with_load']:>6.1f} q/s ({r['qps_with_load_ratio']:.2f}x; load {r['load_seconds']:.1f} s); "
              f"peak RSS {r['peak_rss_mb']:>5} MB ({r['rss_ratio']:.2f}x memory); top-{a.k} overlap with index "
              f"{r['top_k_overlap_with_index']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
