"""A real local model behind the LLM paths: llama-cpp-python's server and the embedded provider, both
with the packaged Gemma 3 270M on this machine's CPU, every request counted by a proxy.

1. Server start-up time; generation speed (tokens/s) of the server and of the embedded provider.
2. Per-call time of a short request (8 tokens out), embedded vs server (ratio), and the embedded
   provider with one model instance vs two (does a pool pay?).
3. With default settings (no hand-set cap or concurrency): RankGPT on TREC DL19 ``--limit 3`` (window
   20, step 10, depth 100: 27 windows) and the INSTFOL judge on an 8-passage fixture, through the
   proxy: every run completes, each distinct request reaches the server once, at most one in flight.
4. The dry-run token estimate of the same RankGPT run against the tokens the server reported.
5. Does a pool of embedded instances pay on real work? ``local`` vs ``local:instances=2`` on the
   INSTFOL fixture, relevance generation (DL19, one query, depth 20) and RankGPT (two DL19 queries,
   window 8, step 4, depth 16): seconds and the ratio one instance / two (``--pool-only``: just this).

Needs the ``local`` extra and the TREC DL19 files (``HARNESS_DATA``). Slow on 2 cores (about 18 min).

    python bench/bench_local_llm.py [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

from harness import Context, Dataset, Document, Query, Run, evaluate, task_queries
from harness.llm import LLMSession, LLMSettings, RetryPolicy, user
from harness.testing import CountingProxy, LlamaServer

SHORT = [user("Name one colour of the rainbow.")]


def timed_calls(client, n: int, max_tokens: int) -> float:
    """Mean seconds per call of ``n`` distinct short requests (no cache)."""
    t = time.perf_counter()
    for i in range(n):
        client.chat([user(f"Name one colour of the rainbow. ({i})")], max_tokens=max_tokens)
    return (time.perf_counter() - t) / n


def tokens_per_second(client) -> float:
    t = time.perf_counter()
    reply = client.chat([user("Write a long story about a cat who travels the world.")], max_tokens=128)
    return reply.usage.output_tokens / (time.perf_counter() - t)


def pool_throughput(instances: int, calls: int = 8) -> float:
    """Calls per second with ``instances`` embedded models (threads split between them)."""
    sessions = [LLMSession(LLMSettings(use_cache=False)) for _ in range(instances)]
    clients = [s.client(f"local:n_threads={max(1, 2 // instances)}") for s in sessions]
    for c in clients:
        c.chat(SHORT, max_tokens=1)  # load
    t = time.perf_counter()
    threads = [threading.Thread(target=timed_calls, args=(c, calls // instances, 32)) for c in clients]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return calls / (time.perf_counter() - t)


def instfol_fixture() -> tuple[Dataset, Run]:
    texts = ["Index funds track a market index with low fees.", "A savings account pays interest.",
             "Day trading options is risky.", "Government bonds carry little default risk.",
             "Buying a house is a large purchase.", "Crypto prices swing widely from day to day.",
             "A pension plan saves for retirement with tax benefits.", "Gold is a hedge some investors hold."]
    corpus = {f"d{i}": Document(f"d{i}", text) for i, text in enumerate(texts)}
    meta = {"level": 1, "judge_instruction": "how to invest my savings. I am 40 and want low fees.",
            "ifir_subset": "fiqa"}
    queries = {"query": {"q1": Query("q1", "how to invest my savings", "", dict(meta))},
               "instructed": {"q1": Query("q1", "how to invest my savings", "I am 40 and want low fees.", dict(meta))}}
    ds = Dataset("ifir:bench", corpus, queries, {"query": {"q1": {"d0": 1}}, "instructed": {"q1": {"d0": 1}}})
    return ds, Run.from_order({"q1": list(corpus)})


def pool_on_work() -> dict:
    """Seconds of three real workloads with one embedded instance and with two (fresh caches)."""
    secs: dict[str, dict[str, float]] = {}
    for spec in ("local", "local:instances=2"):
        with tempfile.TemporaryDirectory() as tmp:
            ctx = Context.create(cache_dir=f"{tmp}/j").for_evaluation(llm=spec)
            judge = ctx.registry.create("judge", "instfol", ctx)
            ds, run = instfol_fixture()
            t = time.perf_counter()
            for m in ds.modes:
                judge.judge(task_queries(ds, m, "{text} {instruction}"), run, ds.corpus)
            row = {"instfol_8_passages": time.perf_counter() - t}
            for name, reranker, limit in (("relevance_generation_depth20", "relevance-generation:depth=20", 1),
                                          ("rankgpt_2_queries_window8", "rankgpt:window=8,step=4,depth=16", 2)):
                c = Context.create(cache_dir=f"{tmp}/{name}", llm=LLMSettings(cache_dir=f"{tmp}/{name}"))
                t = time.perf_counter()
                evaluate("trec-dl19", rerankers=[reranker], llm=spec, limit=limit, progress=False, context=c)
                row[name] = time.perf_counter() - t
            secs[spec] = row
    one, two = secs.values()
    return {"seconds": {k: {w: round(v, 1) for w, v in r.items()} for k, r in secs.items()},
            "speedup_two_over_one": {w: round(one[w] / two[w], 2) for w in one}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--pool-only", action="store_true", help="only part 5")
    a = p.parse_args(argv)
    if a.pool_only:
        print(json.dumps(pool_on_work(), indent=None if a.json else 2))
        return 0
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp, LlamaServer(n_ctx=8192, cache_dir=tmp) as server, \
            CountingProxy(server.url) as proxy:
        out["server_startup_seconds"] = round(server.startup_seconds, 2)
        spec = f"openai-compatible:gemma:base_url={proxy.url}/v1"
        nocache = LLMSettings(use_cache=False)
        srv_client = LLMSession(nocache).client(spec)
        emb_client = LLMSession(nocache).client("local:n_ctx=8192")
        emb_client.chat(SHORT, max_tokens=1)  # load the embedded model before timing
        out["tokens_per_second"] = {"server": round(tokens_per_second(srv_client), 1),
                                    "embedded": round(tokens_per_second(emb_client), 1)}
        per = {"server": timed_calls(srv_client, 10, 8), "embedded": timed_calls(emb_client, 10, 8)}
        out["short_call_seconds"] = {k: round(v, 3) for k, v in per.items()}
        out["short_call_ratio_embedded_over_server"] = round(per["embedded"] / per["server"], 3)
        out["embedded_pool_calls_per_second"] = {"1 instance": round(pool_throughput(1), 3),
                                                 "2 instances": round(pool_throughput(2), 3)}

        ctx = Context.create(cache_dir=f"{tmp}/cache", llm=LLMSettings(cache_dir=f"{tmp}/cache",
                                                                       retry=RetryPolicy()))
        dry = evaluate("trec-dl19", rerankers=["rankgpt"], llm=spec, limit=3, dry_run=True, progress=False,
                       context=ctx)
        proxy.reset()
        t = time.perf_counter()
        res = evaluate("trec-dl19", rerankers=["rankgpt"], llm=spec, limit=3, progress=False, context=ctx)
        stats = res.components["rerankers"][0]["stats"]
        out["rankgpt_dl19_limit3"] = {
            "seconds": round(time.perf_counter() - t, 1), "windows": stats["windows"], "posts": proxy.posts,
            "distinct_posts": proxy.distinct_posts, "max_in_flight": proxy.max_in_flight,
            "transport_failures": stats["transport_failures"], "failed_windows": stats["failed_windows"],
            "ndcg@10": round(res.metrics["nDCG@10"], 4), "prompt_tokens": proxy.usage["prompt_tokens"],
            "completion_tokens": proxy.usage["completion_tokens"]}
        est = dry.usage["total"]
        out["dry_run_estimate_over_actual"] = {
            "input": round(est["input_tokens"] / proxy.usage["prompt_tokens"], 3),
            "output": round(est["output_tokens"] / proxy.usage["completion_tokens"], 3),
            "tokenizer": dry.usage.get("tokenizer")}

        proxy.reset()
        jctx = Context.create(cache_dir=f"{tmp}/cache2").for_evaluation(llm=spec)
        judge = jctx.registry.create("judge", "instfol", jctx)
        ds, run = instfol_fixture()
        t = time.perf_counter()
        judged = {m: judge.judge(task_queries(ds, m, "{text} {instruction}"), run, ds.corpus) for m in ds.modes}
        st = judge.stats()
        out["instfol_8_passages"] = {
            "seconds": round(time.perf_counter() - t, 1), "pairs": sum(len(j) for j in judged.values()),
            "posts": proxy.posts, "distinct_posts": proxy.distinct_posts, "max_in_flight": proxy.max_in_flight,
            "transport_failures": st["transport_failures"], "parse_failures": st["parse_failures"]}
    out["pool_on_work"] = pool_on_work()
    ok = all(r["posts"] == r["distinct_posts"] and r["max_in_flight"] == 1 and r["transport_failures"] == 0
             for r in (out["rankgpt_dl19_limit3"], out["instfol_8_passages"]))
    out["pass"] = ok
    print(json.dumps(out, indent=None if a.json else 2))
    Path(tempfile.gettempdir(), "bench_local_llm.json").write_text(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
