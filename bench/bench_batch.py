"""Benchmark of batch mode (``--llm-batch``) against direct mode on a pointwise workload, through the
real openai SDK and the loopback server (in its own process, so its work does not compete for this
process's CPU).

The workload is ``--requests`` BIRCO-Score-sized prompts (a query, a ~120-word passage, the
instruction), each its own request, sent through :class:`harness.llm.PointwiseScorer` as the
pointwise protocols send them. Both modes run in this process, one after the other, each with a
fresh cache. Reported: batches submitted, bytes uploaded, client CPU time (``time.process_time``),
wall time, and the cost of each mode from the built-in price table (gpt-4o-mini) with the ratio
batch/direct (expected 0.5: both providers price batches at half). A warm rerun in batch mode must
submit nothing.

    python bench/bench_batch.py                     # 10,000 requests
    python bench/bench_batch.py --requests 2000 --json
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import urllib.request

from loopback import start_server

from harness.llm import Item, LLMSession, LLMSettings, PointwiseScorer, system, user

WORDS = ("retrieval evaluation passage query relevance argument counter claim evidence study result method "
         "model ranking score instruction objective document corpus judge metric benchmark").split()



def server_stats(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/_stats") as resp:
        return json.loads(resp.read())


def workload(n: int, seed: int = 0) -> list[Item]:
    rng = random.Random(seed)
    items = []
    for i in range(n):
        query = " ".join(rng.choices(WORDS, k=12))
        passage = " ".join(rng.choices(WORDS, k=120))
        messages = [system("You are an expert relevance assessor."),
                    user(f"Query: {query}\nPassage {i}: {passage}\nRate the passage from 0 to 10. SCORE:")]
        items.append(Item(i, f"q{i // 100}", {"messages": messages, "max_tokens": 8}))
    return items


def run(url: str, items: list[Item], cache: str, batch: bool) -> dict:
    settings = LLMSettings(cache_dir=cache, batch=batch, batch_poll=0.05, max_concurrency=32)
    session = LLMSession(settings)
    client = session.client(f"openai:gpt-4o-mini:base_url={url}/v1")
    before = server_stats(url)
    cpu, wall = time.process_time(), time.perf_counter()
    results = PointwiseScorer(client).score(items, lambda reply: reply.text.startswith("SCORE"))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    after = server_stats(url)
    usage = client.usage.as_dict()["models"][client.label]
    session.close()
    return {
        "ok": sum(1 for r in results.values() if r.ok), "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
        "direct_requests": after["requests_total"] - before["requests_total"],
        "batches": after["batch_submissions"] - before["batch_submissions"],
        "bytes_uploaded": after["batch_bytes_uploaded"] - before["batch_bytes_uploaded"],
        "cost_usd": usage["cost_usd"], "calls": usage["calls"], "cache_hits": usage["cache_hits"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=10_000)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)
    items = workload(a.requests)
    proc, url = start_server("--reply", "SCORE: 7")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            direct = run(url, items, f"{tmp}/direct", batch=False)
            batch = run(url, items, f"{tmp}/batch", batch=True)
            warm = run(url, items, f"{tmp}/batch", batch=True)
    finally:
        proc.terminate()
        proc.wait()
    out = {"requests": a.requests, "direct": direct, "batch": batch, "warm_batch": warm,
           "cost_ratio": round(batch["cost_usd"] / direct["cost_usd"], 4),
           "cpu_ratio": round(batch["cpu_s"] / direct["cpu_s"], 3),
           "bytes_per_request": round(batch["bytes_uploaded"] / a.requests, 1)}
    ok = (direct["ok"] == batch["ok"] == warm["ok"] == a.requests and warm["batches"] == 0
          and batch["direct_requests"] == 0 and abs(out["cost_ratio"] - 0.5) < 0.01)
    if a.json:
        print(json.dumps({**out, "pass": ok}))
    else:
        print(f"{a.requests} pointwise requests, gpt-4o-mini prices")
        for name in ("direct", "batch", "warm_batch"):
            r = out[name]
            print(f"  {name:<10}: {r['batches']:>3} batches, {r['bytes_uploaded'] / 1e6:7.2f} MB uploaded, "
                  f"{r['direct_requests']:>6} direct requests, CPU {r['cpu_s']:6.2f} s, wall {r['wall_s']:6.2f} s, "
                  f"${r['cost_usd']:.4f} ({r['calls']} calls, {r['cache_hits']} hits)")
        print(f"  cost batch/direct: {out['cost_ratio']} (expected 0.5); client CPU batch/direct: {out['cpu_ratio']}; "
              f"{out['bytes_per_request']} bytes per request")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
