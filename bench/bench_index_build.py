"""Building an embedding index of ``--docs`` synthetic passages (15-40 words, as in
``shared/notes/scale-out.md``) with all-MiniLM-L6-v2, in this process (``local``) and on a local Ray
cluster (``ray``: Ray Data, an actor pool with one model per actor), same machine, embedding cache off.

Printed: wall time of each build, passages per second, the ratio ray/local (no gain is expected on
one machine: Ray pays for starting the cluster, the actors and a model per actor), the cluster start
time apart, and the largest difference between the two indexes' vectors.

    python bench/bench_index_build.py                  # 8,000 passages, shards of 1,000
    python bench/bench_index_build.py --docs 2000 --json
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np

WORDS = ("retrieval evaluation passage query relevance argument evidence study result method model ranking "
         "score instruction objective document corpus judge metric benchmark protein cell gene trial patient "
         "climate energy market policy court history music language river city").split()


def passages(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(15, 40))) for _ in range(n)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=8000)
    p.add_argument("--shard-size", type=int, default=1000)
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)

    import ray

    from harness.retrievers.dense.build import LocalExecutor, build_index
    from harness.retrievers.dense.embedding_index import EmbeddingIndex
    from harness.retrievers.dense.encoder import DenseEncoder
    from harness.retrievers.dense.ray_executor import RayExecutor

    texts = passages(a.docs)
    ids = [f"p{i}" for i in range(a.docs)]
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        enc = DenseEncoder(cache=False, show_progress=False, batch_size=64)
        enc.load()  # the local model loaded before timing, as a warm process would have it
        t = time.perf_counter()
        build_index(enc, ids, texts, Path(tmp) / "local", shard_size=a.shard_size, executor=LocalExecutor())
        out["local"] = {"seconds": time.perf_counter() - t}

        t = time.perf_counter()
        ray.init(num_cpus=a.actors, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        start = time.perf_counter() - t
        try:
            enc = DenseEncoder(cache=False, show_progress=False, batch_size=64)
            t = time.perf_counter()
            build_index(enc, ids, texts, Path(tmp) / "ray", shard_size=a.shard_size,
                        executor=RayExecutor(actors=a.actors, batch_size=64))
            out["ray"] = {"seconds": time.perf_counter() - t, "cluster_start_seconds": start}
        finally:
            ray.shutdown()
        local, on_ray = (EmbeddingIndex(Path(tmp) / name).load() for name in ("local", "ray"))
        diff = float(np.abs(local - on_ray).max())
    for r in out.values():
        r["passages_per_second"] = a.docs / r["seconds"]
    summary = {"docs": a.docs, "shard_size": a.shard_size, "actors": a.actors, **out,
               "ratio_ray_over_local": out["ray"]["seconds"] / out["local"]["seconds"],
               "ratio_with_cluster_start": (out["ray"]["seconds"] + start) / out["local"]["seconds"],
               "max_abs_difference": diff}
    if a.json:
        print(json.dumps(summary))
        return 0
    print(f"{a.docs} passages, all-MiniLM-L6-v2, shards of {a.shard_size}")
    print(f"  local: {out['local']['seconds']:6.1f} s ({out['local']['passages_per_second']:.0f} passages/s)")
    print(f"  ray:   {out['ray']['seconds']:6.1f} s ({out['ray']['passages_per_second']:.0f} passages/s; {a.actors} "
          f"actors; actor start and model loads included) + {start:.1f} s to start the cluster")
    print(f"  ray/local: {summary['ratio_ray_over_local']:.2f} ({summary['ratio_with_cluster_start']:.2f} with the "
          f"cluster start); largest vector difference {diff:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
