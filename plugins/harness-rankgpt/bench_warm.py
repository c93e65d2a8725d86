"""Warm vs cold wall time of RankGPT on TREC DL19 (43 queries x 9 windows = 387 calls) against the
loopback server with a fixed per-request latency (default 200 ms), through ``harness.evaluation.pipeline.evaluate``.

    python plugins/harness-rankgpt/bench_warm.py                 # --latency 0.2 --concurrency 8 --repeat 3

The cold run starts from an empty LLM cache; the warm run repeats the same evaluation against the
same server (its base URL is part of the cache key) and must send no request. The figure reported
in docs/rankgpt.md is ``warm / cold`` of the whole ``evaluate`` call (loading, reranking, metrics).
Needs the DL19 files under ``$HARNESS_DATA`` (default ``../shared/data`` next to the repository).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def identity(request: dict) -> str:
    n = sum(1 for m in request["messages"][3:-1:2] if m["role"] == "user")
    return " > ".join(f"[{i + 1}]" for i in range(n))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.2, help="server latency per request, seconds")
    ap.add_argument("--concurrency", type=int, default=8, help="--max-concurrency (queries in flight)")
    ap.add_argument("--repeat", type=int, default=3, help="cold/warm pairs to run")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()

    if not os.environ.get("HARNESS_DATA"):
        os.environ["HARNESS_DATA"] = str(HERE.parents[1].parent / "shared" / "data")
    os.environ["HARNESS_AUTO_DOWNLOAD"] = "0"
    sys.path.insert(0, str(HERE))
    from harness import PluginHost, evaluate
    from harness.testing import TestServer

    import harness_rankgpt

    host = PluginHost(load_entry_points=False)
    host.register_plugin(harness_rankgpt, "rankgpt", distribution="harness-rankgpt")
    rows = []
    for rep in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp, TestServer(reply=identity, latency=args.latency) as srv:
            os.environ["HARNESS_CACHE_DIR"] = tmp
            kw = dict(rerankers=["rankgpt"], llm=srv.spec("bench-model"), registry=host.registry, progress=False,
                      max_concurrency=args.concurrency)
            t = time.perf_counter()
            cold = evaluate("trec-dl19", **kw)
            cold_s = time.perf_counter() - t
            sent_cold = srv.requests_total
            t = time.perf_counter()
            warm = evaluate("trec-dl19", **kw)
            warm_s = time.perf_counter() - t
            sent_warm = srv.requests_total - sent_cold
            assert warm.metrics == cold.metrics
            row = {"cold_s": round(cold_s, 3), "warm_s": round(warm_s, 3), "ratio": round(warm_s / cold_s, 4),
                   "requests_cold": sent_cold, "requests_warm": sent_warm,
                   "rerank_cold_s": round(cold.timings["rerank rankgpt[default]"], 3),
                   "rerank_warm_s": round(warm.timings["rerank rankgpt[default]"], 3),
                   "nDCG@10": round(cold.metrics["nDCG@10"], 4)}
            rows.append(row)
            print(f"run {rep + 1}: cold {cold_s:.2f} s ({sent_cold} requests), warm {warm_s:.3f} s "
                  f"({sent_warm} requests), warm/cold = {warm_s / cold_s:.2%}", flush=True)
    out = {"latency_s": args.latency, "concurrency": args.concurrency, "runs": rows,
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    worst = max(r["ratio"] for r in rows)
    print(f"worst warm/cold ratio: {worst:.2%} (target < 5%)")
    return 0 if worst < 0.05 and all(r["requests_warm"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
