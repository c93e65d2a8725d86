"""Served models' replies are untrusted (docs/untrusted.md, "Served models' replies"): ``openai-embeddings``
and ``rerank-api`` against the loopback server answering the way a broken or hostile server would
(:data:`harness.testing.api_routes.HOSTILE`), through the CLI. Each bad reply is a failed request: the run
ends INCOMPLETE (exit status 3) naming the reason, never exit 0 with another figure, never a traceback.
Vectors scaled by 1e20 or 1e-30 give the honest server's ranking and figure; a server that sends its reply
a byte a second is cut at ``--llm-timeout``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.testing import TestServer

MODEL = "text-embedding-3-small"


def embeddings_spec(srv: TestServer, **extra: object) -> str:
    args = "".join(f",{k}={v}" for k, v in extra.items())
    return f"openai-embeddings:model={MODEL},base_url={srv.openai_base_url}{args}"


def rerank_spec(srv: TestServer, provider: str = "cohere") -> str:
    return f"rerank-api:provider={provider},model=rr,base_url={srv.url}"


def run_cli(args: list[str]) -> tuple[int, str]:
    """``harness eval ARGS -q`` in this process: (exit status, output); an exception escaping the CLI
    (a traceback) fails the test."""
    result = CliRunner().invoke(cli, ["eval", "--task", "demo", "-q", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"the CLI raised {type(result.exception).__name__}: {result.exception}\n"
                             f"{result.output}") from result.exception
    return result.exit_code, result.output


def ndcg(output: str) -> float:
    """nDCG@10 from ``--json`` output."""
    return float(json.loads(output[output.index("{"):])["nDCG@10"])


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))


def assert_incomplete(code: int, output: str, reason: str) -> None:
    assert code == 3, output
    assert "INCOMPLETE" in output and reason in output, output
    assert "Traceback" not in output


# -- openai-embeddings -----------------------------------------------------------------------------
EMBEDDING_REPLIES = {
    "empty-vector": "the vector of input 0 is empty",
    "zero-vector": "the vector of input 0 is all zeros",
    "boolean-values": "is not a number (True)",
    "string-values": "is not a number (",
    "nan-value": "is not finite",
    "vector-per-token": "one vector per token",
    "shorter-later": "vectors of 32 dimensions; this run's have 64",
    "truncated": "not JSON",
    "cut-connection": "ConnectionFailed",
    "deep-nesting": "nested more than 64 levels",
}


@pytest.mark.parametrize("mode", sorted(EMBEDDING_REPLIES))
def test_a_bad_embeddings_reply_makes_the_run_incomplete_with_its_reason(mode):
    with TestServer(api_tamper=mode) as srv:
        code, output = run_cli(["--retriever", embeddings_spec(srv, batch_size=8)])
    assert_incomplete(code, output, EMBEDDING_REPLIES[mode])


def test_vectors_of_another_length_than_the_requested_dimensions_are_refused():
    def tamper(body, obj, nth):  # the server ignores `dimensions` and sends its full vectors
        from harness.testing.api_routes import embeddings_reply

        return embeddings_reply({**body, "dimensions": None})[1]

    with TestServer(api_tamper=tamper) as srv:
        code, output = run_cli(["--retriever", embeddings_spec(srv, dimensions=16)])
    assert_incomplete(code, output, "vectors of 64 dimensions; this run's have 16 (dimensions=16)")


@pytest.mark.parametrize("mode", ["scaled-1e20", "scaled-1e-30"])
def test_scaled_vectors_give_the_honest_servers_ranking_and_figure(tmp_path, mode):
    from harness.formats.trec import read_run

    with TestServer() as honest:
        code, output = run_cli(["--retriever", embeddings_spec(honest), "--json", "-o", str(tmp_path / "honest")])
        assert code == 0, output
        want = ndcg(output)
    with TestServer(api_tamper=mode) as srv:
        code, output = run_cli(["--retriever", embeddings_spec(srv), "--json", "-o", str(tmp_path / mode)])
        assert code == 0, output
    assert ndcg(output) == want
    got, honest_run = read_run(tmp_path / mode / "run.trec"), read_run(tmp_path / "honest" / "run.trec")
    for qid, hits in honest_run.items():  # the same documents in the same order, cosines equal to float32 rounding
        assert [d for d, _ in got[qid]] == [d for d, _ in hits], qid
        assert [x for _, x in got[qid]] == pytest.approx([x for _, x in hits], abs=1e-6), qid


def test_scaled_vectors_rerank_as_the_honest_servers():
    with TestServer() as honest:
        code, output = run_cli(["--retriever", "bm25", "--reranker", embeddings_spec(honest), "--json"])
        assert code == 0, output
        want = ndcg(output)
    for mode in ("scaled-1e20", "scaled-1e-30"):
        with TestServer(api_tamper=mode) as srv:
            code, output = run_cli(["--retriever", "bm25", "--reranker", embeddings_spec(srv), "--json",
                                    "--cache-dir", os.environ["HARNESS_CACHE_DIR"] + mode])
            assert code == 0 and ndcg(output) == want, output


def test_a_cached_zero_vector_is_asked_for_again():
    """The embedding cache is read with the same rule: a zero vector found there is a miss, sent again."""
    import sqlite3
    from pathlib import Path

    with TestServer() as srv:
        code, output = run_cli(["--retriever", embeddings_spec(srv), "--json"])
        assert code == 0, output
        want, sent = ndcg(output), len(srv.embedding_requests)
        files = list((Path(os.environ["HARNESS_CACHE_DIR"]) / "embeddings").glob("*.sqlite"))
        assert files
        for path in files:
            with sqlite3.connect(path) as db:
                db.execute("UPDATE emb SET vec = zeroblob(length(vec))")
        code, output = run_cli(["--retriever", embeddings_spec(srv), "--json"])
        assert code == 0 and ndcg(output) == want, output
        assert len(srv.embedding_requests) == 2 * sent


# -- rerank-api ------------------------------------------------------------------------------------
RERANK_REPLIES = {
    "boolean-scores": "the score of result 0 is not a number (True)",
    "underscore-score": "the score of result 0 is not a number ('1_00')",
    "string-scores": "the score of result 0 is not a number (",
    "huge-score": "an integer of 401 digits",
    "index-out-of-range": "index 10 is not one of the 10 documents",
    "index-repeated": "is given twice",
    "index-boolean": "the index of result",
    "index-fraction": "the index of result",
    "nested-results": "result 0 is not an object",
    "truncated": "not JSON",
    "cut-connection": "ConnectionFailed",
    "deep-nesting": "nested more than 64 levels",
}


@pytest.mark.parametrize("mode", sorted(RERANK_REPLIES))
def test_a_bad_rerank_reply_makes_the_run_incomplete_with_its_reason(mode):
    with TestServer(api_tamper=mode) as srv:
        code, output = run_cli(["--retriever", "bm25", "--depth", "10", "--reranker", rerank_spec(srv)])
    assert_incomplete(code, output, RERANK_REPLIES[mode])


@pytest.mark.parametrize("mode", ["boolean-scores", "index-repeated", "nested-results"])
def test_a_bad_rerank_reply_in_teis_shape_too(mode):
    with TestServer(api_tamper=mode) as srv:
        code, output = run_cli(["--retriever", "bm25", "--depth", "10", "--reranker", rerank_spec(srv, "tei")])
    assert_incomplete(code, output, RERANK_REPLIES[mode])


def test_a_cached_rerank_score_that_is_not_a_plain_number_is_asked_for_again():
    """The reply cache's score text is read strictly too (``1_00`` is no score): such an entry is a miss."""
    from harness.served.reply_cache import LLMCache, llm_cache_dir
    from harness.served.types import Reply

    args = ["--retriever", "bm25", "--depth", "10", "--json"]
    with TestServer() as srv:
        code, output = run_cli([*args, "--reranker", rerank_spec(srv)])
        assert code == 0, output
        want, sent = ndcg(output), len(srv.rerank_requests)
        cache = LLMCache(llm_cache_dir(os.environ["HARNESS_CACHE_DIR"]))
        entries = [(key, entry["key"]) for key, entry in cache.entries() if entry["key"].get("kind") == "rerank"]
        assert entries
        for key, payload in entries:
            cache.set(key, payload, Reply("1_00", model="rr", provider="rerank-cohere"))
        cache.close()
        code, output = run_cli([*args, "--reranker", rerank_spec(srv)])
        assert code == 0 and ndcg(output) == want, output
        assert len(srv.rerank_requests) == 2 * sent


# -- a reply sent a byte a second --------------------------------------------------------------------
def component_args(component: str, srv: TestServer) -> list[str]:
    if component == "retriever":
        return ["--retriever", embeddings_spec(srv)]
    if component == "reranker":
        return ["--retriever", "bm25", "--depth", "10", "--reranker", rerank_spec(srv)]
    provider = component.removeprefix("chat-")  # an LLM reranker (tests/llm_double.py) through the official SDK
    return ["--retriever", "bm25", "--depth", "10", "--reranker", "llm-double", "--llm",
            srv.spec("m", provider)]


@pytest.mark.parametrize("component", ["retriever", "reranker", "chat-openai-compatible", "chat-anthropic"])
def test_a_trickling_server_is_cut_at_the_timeout(tmp_path, component, llm_double):
    """``--llm-timeout 3 --llm-budget 10``: each attempt is cut 3 s after it starts, whatever the server
    sends meanwhile, so the run ends INCOMPLETE after about one budget (the server would take hours to
    send one reply; the bound below is generous). Chat through the official SDKs shares the deadline."""
    if component == "chat-anthropic":
        pytest.importorskip("anthropic", reason="the anthropic extra is not installed")
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    with TestServer(trickle_s=1.0) as srv:
        which = component_args(component, srv)
        start = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--task", "demo", "-q", *which,
                              "--llm-timeout", "3", "--llm-budget", "10"], env=env, capture_output=True, text=True,
                             timeout=300)
        took = time.monotonic() - start
        attempts = srv.requests_total
    assert res.returncode == 3, res.stderr
    assert "Traceback" not in res.stderr and "INCOMPLETE" in res.stdout + res.stderr
    assert "LLMTimeout" in res.stdout + res.stderr
    assert attempts <= 4  # 10 s of budget holds at most 4 attempts of 3 s (and the waits between them)
    assert took < 60, took
