"""Failures are loud: `harness eval --task trec-dl19 --reranker rankgpt` through the real CLI against a
loopback server that fails in every way an endpoint can. A run whose LLM calls got no usable reply
is INCOMPLETE (exit status 3, a banner over the metrics, the provider's messages in results.json),
never the BM25 figure under RankGPT's name; a rejected key stops the run after one request."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from harness.testing import ScriptedReply, TestServer

from .test_dl19 import identity, window

#: a run stopped before its first request (the SDK missing) cannot show the count these tests check
NEEDS_OPENAI = pytest.mark.skipif(importlib.util.find_spec("openai") is None,
                                  reason="the OpenAI SDK is not installed (pip install 'harness-ir[openai]')")

DL19_WINDOWS = 43 * 9


def harness_eval(tmp_path, spec, *extra, env=None, name="out"):
    out = tmp_path / name
    cmd = [sys.executable, "-m", "harness.cli", "eval", "--task", "trec-dl19", "--reranker", "rankgpt",
           "--llm", spec, "-o", str(out), "-q", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={
        **os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache"), "HARNESS_PROGRESS": "0", **(env or {})})
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else None
    return proc, results


FAULTS = {
    "500": lambda req: ScriptedReply(status=500, error="upstream exploded", headers={"Retry-After": "0"}),
    "429": lambda req: ScriptedReply(status=429, error="slow down", headers={"Retry-After": "0"}),
    "malformed": lambda req: ScriptedReply(malformed=True),
    "html": lambda req: ScriptedReply(body=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
    "empty choices": lambda req: ScriptedReply(empty_choices=True),
    "hang": lambda req: ScriptedReply(hang=True),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_every_call_failing_is_incomplete_not_bm25(data_dir, tmp_path, fault):
    with TestServer(reply=FAULTS[fault], hang_s=20) as srv:
        proc, results = harness_eval(tmp_path, srv.spec("m"), "--limit", "5", "--llm-timeout", "0.3",
                                     "--llm-budget", "1")
        sent = srv.requests_total
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith("INCOMPLETE: 45 of 45 LLM requests got no usable reply"), proc.stdout
    assert results["status"] == "incomplete"
    report = results["llm_failures"]
    assert report["failed"] == report["requests"] == 45 and not report["complete"]
    assert report["per_query"] and sum(report["per_query"].values()) == 45
    assert report["examples"] and all(e["message"] for e in report["examples"])
    assert results["usage"]["total"]["failures"] == 45 and results["usage"]["total"]["calls"] == 0
    # the endpoint failed its first call (after that call's retries, or PROBE_TOLERANCE malformed replies),
    # so the other windows were not sent
    assert sent <= 6 and report["kinds"].get("EndpointUnavailable", 0) >= 45 - 3
    stats = results["components"]["rerankers"][0]["stats"]
    assert stats["transport_failures"] == 45 and stats["failed_windows"] == 0


def test_the_provider_message_is_kept(data_dir, tmp_path):
    with TestServer(reply=FAULTS["500"]) as srv:
        proc, results = harness_eval(tmp_path, srv.spec("m"), "--limit", "2")
    assert proc.returncode == 3
    first = results["llm_failures"]["examples"][0]
    assert first["error"] == "ServerError" and first["status"] == 500 and "upstream exploded" in first["message"]
    assert "upstream exploded" in proc.stdout  # shown under the banner too


@NEEDS_OPENAI
def test_a_rejected_key_stops_the_run_after_one_request(data_dir, tmp_path):
    with TestServer(reply=lambda req: ScriptedReply(status=401, error="Incorrect API key provided")) as srv:
        proc, results = harness_eval(tmp_path, f"openai:gpt-4o-mini:base_url={srv.openai_base_url}",
                                     env={"OPENAI_API_KEY": "sk-wrong"})
        assert srv.requests_total == 1
    assert proc.returncode == 2 and results is None
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Incorrect API key provided" in proc.stderr
    assert "OPENAI_API_KEY" in proc.stderr


@NEEDS_OPENAI
def test_an_unknown_model_stops_the_run_naming_it(data_dir, tmp_path):
    with TestServer(reply=lambda req: ScriptedReply(status=404, error="The model `gpt-9` does not exist")) as srv:
        proc, _ = harness_eval(tmp_path, srv.spec("gpt-9"))
        assert srv.requests_total == 1
    assert proc.returncode == 2 and "gpt-9" in proc.stderr and "not found at" in proc.stderr


def test_one_failure_in_387_is_accepted_with_a_share_and_listed(data_dir, tmp_path):
    from harness import load_dataset

    queries = load_dataset("trec-dl19").queries["default"]
    cursed_query = queries[sorted(queries)[1]].text  # a fixed query, whatever order requests arrive in
    first = {}

    def script(req):
        query, shown = window(req)
        # the first window of that query (back to front: its BM25 ranks 81-100) is refused, every time
        if query == cursed_query and shown[0].startswith(first.setdefault("bad", shown[0][:40])):
            return ScriptedReply(status=400, error="this window is cursed")
        return identity(req)

    with TestServer(reply=script) as srv:
        strict, strict_results = harness_eval(tmp_path, srv.spec("m"), name="strict")
        accepted, results = harness_eval(tmp_path, srv.spec("m"), "--max-llm-failures", "0.01", name="ok")
    assert strict.returncode == 3 and strict_results["status"] == "incomplete"
    assert accepted.returncode == 0, accepted.stderr
    assert results["status"] == "complete"
    report = results["llm_failures"]
    assert report["failed"] == 1 and report["requests"] == DL19_WINDOWS and report["max_share"] == 0.01
    assert report["kinds"] == {"BadRequest 400": 1} and len(report["per_query"]) == 1
    assert "this window is cursed" in report["examples"][0]["message"]
    assert accepted.stdout.startswith("LLM failures accepted (--max-llm-failures 0.01): 1 of 387")
    # the failed window is the only request that went to the server again on the second run
    assert results["usage"]["total"]["cache_hits"] == DL19_WINDOWS - 1


def test_unusable_replies_are_counted_in_one_line(tmp_path):
    """A model that never answers with a permutation (a small base model): the run completes, the
    windows keep their order, and `harness eval` says how many were unusable."""
    with TestServer(reply="I am not able to rank these passages.") as srv:
        cmd = [sys.executable, "-m", "harness.cli", "eval", "--task", "demo", "--reranker", "rankgpt", "--llm",
               srv.spec("m"), "--limit", "2"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={
            **os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache"), "HARNESS_PROGRESS": "0"})
    assert proc.returncode == 0, proc.stderr
    assert "rankgpt: 6 of 6 windows gave no usable ranking (each kept its order" in proc.stdout
    assert "nDCG@10" in proc.stdout
