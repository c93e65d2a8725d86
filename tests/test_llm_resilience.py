"""A killed run resumes without re-sending completed calls; the API key leaks nowhere."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from harness.llm import AuthError, BadRequest, LLMSession, LLMSettings, RetryPolicy
from harness.runtime.extras import available
from harness.served.reply_cache import LLMCache
from harness.testing import ScriptedReply, TestServer
from harness.testing.llm_server import last_user_text

WORKLOAD = """
import sys
import harness.llm as llm
spec, cache_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = llm.get_client(spec, cache_dir=cache_dir, max_concurrency=4, retry=llm.RetryPolicy.fast())
prompts = [f"item {i}" for i in range(n)]
out = client.map(prompts)
u = client.usage.get(client.label)
ok = sum(1 for p, r in zip(prompts, out) if not isinstance(r, Exception) and r.text == "done: " + p)
print(ok, u.calls, u.cache_hits, flush=True)
"""


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    yield


def _cached_texts(cache_dir) -> set[str]:
    cache = LLMCache(cache_dir / "llm")
    try:
        return {entry["key"]["messages"][-1]["content"] for _, entry in cache.entries()}
    finally:
        cache.close()


@pytest.mark.skipif(not available("openai"),
                    reason="the OpenAI SDK is not installed (pip install 'harness-ir[openai]')")
def test_sigkill_halfway_then_rerun_sends_only_missing_calls(tmp_path):
    n = 200
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    cache_dir = tmp_path / "cache"
    everything = {f"item {i}" for i in range(n)}
    with TestServer(reply=lambda req: "done: " + last_user_text(req), latency=0.02) as srv:
        args = [sys.executable, str(script), srv.spec("m"), str(cache_dir), str(n)]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while srv.requests_total < n // 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read()

        sent_first = [last_user_text(r) for r in srv.requests]
        done = _cached_texts(cache_dir)
        assert n // 4 <= len(done) < n, len(done)  # killed about halfway, not before or after
        assert done <= set(sent_first)

        srv.reset_counters()
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        ok, calls, hits = map(int, out.stdout.split())
        resent = [last_user_text(r) for r in srv.requests]
        assert sorted(resent) == sorted(everything - done)  # each missing call exactly once, nothing else
        assert (ok, calls, hits) == (n, n - len(done), len(done))

        srv.reset_counters()
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert srv.requests_total == 0  # warm rerun sends nothing
        assert list(map(int, out.stdout.split())) == [n, 0, n]


def test_api_key_canary_leaks_nowhere(tmp_path, monkeypatch, caplog, capsys):
    canary = "sk-canary-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    caplog.set_level(logging.DEBUG)
    results: dict = {}

    def script(req):
        text = last_user_text(req)
        if text == "bad":
            return ScriptedReply(status=400, error="bad request")
        if text == "unauthorized":
            return ScriptedReply(status=401, error="invalid api key")
        return "ok " + text

    cache_dir = tmp_path / "cache"
    session = LLMSession(LLMSettings(cache_dir=str(cache_dir), retry=RetryPolicy.fast(10), max_concurrency=4))
    with TestServer(reply=script, rate_429=0.2, seed=3) as srv:
        for spec in (f"openai:gpt-4o-mini:base_url={srv.openai_base_url}",
                     f"anthropic:claude-test:base_url={srv.anthropic_base_url}"):
            c = session.client(spec)
            out = c.map([f"q{i}" for i in range(20)] + ["bad"])
            assert isinstance(out[20], BadRequest)
            with pytest.raises(AuthError) as fatal:  # a rejected key stops the run; its message names the variable
                c.chat("unauthorized")
            assert "_API_KEY" in str(fatal.value)
            results[spec.split(":")[0]] = {
                "client": c.describe(),
                "replies": [r.as_dict() if isinstance(r, Exception) else r.to_dict() for r in out],
                "fatal": fatal.value.as_dict(),
                "explain": c.explain_miss("q0", temperature=1.0),
            }
            logging.getLogger("harness.llm").info("client %r usage %s", c, c.usage.as_dict())
        assert srv.api_keys == {canary}  # the key really was sent, so a leak would have been possible
    results["usage"] = session.report()
    results["table"] = session.usage().table()
    (tmp_path / "results.json").write_text(json.dumps(results))
    session.close()

    needle = canary.encode()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".db") for p in files)
    leaked = [str(p) for p in files if needle in p.read_bytes()]
    assert not leaked, leaked
    captured = capsys.readouterr()
    assert canary not in caplog.text and canary not in captured.out + captured.err
    assert canary not in repr(results)
