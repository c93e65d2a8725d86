"""Benchmark of the embedding fan-out (``openai-embeddings``) against the loopback test server, which runs
in its own process with ``--latency`` seconds before each reply.

``--texts`` distinct texts are embedded through the component's encoder (templates, packing into
requests of at most ``--batch-size`` inputs, ``--concurrency`` requests in flight behind the endpoint,
retries, usage, the embedding cache written, vectors normalised). Figures:

- wall time as a ratio to the ideal, requests x latency / concurrency;
- the same requests sent by a plain thread pool through the openai SDK in the same process (no harness):
  its ratio to the ideal (what the server and the machine allow: the server computes every vector in
  Python, about 0.1 ms a text, under one GIL) and the harness's wall time as a ratio to it, which should
  be <= 1.25 (the pass criterion: the harness adds little to the fan-out itself);
- texts per request, and a warm rerun (every vector from the embedding cache): time per text.

Every vector is checked against the server's own (``harness.testing.api_routes.embedding_vector``).

    python bench/bench_embeddings.py                   # 10,000 texts, 50 ms latency, 32 per request, 8 in flight
    python bench/bench_embeddings.py --texts 2000 --json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from loopback import start_server


def corpus(n: int) -> list[str]:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(5000)]
    return [f"passage {i}: " + " ".join(rng.choice(words, 40)) for i in range(n)]


def raw_fan_out(url: str, groups: list[list[str]], concurrency: int) -> float:
    """The same requests through the openai SDK and a thread pool, nothing else: the baseline."""
    import openai

    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
    client.embeddings.create(model="bench", input=["warm-up"])
    t = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        replies = list(pool.map(lambda g: client.embeddings.create(model="bench", input=g), groups))
    elapsed = time.perf_counter() - t
    assert sum(len(r.data) for r in replies) == sum(map(len, groups))
    return elapsed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--texts", type=int, default=10_000)
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--batch-size", type=int, default=32, help="inputs per request (default: a non-OpenAI server's)")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)

    from harness import Context
    from harness.llm import LLMSettings, RetryPolicy
    from harness.retrievers.embeddings_api import APIEncoder
    from harness.runtime.progress import ProgressSettings
    from harness.testing.api_routes import embedding_vector

    texts = corpus(a.texts)
    proc, url = start_server("--latency", str(a.latency))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = LLMSettings(cache_dir=tmp, max_concurrency=a.concurrency, retry=RetryPolicy.fast())
            ctx = Context.create(cache_dir=tmp, llm=settings, progress=ProgressSettings(mode="off"))
            enc = APIEncoder("bench", base_url=f"{url}/v1", batch_size=a.batch_size, context=ctx)
            enc.vectors(["warm-up: import the SDK, open a connection"], "document")
            sent0 = enc.client.sent_requests

            t = time.perf_counter()
            vecs, failed = enc.vectors(texts, "document")
            elapsed = time.perf_counter() - t
            requests = enc.client.sent_requests - sent0
            sample = range(0, a.texts, max(1, a.texts // 200))
            want = np.stack([embedding_vector(texts[i]) for i in sample]).astype(np.float64)
            want /= np.linalg.norm(want, axis=1, keepdims=True)
            wrong = int((np.abs(vecs[list(sample)] - want).max(axis=1) > 1e-5).sum())

            t = time.perf_counter()
            warm, warm_failed = enc.vectors(texts, "document")
            warm_s = time.perf_counter() - t
            assert enc.client.sent_requests - sent0 == requests and np.array_equal(warm, vecs)

            groups = [texts[i:i + a.batch_size] for i in range(0, a.texts, a.batch_size)]
            raw_s = raw_fan_out(f"{url}/v1", groups, a.concurrency)
    finally:
        proc.terminate()
        proc.wait(10)

    ideal = requests * a.latency / a.concurrency
    result = {
        "texts": a.texts, "latency_s": a.latency, "batch_size": a.batch_size, "concurrency": a.concurrency,
        "requests": requests, "texts_per_request": round(a.texts / max(1, requests), 2),
        "elapsed_s": round(elapsed, 3), "ideal_s": round(ideal, 3), "ratio_to_ideal": round(elapsed / ideal, 3),
        "raw_sdk_s": round(raw_s, 3), "raw_sdk_ratio_to_ideal": round(raw_s / ideal, 3),
        "ratio_to_raw_sdk": round(elapsed / raw_s, 3),
        "warm_s": round(warm_s, 3), "warm_us_per_text": round(warm_s / a.texts * 1e6, 2),
        "failed": int(failed.sum() + warm_failed.sum()), "wrong": wrong,
    }
    ok = result["ratio_to_raw_sdk"] <= 1.25 and not result["failed"] and not wrong
    if a.json:
        print(json.dumps({**result, "pass": ok}))
    else:
        print(f"{a.texts} texts, {a.latency * 1e3:.0f} ms latency, {a.batch_size} per request, {a.concurrency} in "
              f"flight: {requests} requests ({result['texts_per_request']} texts/request), {elapsed:.2f} s (ideal "
              f"{ideal:.2f} s) ratio {result['ratio_to_ideal']:.3f}")
        print(f"plain openai SDK + thread pool, same requests: {raw_s:.2f} s (ratio to ideal "
              f"{result['raw_sdk_ratio_to_ideal']:.3f}); harness / plain {result['ratio_to_raw_sdk']:.3f} (limit 1.25)")
        print(f"warm rerun (embedding cache): {warm_s:.3f} s, {result['warm_us_per_text']:.1f} us/text; "
              f"failed {result['failed']}, wrong {wrong}")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
