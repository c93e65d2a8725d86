"""Benchmark of the LLM layer against the loopback test server (which runs in its own process, so the
server's work does not compete for this process's GIL).

1. Throughput: ``--calls`` independent calls, ``--latency`` seconds of server latency each,
   ``--concurrency`` in flight, through the real openai SDK, with the disk cache on (writes included).
   Ideal time = calls / concurrency * latency; the ratio should be <= 1.25.
2. Warm cache: the same calls again, all cache hits; per-call time compared with a raw diskcache
   ``get`` and a plain dict lookup of the same entries in the same process. Overhead must be < 1 ms.

    python bench/bench_llm.py                       # 1000 calls, 0.2 s latency, 32 in flight
    python bench/bench_llm.py --calls 200 --json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from loopback import start_server

import harness.llm as llm


def per_call(fn, items, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for x in items:
            fn(x)
        best = min(best, (time.perf_counter() - t) / len(items))
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)

    proc, url = start_server("--echo", "--latency", str(a.latency))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            client = llm.get_client(f"openai-compatible:bench:base_url={url}/v1", cache_dir=tmp,
                                    max_concurrency=a.concurrency)
            client.chat("warm-up: import the SDK, open a connection")
            prompts = [f"independent call {i}" for i in range(a.calls)]

            t = time.perf_counter()
            replies = client.map(prompts)
            elapsed = time.perf_counter() - t
            errors = [r for r in replies if isinstance(r, Exception)]
            wrong = sum(1 for q, r in zip(prompts, replies) if not isinstance(r, Exception) and r.text != q)
            ideal = a.calls / a.concurrency * a.latency

            # warm cache: every call a hit
            warm = per_call(client.chat, prompts)
            assert all(client.chat(q).cached for q in prompts[:10])
            keys = [client.cache_key(q) for q in prompts]
            dc = client.cache.dc
            raw_get = per_call(dc.get, keys)
            table = {k: dc.get(k) for k in keys}
            dict_get = per_call(table.get, keys)

            result = {
                "calls": a.calls, "latency_s": a.latency, "concurrency": a.concurrency,
                "elapsed_s": round(elapsed, 3), "ideal_s": round(ideal, 3),
                "ratio": round(elapsed / ideal, 3),
                "errors": len(errors), "wrong": wrong,
                "warm_call_ms": round(warm * 1e3, 4), "raw_diskcache_get_ms": round(raw_get * 1e3, 4),
                "dict_get_ms": round(dict_get * 1e3, 5),
                "overhead_vs_diskcache_ms": round((warm - raw_get) * 1e3, 4),
                "overhead_vs_dict_ms": round((warm - dict_get) * 1e3, 4),
                "usage": client.usage.as_dict()["total"],
            }
    finally:
        proc.terminate()
        proc.wait(10)

    ok = result["ratio"] <= 1.25 and result["overhead_vs_dict_ms"] < 1.0 and not errors and not wrong
    if a.json:
        print(json.dumps({**result, "pass": ok}))
    else:
        print(f"{a.calls} calls, {a.latency * 1e3:.0f} ms latency, {a.concurrency} in flight: "
              f"{elapsed:.2f} s (ideal {ideal:.2f} s) ratio {result['ratio']:.3f} (limit 1.25); "
              f"errors {len(errors)}, wrong {wrong}")
        print(f"warm-cache chat(): {result['warm_call_ms']:.3f} ms/call; raw diskcache get "
              f"{result['raw_diskcache_get_ms']:.3f} ms; dict get {result['dict_get_ms']:.5f} ms; "
              f"harness overhead {result['overhead_vs_dict_ms']:.3f} ms vs dict "
              f"({result['overhead_vs_diskcache_ms']:.3f} ms vs raw diskcache; limit 1 ms)")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
