"""Batch mode (``--llm-batch``) against the loopback server through the official SDKs: one batch per
stage, replies equal to direct mode, errors and expiry under the failure policy, a durable journal
that survives SIGKILL at any point without submitting a request twice, rounds for sequential work,
dry-run estimates, ``--no-wait`` and ``harness batch``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness.concepts.errors import HarnessError
from harness.llm import LLMSession, LLMSettings, RetryPolicy, user
from harness.runtime.extras import available
from harness.served.batch.journal import BatchJournal
from harness.served.reply_cache import LLMCache
from harness.served.request_errors import BadRequest, BatchPending, NotProcessed
from harness.testing import ScriptedReply, TestServer
from harness.testing.llm_server import last_user_text

MODEL = "gpt-4o-mini"  # priced in the built-in table
WORKLOAD = """
import sys
import harness.llm as llm
spec, cache_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
settings = llm.LLMSettings(batch=True, batch_poll=0.02, cache_dir=cache_dir, retry=llm.RetryPolicy.fast())
client = llm.LLMSession(settings).client(spec)
prompts = [f"item {i}" for i in range(n)]
out = client.map(prompts)
u = client.usage.get(client.label)
ok = sum(1 for p, r in zip(prompts, out) if not isinstance(r, Exception) and r.text == "done: " + p)
print(ok, u.calls, u.cache_hits, u.batch_calls, flush=True)
"""


def done(req: dict) -> str:
    return "done: " + last_user_text(req)

#: the providers, each skipped where its SDK is missing (a killed child process cannot say why it failed)
WITH_SDK = tuple(pytest.param(p, marks=pytest.mark.skipif(
    not available(p), reason=f"the {p} SDK is not installed (pip install 'harness-ir[{p}]')"))
    for p in ("openai", "anthropic"))


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    yield


def session(tmp_path, **changes) -> LLMSession:
    settings = LLMSettings(batch=True, batch_poll=0.01, cache_dir=str(tmp_path / "cache"), retry=RetryPolicy.fast())
    return LLMSession(settings.merged(**changes))


def prompts(n: int) -> list[str]:
    return [f"item {i}" for i in range(n)]


# -- one stage, one batch --------------------------------------------------------------------
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stage_is_one_batch_with_the_replies_of_direct_mode(tmp_path, provider):
    model = MODEL if provider == "openai" else "claude-haiku-4-5"
    with TestServer(reply=done) as srv:
        spec = srv.spec(model, provider)
        batch = session(tmp_path).client(spec)
        replies = batch.map(prompts(30))
        assert srv.batch_submissions == 1 and srv.batch_requests_total == 30 and srv.requests_total == 0
        direct = LLMSession(LLMSettings(cache_dir=str(tmp_path / "direct"))).client(spec).map(prompts(30))
        assert srv.requests_total == 30
    assert [r.text for r in replies] == [r.text for r in direct] == [f"done: item {i}" for i in range(30)]
    assert [r.usage for r in replies] == [r.usage for r in direct]
    u = batch.usage.as_dict()
    m = u["models"][batch.label]
    assert m["calls"] == 30 and m["batch"]["calls"] == 30 and m["batch"]["batches"] == 1
    assert m["batch"]["rounds"] == 1
    sent = m["batch"]["bytes_uploaded"]  # the request lines; Anthropic's body adds {"requests":[...]} and commas
    assert sent == srv.batch_bytes_uploaded if provider == "openai" else 0 < srv.batch_bytes_uploaded - sent < 50
    assert m["batch"]["cost_usd"] == pytest.approx(m["batch"]["cost_usd_at_direct_price"] / 2)
    assert m["cost_usd"] == m["batch"]["cost_usd"] > 0
    assert "via the batch API: 30 calls in 1 batch(es) over 1 round(s)" in batch.usage.table()


def test_warm_rerun_submits_nothing_and_duplicates_are_sent_once(tmp_path):
    with TestServer(reply=done) as srv:
        spec = srv.spec(MODEL, "openai")
        first = session(tmp_path).client(spec).map(prompts(10) + prompts(10))
        assert srv.batch_requests_total == 10  # the second ten are the same requests
        assert [r.cached for r in first] == [False] * 10 + [True] * 10
        again = session(tmp_path).client(spec)
        replies = again.map(prompts(10))
        assert srv.batch_submissions == 1 and srv.requests_total == 0
    assert all(r.cached for r in replies)
    assert again.usage.get(again.label).cache_hits == 10 and again.usage.get(again.label).rounds == 0


def test_batches_respect_the_size_limit(tmp_path):
    with TestServer(reply=done) as srv:
        client = session(tmp_path, batch_size=7).client(srv.spec(MODEL, "openai"))
        replies = client.map(prompts(30))
    assert srv.batch_submissions == 5  # 7 + 7 + 7 + 7 + 2
    assert sorted(len(b.requests) for b in srv.batches) == [2, 7, 7, 7, 7]
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(30)]


def test_batches_respect_the_byte_limit(tmp_path):
    from harness.served.batch.protocol import BatchLimits

    with TestServer(reply=done) as srv:
        client = session(tmp_path).client(srv.spec(MODEL, "openai"))
        client.batch.api.limits = BatchLimits(max_requests=1000, max_bytes=1000)  # this endpoint's limit
        client.map(prompts(20))
    sizes = [b.nbytes for b in srv.batches]
    assert len(sizes) > 2 and max(sizes) <= 1000


def test_sequences_go_in_rounds(tmp_path):
    """Three dependent calls per item, eight items: three batches of eight, and the same results as
    direct mode (call N of an item sees reply N-1)."""

    def three(item, chat):
        text = item
        for _ in range(3):
            text = chat([user(text)]).text
        return text

    with TestServer(reply=done) as srv:
        spec = srv.spec(MODEL, "openai")
        client = session(tmp_path).client(spec)
        got = client.run_sequences(three, prompts(8))
        assert srv.batch_submissions == 3 and sorted(len(b.requests) for b in srv.batches) == [8, 8, 8]
        direct = LLMSession(LLMSettings(cache_dir=str(tmp_path / "direct"))).client(spec)
        assert got == direct.run_sequences(three, prompts(8)) == [f"done: done: done: item {i}" for i in range(8)]
    assert client.usage.get(client.label).rounds == 3


def test_a_lone_chat_is_a_batch_of_one(tmp_path):
    with TestServer(reply=done) as srv:
        client = session(tmp_path).client(srv.spec(MODEL, "openai"))
        assert client.chat([user("alone")]).text == "done: alone"
        assert client.chat([user("alone")]).cached
    assert srv.batch_submissions == 1 and srv.requests_total == 0


# -- failures, expiry, resubmission ------------------------------------------------------------
def test_failed_requests_and_an_expired_batch(tmp_path):
    """100 requests in four batches: 10 are rejected (HTTP 400 inside the batch), the second batch
    expires. The rejected ones are failures (not resent); the expired batch's requests are submitted
    once more and answered; nothing answered is ever submitted again."""

    def reply(req):
        i = int(last_user_text(req).split()[-1])
        return ScriptedReply(status=400, error="prompt rejected") if i % 10 == 3 else done(req)

    with TestServer(reply=reply, batch_expire={2}) as srv:
        client = session(tmp_path, batch_size=25).client(srv.spec(MODEL, "openai"))
        replies = client.map(prompts(100))
        expired = set(srv.batches[1].custom_ids)
        counts = srv.batch_requests
        assert srv.batch_submissions == 5  # four, then the expired batch's 25 again
    failed = [i for i, r in enumerate(replies) if isinstance(r, Exception)]
    assert failed == [i for i in range(100) if i % 10 == 3]
    assert all(isinstance(replies[i], BadRequest) and "prompt rejected" in str(replies[i]) for i in failed)
    assert all(r.text == f"done: item {i}" for i, r in enumerate(replies) if i not in failed)
    assert len(expired) == 25 and all(counts[k] == 2 for k in expired)
    assert all(n == 1 for k, n in counts.items() if k not in expired)
    u = client.usage.get(client.label)
    assert (u.failures, u.batch_calls) == (10, 90)
    assert u.errors == {"BadRequest 400": 10}


def test_a_batch_that_expires_twice_fails_its_requests(tmp_path):
    with TestServer(reply=done, batch_expire={1, 2}, batch_expire_keep=3) as srv:
        client = session(tmp_path).client(srv.spec(MODEL, "openai"))
        replies = client.map(prompts(10))
    ok = [r for r in replies if not isinstance(r, Exception)]
    assert len(ok) == 6  # three answered by each batch before it expired
    assert all(isinstance(r, NotProcessed) and "expired" in str(r) for r in replies if r not in ok)
    assert client.usage.get(client.label).failures == 4


def test_resend_directly(tmp_path):
    with TestServer(reply=done, batch_expire={1}) as srv:
        client = session(tmp_path, batch_retry="direct").client(srv.spec(MODEL, "anthropic"))
        replies = client.map(prompts(12))
        assert srv.batch_submissions == 1 and srv.requests_total == 12
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(12)]
    u = client.usage.get(client.label)
    assert (u.calls, u.batch_calls) == (12, 0)


def test_a_lost_acknowledgement_is_not_submitted_twice(tmp_path):
    """The server makes the batch but the connection drops before the client hears of it: the retry
    finds the batch by its tag instead of creating another."""
    lost = []

    def drop_first(batch):
        if not lost:
            lost.append(batch["id"])
            raise RuntimeError("connection lost")

    with TestServer(reply=done, on_batch_create=drop_first) as srv:
        client = session(tmp_path).client(srv.spec(MODEL, "openai"))
        replies = client.map(prompts(5))
    assert srv.batch_submissions == 1 and lost
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(5)]


# -- the journal and crashes -------------------------------------------------------------------
def test_the_journal_never_gives_a_key_to_two_live_batches(tmp_path):
    journal = BatchJournal(tmp_path / "batches.db")
    endpoint = {"endpoint": "openai:m@u", "provider": "openai", "model": "m", "base_url": "u"}
    rec, held = journal.reserve(endpoint, [("a", {"x": 1}), ("b", {"x": 2})])
    assert held == {} and rec.state == "intent" and rec.n == 2 and not rec.owner_gone
    again, held = journal.reserve(endpoint, [("b", {"x": 2}), ("c", {"x": 3})])
    assert held == {"b": rec.id} and again.n == 1 and set(journal.requests(again.id)) == {"c"}
    journal.mark_abandoned(rec.id, "test")
    third, held = journal.reserve(endpoint, [("a", {"x": 1})])
    assert held == {} and third.n == 1
    journal.mark_submitted(third.id, "batch_x", 10)
    assert journal.get(third.id).remote_id == "batch_x" and journal.remote_ids("openai:m@u") == {"batch_x"}
    other = BatchJournal(tmp_path / "batches.db")  # another process's view of the same file
    assert other.holders(["a", "b", "c", "d"]) == {"a": third.id, "c": again.id}


def _kill_when(srv: TestServer, proc: subprocess.Popen, cond) -> None:
    deadline = time.monotonic() + 60
    while not cond() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()


@pytest.mark.parametrize("provider", WITH_SDK)
def test_sigkill_after_submission_then_rerun_collects(tmp_path, provider):
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    n = 40
    with TestServer(reply=done, batch_delay=3600) as srv:
        args = [sys.executable, str(script), srv.spec(MODEL, provider), str(tmp_path / "cache"), str(n)]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _kill_when(srv, proc, lambda: srv.batch_submissions >= 1 and srv.batch_polls >= 1)
        assert srv.batch_submissions == 1
        srv.batch_delay = 0  # the provider finishes while nobody watches
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert srv.batch_submissions == 1 and srv.requests_total == 0  # collected, not submitted again
        assert list(map(int, out.stdout.split())) == [n, n, 0, n]  # the rerun collected and paid for them
        warm = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert list(map(int, warm.stdout.split())) == [n, 0, n, 0] and srv.batch_submissions == 1


@pytest.mark.parametrize("provider", WITH_SDK)
def test_sigkill_between_acknowledgement_and_journal_write(tmp_path, provider):
    """The provider has made the batch; the client dies before writing its id: the rerun finds the
    batch (OpenAI: by the tag in its metadata; Anthropic: by its requests) and collects it."""
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    victim: list[subprocess.Popen] = []

    def kill_client(batch):
        if victim and victim[0].poll() is None:
            os.kill(victim[0].pid, signal.SIGKILL)
            victim[0].wait()

    with TestServer(reply=done, on_batch_create=kill_client) as srv:
        args = [sys.executable, str(script), srv.spec(MODEL, provider), str(tmp_path / "cache"), "25"]
        victim.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        victim[0].wait(timeout=120)
        assert victim[0].returncode == -signal.SIGKILL and srv.batch_submissions == 1
        journal = BatchJournal(tmp_path / "cache" / "llm" / "batches.db")
        assert [r.state for r in journal.batches()] == ["intent"]
        victim.clear()
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert srv.batch_submissions == 1 and list(map(int, out.stdout.split())) == [25, 25, 0, 25]
        (rec,) = journal.batches()
        assert rec.state == "collected" and rec.note.startswith("25 replies")


def test_an_intent_the_provider_never_received_is_abandoned(tmp_path):
    """A process that died before submitting leaves an intent; the next run finds no such batch at
    the provider, abandons the intent and submits the requests itself (once)."""
    with TestServer(reply=done) as srv:
        client = session(tmp_path).client(srv.spec(MODEL, "openai"))
        items = [client._lookup([user(p)], None, {}) for p in prompts(4)]
        journal = client.batch.journal
        rec, _ = journal.reserve(client.batch.endpoint, [(p.key, p.payload) for p in items])
        journal._set(rec.id, owner_pid=2 ** 22 + 12345)  # a process that does not exist
        replies = client.map(prompts(4))
        assert srv.batch_submissions == 1
    assert journal.get(rec.id).state == "abandoned" and [r.text for r in replies][0] == "done: item 0"


# -- settings, dry runs, errors ---------------------------------------------------------------
def test_dry_run_counts_rounds_and_prices_the_batch_tier(tmp_path):
    with TestServer(reply=done) as srv:
        client = session(tmp_path, dry_run=True).client(srv.spec(MODEL, "openai"))
        client.map(prompts(50))
        client.map(prompts(50))  # seen: free
        assert srv.batch_submissions == 0 and srv.requests_total == 0
    u = client.usage.as_dict()
    b = u["models"][client.label]["batch"]
    assert (b["calls"], b["rounds"], b["batches"]) == (50, 2, 0)
    assert b["cost_usd"] == pytest.approx(b["cost_usd_at_direct_price"] / 2) and b["cost_usd"] > 0
    assert "via the batch API (estimate): 50 calls over 2 round(s)" in client.usage.table()


def test_batch_mode_needs_a_batch_api_and_the_cache(tmp_path):
    with TestServer(reply=done) as srv:
        with pytest.raises(HarnessError, match="has no batch API"):
            session(tmp_path).client(srv.spec("m", "openai-compatible"))
        with pytest.raises(HarnessError, match="needs the LLM reply cache"):
            session(tmp_path, use_cache=False).client(srv.spec(MODEL, "openai"))


def test_no_wait_stops_pending_then_the_same_call_collects(tmp_path):
    with TestServer(reply=done, batch_delay=3600) as srv:
        spec = srv.spec(MODEL, "openai")
        with pytest.raises(BatchPending, match=r"pending: 6 request\(s\) in 1 batch") as info:
            session(tmp_path, batch_wait=False).client(spec).map(prompts(6))
        assert info.value.exit_code == 75 and srv.batch_submissions == 1
        with pytest.raises(BatchPending):  # still running: nothing new is submitted
            session(tmp_path, batch_wait=False).client(spec).map(prompts(6))
        srv.batch_delay = 0
        replies = session(tmp_path, batch_wait=False).client(spec).map(prompts(6))
        assert srv.batch_submissions == 1
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(6)]


def test_price_files_may_give_batch_rates(tmp_path):
    from harness.served.pricing import PriceTable

    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"openai:x": {"input": 1, "output": 2, "batch_input": 0.25,
                                                        "batch_output": 0.5}, "openai:y": {"input": 1, "output": 2}}}))
    table = PriceTable.load(path)
    assert table.lookup("openai", "x").batch_rates == (0.25, 0.5)
    assert table.lookup("openai", "y").batch_rates == (0.5, 1.0)
    assert table.cost("openai", "x", 1_000_000, 1_000_000, batch=True) == 0.75
    path.write_text(json.dumps({"models": {"openai:x": {"input": 1, "output": 2, "batch_input": 0.25}}}))
    with pytest.raises(HarnessError, match="give both batch_input and batch_output"):
        PriceTable.load(path)


def test_replies_land_in_the_cache_keyed_like_direct_calls(tmp_path):
    with TestServer(reply=done) as srv:
        spec = srv.spec(MODEL, "openai")
        session(tmp_path).client(spec).map(prompts(3))
        direct = LLMSession(LLMSettings(cache_dir=str(tmp_path / "cache"))).client(spec)
        assert [r.cached for r in direct.map(prompts(3))] == [True] * 3 and srv.requests_total == 0
    cache = LLMCache(tmp_path / "cache" / "llm")
    try:
        assert len(cache) == 3
    finally:
        cache.close()


# -- through the pipeline and the CLI ----------------------------------------------------------
def _harness(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HARNESS_BATCH_POLL": "0.02", **(env or {})})


def test_cli_no_wait_status_collect_then_the_same_command_finishes(tmp_path, llm_double):
    """`--no-wait` exits 75 with one line; `harness batch status` shows the batch; `collect` gathers
    it; the same `harness eval` then finishes from the cache, submitting nothing."""
    cache = str(tmp_path / "cache")
    with TestServer(reply="Yes", batch_delay=3600) as srv:
        eval_args = ["eval", "--task", "demo", "--reranker", llm_double, "--llm",
                     srv.spec(MODEL, "openai"), "--llm-batch", "--cache-dir", cache, "--quiet"]
        first = _harness(*eval_args, "--no-wait")
        assert first.returncode == 75, first.stderr
        assert first.stderr.strip().splitlines()[-1].startswith("pending: 400 request(s) in 1 batch(es)")
        assert "Traceback" not in first.stderr and srv.batch_submissions == 1
        info = _harness("cache", "info", "--cache-dir", cache)
        assert "pending batches: 1 (`harness batch status` lists them)" in info.stdout, info.stdout + info.stderr
        status = _harness("batch", "status", "--cache-dir", cache)
        assert status.returncode == 0 and "in_progress 0/400" in status.stdout, status.stdout + status.stderr
        still = _harness("batch", "collect", "--cache-dir", cache)
        assert still.returncode == 75 and "still running" in still.stdout
        srv.batch_delay = 0
        collect = _harness("batch", "collect", "--cache-dir", cache)
        assert collect.returncode == 0, collect.stderr
        assert "collected (400 replies, 0 errors, 0 unprocessed)" in collect.stdout
        assert "via the batch API: 400 calls collected from batches submitted earlier" in collect.stdout
        assert "no pending batches" in _harness("batch", "status", "--cache-dir", cache).stdout
        final = _harness(*eval_args)
        assert final.returncode == 0, final.stderr
        assert srv.batch_submissions == 1 and srv.requests_total == 0
        assert "nDCG@10" in final.stdout


def test_cli_cancel_keeps_what_finished(tmp_path, llm_double):
    cache = str(tmp_path / "cache")
    with TestServer(reply="Yes", batch_delay=3600, batch_cancel_keep=30) as srv:
        eval_args = ["eval", "--task", "demo", "--reranker", llm_double, "--llm",
                     srv.spec(MODEL, "openai"), "--llm-batch", "--cache-dir", cache, "--quiet"]
        assert _harness(*eval_args, "--no-wait").returncode == 75
        bad = _harness("batch", "cancel", "--cache-dir", cache)
        assert bad.returncode == 2 and "--all" in bad.stderr
        unknown = _harness("batch", "cancel", "batch_nope", "--cache-dir", cache)
        assert unknown.returncode == 2 and "no pending batch batch_nope" in unknown.stderr
        cancel = _harness("batch", "cancel", "--all", "--cache-dir", cache)
        assert cancel.returncode == 0 and "cancel requested" in cancel.stdout and srv.batch_cancels == 1
        collect = _harness("batch", "collect", "--cache-dir", cache)
        assert "collected (30 replies, 0 errors, 370 unprocessed)" in collect.stdout, collect.stdout
        srv.batch_delay = 0
        again = _harness(*eval_args)  # the 370 cancelled requests go out in a new batch; the 30 are cached
        assert again.returncode == 0, again.stderr
        assert srv.batch_submissions == 2 and len(srv.batches[1].requests) == 370


def test_pipeline_failure_policy_applies_to_batch_failures(tmp_path, llm_double):
    """Requests a batch rejected are transport failures: the run is INCOMPLETE (exit 3) unless their
    share is accepted."""
    def reply(req):
        return ScriptedReply(status=400, error="nope") if "sugar" in json.dumps(req) else "Yes"

    cache = str(tmp_path / "cache")
    with TestServer(reply=reply) as srv:
        args = ["eval", "--task", "demo", "--reranker", llm_double, "--llm", srv.spec(MODEL, "openai"),
                "--llm-batch", "--cache-dir", cache, "--quiet"]
        out = _harness(*args)
        assert out.returncode == 3, out.stderr
        assert "INCOMPLETE" in out.stdout
        accepted = _harness(*args, "--max-llm-failures", "0.5")
        assert accepted.returncode == 0, accepted.stderr
        assert srv.requests_total == 0


def test_losing_the_batch_api_while_waiting_leaves_the_batches_pending(tmp_path):
    """Polling that fails after its retries stops the run with exit status 75, not as request
    failures: the batches stay in the journal for a later run."""
    srv = TestServer(reply=done, batch_delay=3600).start()
    spec = srv.spec(MODEL, "openai")
    with pytest.raises(BatchPending):
        session(tmp_path, batch_wait=False).client(spec).map(prompts(4))
    srv.stop()
    with pytest.raises(BatchPending, match="lost contact with the batch API") as info:
        session(tmp_path).client(spec).map(prompts(4))
    assert info.value.exit_code == 75
    journal = BatchJournal(tmp_path / "cache" / "llm" / "batches.db")
    assert [r.state for r in journal.batches()] == ["submitted"]


def test_a_batch_the_provider_does_not_know_is_submitted_again(tmp_path):
    """The journal holds a batch the provider has no record of (a reset server, another account):
    it is abandoned and its requests submitted once more."""
    old = TestServer(reply=done, batch_delay=3600).start()
    port = old.port
    with pytest.raises(BatchPending):
        session(tmp_path, batch_wait=False).client(old.spec(MODEL, "openai")).map(prompts(4))
    old.stop()
    with TestServer(reply=done, port=port) as new:
        replies = session(tmp_path).client(new.spec(MODEL, "openai")).map(prompts(4))
        assert new.batch_submissions == 1
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(4)]
    journal = BatchJournal(tmp_path / "cache" / "llm" / "batches.db")
    assert [r.state for r in journal.batches()] == ["collected", "abandoned"]
    assert "does not know batch" in journal.batches()[1].note


# -- harness batch clean -----------------------------------------------------------------------
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cli_clean_deletes_the_provider_copies_and_keeps_the_replies(tmp_path, provider):
    """`harness batch clean` deletes what collected batches left at the provider (OpenAI: the
    uploaded input and the result files; Anthropic: the batch), asks first, leaves pending batches
    alone, and a rerun still finds every reply in the cache."""
    model = MODEL if provider == "openai" else "claude-haiku-4-5"
    cache = str(tmp_path / "cache")
    with TestServer(reply=done, batch_delay=3600) as srv:
        spec = srv.spec(model, provider)
        with pytest.raises(BatchPending):
            session(tmp_path, batch_wait=False).client(spec).map(prompts(6))
        pending = _harness("batch", "clean", "-y", "--cache-dir", cache)
        assert pending.returncode == 0 and "nothing to clean" in pending.stdout, pending.stdout + pending.stderr
        srv.batch_delay = 0
        replies = session(tmp_path).client(spec).map(prompts(6))
        assert [r.text for r in replies] == [f"done: item {i}" for i in range(6)]
        held = srv.stored_files
        assert len(held) == (2 if provider == "openai" else 0)  # the input file and the output file
        assert len(srv.batches) == 1

        asked = subprocess.run([sys.executable, "-m", "harness.cli", "batch", "clean", "--cache-dir", cache],
                               input="n\n", capture_output=True, text=True, timeout=300)
        assert asked.returncode == 1 and "Aborted" in asked.stderr and "Traceback" not in asked.stderr
        assert srv.stored_files == held and srv.file_deletes == srv.batch_deletes == 0

        clean = _harness("batch", "clean", "-y", "--cache-dir", cache)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        batch_id = BatchJournal(tmp_path / "cache" / "llm" / "batches.db").batches()[0].remote_id
        if provider == "openai":
            assert srv.stored_files == [] and srv.file_deletes == 2 and srv.batch_deletes == 0
            assert all(f in clean.stdout for f in held)
        else:
            assert srv.batch_deletes == 1 and srv.batches == [] and f"{batch_id}: deleted {batch_id}" in clean.stdout

        status = _harness("batch", "status", "--all", "--offline", "--cache-dir", cache)
        assert "deleted at the provider" in status.stdout, status.stdout
        again = _harness("batch", "clean", "-y", "--cache-dir", cache)
        assert "nothing to clean" in again.stdout and srv.file_deletes + srv.batch_deletes == 1 + (provider == "openai")

        rerun = session(tmp_path).client(spec)
        assert [r.text for r in rerun.map(prompts(6))] == [r.text for r in replies]
        assert srv.batch_submissions == 1 and srv.requests_total == 0
        assert rerun.usage.get(rerun.label).cache_hits == 6


def test_a_journal_from_before_clean_gains_its_column(tmp_path):
    """A journal written before `removed` existed opens, reads its rows and can record a clean."""
    import sqlite3

    from harness.served.batch import journal as journal_module

    path = tmp_path / "batches.db"
    old_schema = journal_module._SCHEMA.replace(",\n    removed REAL", "")
    assert "removed" not in old_schema
    db = sqlite3.connect(path)
    db.executescript(old_schema)
    db.execute("INSERT INTO batches (tag, endpoint, provider, model, state, remote_id, created, n, attempt, owner_pid,"
               " owner_host) VALUES ('t', 'e', 'openai', 'm', 'collected', 'batch_1', 1.0, 3, 1, 1, 'h')")
    db.commit()
    db.close()
    journal = BatchJournal(path)
    [rec] = journal.batches()
    assert rec.remote_id == "batch_1" and rec.removed is None
    journal.mark_removed(rec.id, "deleted")
    assert journal.get(rec.id).removed is not None
    journal.close()
    assert BatchJournal(path).get(rec.id).note == "deleted"  # reopening finds the column in place
