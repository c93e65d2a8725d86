"""The failure policy of the LLM layer, against loopback servers through the real SDKs: the first-call
gate, the circuit breaker, fatal errors, time budgets, one sender per request (threads and processes),
a cache that recovers from corruption, and credentials in URLs masked everywhere."""

from __future__ import annotations

import json
import logging
import socket
import sqlite3
import subprocess
import sys
import threading
import types
import uuid

import pytest

from harness import Context, Run, evaluate, hookimpl
from harness.llm import (
    AuthError,
    ConnectionFailed,
    EndpointUnavailable,
    LLMSession,
    LLMSettings,
    LLMTimeout,
    ModelNotFound,
    RetryPolicy,
    RunStopped,
    ServerError,
    get_client,
)
from harness.plugins.host import PluginHost
from harness.runtime.extras import available
from harness.served.endpoint import Endpoint
from harness.served.reply_cache import LLMCache
from harness.testing import ScriptedReply, TestServer
from harness.testing.llm_server import last_user_text


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "HARNESS_LLM"):
        monkeypatch.delenv(var, raising=False)
    yield


def client(srv_or_url, tmp_path, settings=None, **kw):
    """A client in a session of its own (``settings``: the session's, e.g. timeouts)."""
    spec = srv_or_url if isinstance(srv_or_url, str) else srv_or_url.spec("m")
    kw.setdefault("retry", RetryPolicy.fast())
    return LLMSession(settings).client(spec, cache_dir=tmp_path / "cache", **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the endpoint: gate, breaker, fatal stop ---------------------------------------------------------
def test_first_call_goes_alone_then_concurrency_opens(tmp_path):
    with TestServer(reply=lambda req: "ok", latency=0.05) as srv:
        c = client(srv, tmp_path, max_concurrency=8)
        out = c.map([f"p{i}" for i in range(40)])
        assert all(r.text == "ok" for r in out)
        first = srv.requests[0]
        assert srv.max_in_flight > 1  # after the first success the bound is used
        assert srv.requests_total == 40 and last_user_text(first).startswith("p")
    assert c.endpoint.successes == 40 and c.endpoint.available


def test_a_dead_endpoint_costs_one_call_then_nothing_is_sent(tmp_path):
    """Connection refused: the first call is retried briefly, then the endpoint is taken out and every
    other request fails at once as EndpointUnavailable (counted, with the first error's message)."""
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens here
    c = client(f"openai-compatible:m:base_url={url}", tmp_path, max_concurrency=4)
    out = c.map([f"p{i}" for i in range(50)])
    kinds = [type(r).__name__ for r in out]
    assert kinds.count("ConnectionFailed") == 1 and kinds.count("EndpointUnavailable") == 49
    assert c.endpoint.sent == 3  # the probe's 3 brief attempts, nothing else
    u = c.usage.as_dict()
    assert u["total"]["failures"] == 50 and u["total"]["calls"] == 0
    assert u["total"]["failure_kinds"] == {"ConnectionFailed": 1, "EndpointUnavailable": 49}
    example = u["models"]["openai-compatible:m"]["failure_examples"][0]
    assert example["error"] == "ConnectionFailed" and "127.0.0.1" in example["message"]
    unsent = next(r for r in out if isinstance(r, EndpointUnavailable))
    assert "its first call failed" in str(unsent)


def test_breaker_opens_after_consecutive_failures_once_the_endpoint_worked(tmp_path):
    state = {"dead": False}

    def script(req):
        return ScriptedReply(status=500, error="down", headers={"Retry-After": "0"}) if state["dead"] else "ok"

    with TestServer(reply=script) as srv:
        c = client(srv, tmp_path, LLMSettings(max_consecutive_failures=3), max_concurrency=1,
                   retry=RetryPolicy.fast(max_attempts=2))
        assert c.chat("warm").text == "ok"
        state["dead"] = True
        out = c.map([f"p{i}" for i in range(10)])
        kinds = [type(r).__name__ for r in out]
        assert kinds == ["ServerError"] * 3 + ["EndpointUnavailable"] * 7
        assert srv.requests_total == 1 + 3 * 2  # the warm call, then 3 calls x 2 attempts
        assert "3 consecutive failed calls" in str(out[-1])


def test_a_bad_request_is_not_held_against_the_endpoint(tmp_path):
    def script(req):
        text = last_user_text(req)
        return ScriptedReply(status=400, error="context length exceeded") if text.startswith("long") else "ok"

    with TestServer(reply=script) as srv:
        c = client(srv, tmp_path, max_concurrency=2)
        out = c.map([f"long{i}" for i in range(15)] + ["short"])
        assert [type(r).__name__ for r in out] == ["BadRequest"] * 15 + ["Reply"]
        assert c.endpoint.available


@pytest.mark.parametrize("status,cls,hint", [(401, AuthError, "OPENAI_API_KEY"), (403, AuthError, "lacks access"),
                                             (404, ModelNotFound, "not found at")])
def test_fatal_errors_stop_every_request_after_one(tmp_path, monkeypatch, status, cls, hint):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with TestServer(reply=lambda req: ScriptedReply(status=status, error="nope")) as srv:
        c = get_client(f"openai:gpt-4o-mini:base_url={srv.openai_base_url}", cache_dir=tmp_path / "c",
                       retry=RetryPolicy.fast(), max_concurrency=8)
        with pytest.raises(cls, match=hint):
            c.map([f"p{i}" for i in range(100)])
        assert srv.requests_total == 1  # the first call went alone; nothing else was sent
        with pytest.raises(RunStopped, match="not sent"):
            c.chat("later")
        assert srv.requests_total == 1
        assert c.usage.as_dict()["total"]["failures"] >= 1


def test_endpoint_unit_rules():
    e = Endpoint("x", max_concurrency=2, max_consecutive_failures=2)
    with e.call():
        pass
    e.failed(ServerError("boom"))  # the very first call failed: out at once
    with pytest.raises(EndpointUnavailable, match="its first call failed"), e.call():
        pass
    e2 = Endpoint("y", 1)
    e2.failed(AuthError("bad key", status=401))
    with pytest.raises(RunStopped) as info, e2.call():
        pass
    assert isinstance(info.value.original, AuthError)


# -- time: read and connect timeouts, the call budget ---------------------------------------------------
def test_a_hung_endpoint_fails_a_call_within_its_budget(tmp_path):
    with TestServer(reply=ScriptedReply(hang=True), hang_s=30) as srv:
        srv.reply = lambda req: ScriptedReply(hang=True)
        c = client(srv, tmp_path, LLMSettings(timeout=0.3),
                   retry=RetryPolicy(max_attempts=6, initial_wait=0.05, jitter=0.0, budget=1.0))
        with pytest.raises(LLMTimeout) as info:
            c.chat("anything")
        # read timeout 0.3 s, budget 1 s: attempts start at >= 0, 0.35 and 0.75 s, so at most 3 fit however
        # slow the machine (a loaded one may fit fewer); the message says why it stopped
        assert 1 <= srv.requests_total <= 3
        assert "time budget is 1 s" in str(info.value) and "no reply within" in str(info.value)
        out = c.map(["a", "b", "c"])  # the endpoint is out: nothing more is sent
        assert all(isinstance(r, EndpointUnavailable) for r in out) and srv.requests_total <= 3


def test_timeouts_are_recorded_in_the_client_description(tmp_path):
    with TestServer() as srv:
        d = client(srv, tmp_path, LLMSettings(timeout=7.0, connect_timeout=2.0)).describe()
    assert d["timeouts"] == {"read_s": 7.0, "connect_s": 2.0} and d["retry"]["budget_s"] == 120.0


# -- one sender per request -------------------------------------------------------------------------------
def test_identical_requests_in_flight_are_sent_once(tmp_path):
    with TestServer(reply=lambda req: "r:" + last_user_text(req), latency=0.1) as srv:
        c = client(srv, tmp_path, max_concurrency=8)
        c.chat("warm")  # open the gate
        prompts = [f"p{i % 5}" for i in range(40)]
        out = c.map(prompts)
        assert [r.text for r in out] == [f"r:{p}" for p in prompts]
        assert srv.requests_total == 1 + 5 and srv.unique_requests == 6
        u = c.usage.get(c.label)
        assert u.calls == 6 and u.cache_hits == 35


WORKLOAD = """
import sys
import harness.llm as llm
spec, cache_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = llm.get_client(spec, cache_dir=cache_dir, max_concurrency=4, retry=llm.RetryPolicy.fast())
out = client.map([f"item {i}" for i in range(n)])
assert all(r.text == "done: item %d" % i for i, r in enumerate(out)), out
print("ok", flush=True)
"""


@pytest.mark.skipif(not available("openai"),
                    reason="the OpenAI SDK is not installed (pip install 'harness-ir[openai]')")
def test_two_processes_on_one_cache_send_each_request_once(tmp_path):
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    n = 60
    with TestServer(reply=lambda req: "done: " + last_user_text(req), latency=0.05) as srv:
        args = [sys.executable, str(script), srv.spec("m"), str(tmp_path / "cache"), str(n)]
        procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        outs = [p.communicate(timeout=300) for p in procs]
        assert all(p.returncode == 0 for p in procs), outs
        assert srv.unique_requests == n
        assert srv.requests_total == n  # three runs cost what one run costs
    assert not list((tmp_path / "cache" / "llm" / "claims").iterdir())  # every claim released


def test_a_stale_claim_of_a_dead_process_is_taken_over(tmp_path):
    cache = LLMCache(tmp_path / "llm")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    claim = tmp_path / "llm" / "claims" / "k1"
    claim.parent.mkdir(parents=True)
    claim.write_text(f"{dead.stdout.strip()} {socket.gethostname()} 0\n")
    with cache.claim("k1") as entry:
        assert entry is None  # ours to send
        assert claim.read_text().split()[0] != dead.stdout.strip()
    assert not claim.exists()
    cache.close()


# -- a cache that recovers ------------------------------------------------------------------------------
def _fill(cache_dir, n=30):
    with TestServer(reply=lambda req: "v:" + last_user_text(req)) as srv:
        c = get_client(srv.spec("m"), cache_dir=cache_dir, retry=RetryPolicy.fast(), shared=False)
        c.map([f"q{i}" for i in range(n)])
        c.cache.close()


def _corrupt(db, how):
    data = db.read_bytes()
    if how == "truncated":
        db.write_bytes(data[: len(data) // 3])
    elif how == "garbage":
        db.write_bytes(b"this is not a database at all " * 300)
    else:  # a bad page in the middle (the header and schema stay intact)
        with sqlite3.connect(db) as con:
            page = con.execute("PRAGMA page_size").fetchone()[0]
        n_pages = len(data) // page
        bad = bytearray(data)
        for p in range(2, n_pages):
            bad[p * page: (p + 1) * page] = b"\xff" * page
        db.write_bytes(bytes(bad))


@pytest.mark.parametrize("how", ["truncated", "garbage", "bad page"])
def test_a_corrupt_cache_is_moved_aside_and_the_run_completes(tmp_path, how, caplog):
    from click.testing import CliRunner

    from harness.cli import cli

    cache_dir = tmp_path / "cache"
    _fill(cache_dir)
    db = cache_dir / "llm" / "cache.db"
    _corrupt(db, how)
    caplog.set_level(logging.WARNING, logger="harness.llm")
    with TestServer(reply=lambda req: "v:" + last_user_text(req)) as srv:
        c = get_client(srv.spec("m"), cache_dir=cache_dir, retry=RetryPolicy.fast(), shared=False)
        out = c.map([f"q{i}" for i in range(30)])
        assert [r.text for r in out] == [f"v:q{i}" for i in range(30)]
        c.cache.close()
    notices = [r for r in caplog.records if "was corrupt" in r.getMessage()]
    assert len(notices) == 1 and "moved it to cache.db.corrupt-" in notices[0].getMessage()
    assert list((cache_dir / "llm").glob("cache.db.corrupt-*"))
    runner = CliRunner()
    info = runner.invoke(cli, ["cache", "info", "--cache-dir", str(cache_dir), "--json"])
    assert info.exit_code == 0, info.output
    data = json.loads(info.output)
    assert data["entries"] == 30 and data["corrupt_copies"]
    cleared = runner.invoke(cli, ["cache", "clear", "-y", "--cache-dir", str(cache_dir)])
    assert cleared.exit_code == 0 and "removed 30 entries" in cleared.output and "corrupt" in cleared.output
    assert not list((cache_dir / "llm").glob("cache.db.corrupt-*"))


def test_cache_info_on_a_corrupt_folder_works(tmp_path):
    from click.testing import CliRunner

    from harness.cli import cli

    (tmp_path / "llm").mkdir()
    (tmp_path / "llm" / "cache.db").write_bytes(b"\x00garbage" * 100)
    result = CliRunner().invoke(cli, ["cache", "info", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "entries: 0" in result.output and "corrupt databases moved aside" in result.output


# -- usage is always recorded; credentials in URLs are masked everywhere ---------------------------------
class Counting:
    """A reranker that asks the LLM about the top ``depth`` passages (0: none)."""

    def __init__(self, llm: str | None = None, depth: int = 3, context: Context | None = None):
        self.client = Context.of(context).llm.client(llm)  # the evaluation's LLM session
        self.depth = depth

    def rerank(self, queries, run, corpus):
        reqs = [f"{queries[q].text} || {corpus[d].text}" for q in run for d in run.doc_ids(q)[: self.depth]]
        self.client.map(reqs)
        return Run.from_order({q: run.doc_ids(q) for q in run})

    def config(self):
        return {"llm": self.client.describe()}


@pytest.fixture
def registry():
    plugin = types.SimpleNamespace()

    @hookimpl
    def register_rerankers(register):
        register("counting", Counting, "test reranker")

    plugin.register_rerankers = register_rerankers
    host = PluginHost(load_entry_points=False)
    host.register_plugin(plugin, "counting-plugin")
    return host.registry


def test_usage_is_recorded_with_zero_calls(registry, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with TestServer() as srv:
        res = evaluate("demo", rerankers=["counting:depth=0"], llm=srv.spec("m"), registry=registry, progress=False,
                       output=str(tmp_path / "out"))
    assert res.complete and res.usage["total"]["calls"] == 0 and res.usage["total"]["failures"] == 0
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["status"] == "complete" and data["usage"]["total"]["calls"] == 0
    assert data["usage"]["endpoints"][0]["sent"] == 0


def test_transport_failures_make_a_run_incomplete_unless_accepted(registry, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))

    def script(req):
        return ScriptedReply(status=400, error="too long") if "Diabetes" in last_user_text(req) else "fine"

    with TestServer(reply=script) as srv:
        kw = dict(rerankers=["counting:depth=3"], llm=srv.spec("m"), registry=registry, progress=False)
        res = evaluate("demo", **kw)
        report = res.llm_failures
        assert not res.complete and report["failed"] > 0 and report["kinds"] == {"BadRequest 400": report["failed"]}
        assert report["examples"][0]["message"].endswith("too long")
        share = report["share"]
        ok = evaluate("demo", max_llm_failures=share, **kw)
        assert ok.complete and ok.llm_failures["failed"] == report["failed"]
        assert evaluate("demo", max_llm_failures=share / 2, **kw).complete is False


def test_credentials_in_a_base_url_leak_nowhere(registry, tmp_path, monkeypatch, caplog, capsys):
    canary = "canary" + uuid.uuid4().hex
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    caplog.set_level(logging.DEBUG)
    with TestServer(reply=lambda req: "fine") as srv:
        spec = f"openai-compatible:m:base_url=http://user:{canary}@127.0.0.1:{srv.port}/v1"
        res = evaluate("demo", rerankers=[f"counting:depth=2,llm='{spec}'"], registry=registry, progress=False,
                       output=str(tmp_path / "out"), command=["harness", "eval", "--llm", spec])
        assert res.usage["total"]["calls"] > 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "results.json" for p in files) and any(p.name.endswith(".db") for p in files)
    leaked = [str(p) for p in files if canary.encode() in p.read_bytes()]
    assert not leaked, leaked
    out = capsys.readouterr()
    assert canary not in caplog.text and canary not in out.out + out.err
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "http://***@127.0.0.1" in json.dumps(data["components"])


def test_connection_failure_message_names_the_endpoint_without_credentials(tmp_path):
    url = f"http://u:secretcanary@127.0.0.1:{free_port()}/v1"
    c = client(f"openai-compatible:m:base_url={url}", tmp_path)
    with pytest.raises(ConnectionFailed) as info:
        c.chat("x")
    assert "secretcanary" not in str(info.value) and "http://***@127.0.0.1" in str(info.value)


def test_threads_waiting_at_the_gate_see_the_fatal_error(tmp_path, monkeypatch):
    """Workers queued behind a first call that gets 401 fail without sending (RunStopped)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with TestServer(reply=lambda req: ScriptedReply(status=401, error="bad key", delay=0.2)) as srv:
        c = get_client(f"openai:gpt-4o-mini:base_url={srv.openai_base_url}", cache_dir=tmp_path / "c",
                       retry=RetryPolicy.fast(), max_concurrency=4)
        errors = []

        def one(i):
            try:
                c.chat(f"p{i}")
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(type(exc).__name__)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.requests_total == 1
        assert sorted(errors) == ["AuthError"] + ["RunStopped"] * 5
