"""Several endpoints (replicas) of one OpenAI-compatible model, against loopback servers through the real
openai SDK: spec parsing, least-loaded routing, failover when a replica dies, cache keys that do not
depend on the replicas, every replica down, fatal errors, and credentials masked."""

from __future__ import annotations

import json
import logging
import socket
import threading

import pytest

from harness.concepts.errors import HarnessError
from harness.llm import (
    AuthError,
    ConnectionFailed,
    EndpointUnavailable,
    LLMError,
    LLMSession,
    LLMSettings,
    Reply,
    RetryPolicy,
    RunStopped,
    parse_llm_spec,
)
from harness.llm.providers.replicas import KEY_MARKER, ReplicaSet
from harness.testing import ScriptedReply, TestServer
from harness.testing.llm_server import last_user_text


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HARNESS_LLM"):
        monkeypatch.delenv(var, raising=False)


def answer(req: dict) -> str:
    return f"answer to {last_user_text(req)}"


def replicas_spec(urls: list[str], alias: str = "vllm", **args: object) -> str:
    extra = "".join(f",{k}={v}" for k, v in args.items())
    return f"{alias}:m:base_url=[{','.join(json.dumps(u) for u in urls)}]{extra}"


def client(spec: str, tmp_path, settings: LLMSettings | None = None, **kw):
    kw.setdefault("retry", RetryPolicy.fast())
    session = LLMSession(settings)
    return session, session.client(spec, cache_dir=tmp_path / "cache", **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prompts(n: int) -> list[str]:
    return [f"p{i}" for i in range(n)]


# -- specs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alias", ["openai-compatible", "compat", "vllm", "llamacpp", "llama.cpp", "sglang", "ollama"])
def test_a_list_of_base_urls_is_a_replica_set(alias):
    s = parse_llm_spec(f'{alias}:m:base_url=["http://h1:8000/v1","http://h2:8000/v1/"],max_concurrency=4')
    assert s.provider == "openai-compatible" and s.model == "m" and s.base_url is None
    assert s.replicas == ("http://h1:8000/v1", "http://h2:8000/v1")
    assert s.client_args == {"max_concurrency": 4}


def test_replica_lists_unquoted_single_and_model_names_with_colons():
    assert parse_llm_spec("ollama:llama3:8b:base_url=[http://a:1/v1,http://u:pw@b:2/v1]").replicas == (
        "http://a:1/v1", "http://u:pw@b:2/v1")
    one = parse_llm_spec('vllm:m:base_url=["http://a:1/v1"]')
    assert one.replicas == ("http://a:1/v1",) and one.base_url is None
    plain = parse_llm_spec("vllm:m:base_url=http://a:1/v1")  # one URL, as before
    assert plain.base_url == "http://a:1/v1" and plain.replicas == ()


@pytest.mark.parametrize("spec,message", [
    ("vllm:m:base_url=[]", "names no server"),
    ('vllm:m:base_url=["http://a/v1","not a url"]', "'not a url' is not an http"),
    ('vllm:m:base_url=["ftp://a/v1"]', "is not an http"),
    ("vllm:m:base_url=[1,2]", "'1' is not an http"),
    ('vllm:m:base_url=["http://a:99999/v1"]', "is not an http"),
    ('vllm:m:base_url=["http://a/v1","http://a/v1/"]', "listed twice"),
    ('openai:m:base_url=["http://a/v1","http://b/v1"]', "openai takes one base_url"),
    ('anthropic:m:base_url=["http://a/v1"]', "anthropic takes one base_url"),
    ("vllm:m:base_url=[http://u:secret@a/v1,oops]", "'oops' is not"),
])
def test_bad_replica_lists_are_refused_when_parsed(spec, message):
    with pytest.raises(HarnessError, match=message) as info:
        parse_llm_spec(spec)
    assert "secret" not in str(info.value)


# -- routing ----------------------------------------------------------------------------------------
def test_requests_spread_evenly_over_live_replicas(tmp_path):
    servers = [TestServer(reply=answer, latency=0.002).start() for _ in range(3)]
    try:
        session, c = client(replicas_spec([s.openai_base_url for s in servers], max_concurrency=4), tmp_path)
        assert isinstance(c.provider, ReplicaSet) and c.max_concurrency == 12
        out = c.map(prompts(300))
        assert [r.text for r in out] == [f"answer to p{i}" for i in range(300)]
        counts = [s.requests_total for s in servers]
        assert sum(counts) == 300 and all(80 <= n <= 120 for n in counts), counts
        assert all(s.max_in_flight <= 4 for s in servers)  # each replica keeps its own bound
    finally:
        for s in servers:
            s.stop()
    replicas = c.describe()["replicas"]
    assert [r["sent"] for r in replicas] == counts and not any(r["out"] for r in replicas)


def test_a_replica_that_dies_is_taken_out_and_the_run_goes_on(tmp_path, caplog):
    """Server 2 stops after its 30th request (in-flight connections then drop): its requests fail
    over to the others at once, it is taken out with one warning, and every reply is the one a
    healthy single server gives."""
    seen, lock = [0], threading.Lock()

    def dying(req: dict) -> ScriptedReply | str:
        with lock:
            seen[0] += 1
            nth = seen[0]
        if nth == 30:
            stopper.start()
        return ScriptedReply(hang=True) if nth >= 30 else answer(req)  # a stopping server drops it

    servers = [TestServer(reply=answer, latency=0.002).start(), TestServer(reply=dying, latency=0.002).start(),
               TestServer(reply=answer, latency=0.002).start()]
    urls = [s.openai_base_url for s in servers]
    stopper = threading.Thread(target=servers[1].stop)
    try:
        with caplog.at_level(logging.WARNING, logger="harness.llm"):
            session, c = client(replicas_spec(urls, max_concurrency=4), tmp_path)
            out = c.map(prompts(300))
    finally:
        if stopper.ident is not None:
            stopper.join()
        for s in servers:
            s.stop()
    with TestServer(reply=answer) as healthy:
        _, single = client(healthy.spec("m"), tmp_path / "single")
        expected = single.map(prompts(300))
    assert not any(isinstance(r, LLMError) for r in out)
    assert [r.text for r in out] == [r.text for r in expected]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and urls[1] in warnings[0] and "2 of 3 replicas" in warnings[0]
    replicas = c.describe()["replicas"]
    assert [bool(r["out"]) for r in replicas] == [False, True, False]
    assert replicas[1]["failovers"] >= 10 and "consecutive failed calls" in replicas[1]["out"]
    report = session.report()
    the_set = next(e for e in report["endpoints"] if "replicas" in e)
    assert the_set["replicas_out"] == 1 and the_set["out"] is None and the_set["successes"] == 300
    dead = next(e for e in report["endpoints"] if e["endpoint"].endswith(urls[1]))
    assert dead["out"] and dead["failures"] >= 10
    u = report["total"]
    assert u["calls"] == 300 and u["failures"] == 0 and u["retries"] == 0  # failover spends no retry


def test_a_replica_failing_its_first_call_is_taken_out_at_once(tmp_path):
    bad = lambda req: ScriptedReply(status=503, error="loading")  # noqa: E731
    servers = [TestServer(reply=answer).start(), TestServer(reply=bad).start()]
    try:
        _, c = client(replicas_spec([s.openai_base_url for s in servers], max_concurrency=2), tmp_path)
        out = c.map(prompts(40))
    finally:
        for s in servers:
            s.stop()
    assert [r.text for r in out] == [f"answer to p{i}" for i in range(40)]
    assert servers[1].requests_total == 1 and servers[0].requests_total == 40
    assert "its first call failed" in c.describe()["replicas"][1]["out"]


# -- cache ------------------------------------------------------------------------------------------
def test_cache_keys_do_not_depend_on_which_replicas(tmp_path):
    servers = [TestServer(reply=answer).start() for _ in range(3)]
    urls = [s.openai_base_url for s in servers]
    try:
        _, first = client(replicas_spec(urls, max_concurrency=2), tmp_path)
        assert all(isinstance(r, Reply) for r in first.map(prompts(30)))
        assert first.key_payload("p0")["base_url"] == KEY_MARKER
        for s in servers:
            s.reset_counters()
        for again in (replicas_spec(urls[::-1]), replicas_spec(urls[:2], alias="llamacpp"),
                      replicas_spec(urls[2:], alias="openai-compatible")):
            _, c = client(again, tmp_path)
            out = c.map(prompts(30))
            assert all(r.cached for r in out) and [r.text for r in out] == [f"answer to p{i}" for i in range(30)]
        assert [s.requests_total for s in servers] == [0, 0, 0]
        _, plain = client(servers[0].spec("m"), tmp_path)  # one URL: its key as before, the URL in it
        assert plain.key_payload("p0")["base_url"] == urls[0] and not plain.chat("p0").cached
    finally:
        for s in servers:
            s.stop()


# -- failures ---------------------------------------------------------------------------------------
def test_every_replica_down_fails_fast_as_transport_failures(tmp_path, caplog):
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(3)]  # nothing listens there
    with caplog.at_level(logging.WARNING, logger="harness.llm"):
        session, c = client(replicas_spec(urls, max_concurrency=2), tmp_path)
        out = c.map(prompts(30))
    kinds = [type(r).__name__ for r in out]
    assert kinds.count("ConnectionFailed") == 1 and kinds.count("EndpointUnavailable") == 29
    assert all(isinstance(r, ConnectionFailed | EndpointUnavailable) for r in out)
    unsent = next(r for r in out if isinstance(r, EndpointUnavailable))
    assert "on 3 replicas was taken out: its first call failed" in str(unsent)
    assert c.usage.as_dict()["total"]["failures"] == 30
    sent = [r["sent"] for r in c.describe()["replicas"]]
    assert sorted(sent) == [1, 1, 3]  # two replicas taken out at once, the last tried like one endpoint
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_a_fatal_error_on_one_replica_stops_the_run(tmp_path):
    servers = [TestServer(reply=answer).start(),
               TestServer(reply=lambda req: ScriptedReply(status=401, error="bad key")).start()]
    try:
        _, c = client(replicas_spec([s.openai_base_url for s in servers], max_concurrency=2), tmp_path)
        with pytest.raises(AuthError, match="bad key"):
            c.map(prompts(40))
        assert servers[1].requests_total == 1 and servers[0].requests_total < 40
        with pytest.raises(RunStopped):  # the run is stopped: nothing more is sent
            c.chat("after")
    finally:
        for s in servers:
            s.stop()


def test_batch_mode_is_refused_with_replicas(tmp_path):
    spec = replicas_spec(["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"])
    with pytest.raises(HarnessError, match="has no batch API"):
        client(spec, tmp_path, LLMSettings(batch=True))


def test_dry_run_and_credentials_masked(tmp_path):
    with TestServer(reply=answer) as a, TestServer(reply=answer) as b:
        urls = [a.openai_base_url.replace("://", "://user:SECRET@"), b.openai_base_url]
        session, c = client(replicas_spec(urls), tmp_path)
        assert c.chat("p0").text == "answer to p0"
        _, dry = client(replicas_spec(urls), tmp_path / "dry", dry_run=True)
        assert dry.chat("p1").dry_run and a.requests_total + b.requests_total == 1
    text = json.dumps([c.describe(), session.report(), repr(c.provider), c.key_payload("p0")])
    assert "SECRET" not in text and "user:***@" not in text and "http://***@127.0.0.1" in text


def test_a_replica_that_recovers_during_the_run_comes_back(tmp_path, caplog):
    """Server 2 answers 503 for a while (taken out after 3 in a row, one warning), then recovers:
    with ``replica_retry=0`` the next request probes it, the probe succeeds, it is back (one warning)
    and takes its share again. Every reply is right; no request failed."""
    down = threading.Event()

    def flaky(req: dict) -> ScriptedReply | str:
        return ScriptedReply(status=503, error="restarting") if down.is_set() else answer(req)

    a, b = TestServer(reply=answer).start(), TestServer(reply=flaky).start()
    urls = [a.openai_base_url, b.openai_base_url]
    try:
        with caplog.at_level(logging.INFO, logger="harness.llm"):
            session, c = client(replicas_spec(urls, max_concurrency=2), tmp_path,
                                LLMSettings(replica_retry=0, max_consecutive_failures=3))
            first = c.map(prompts(20))
            down.set()
            during = c.map([f"down {i}" for i in range(20)])
            assert c.describe()["replicas"][1]["failures"] >= 3
            served = b.requests_total
            down.clear()
            back = c.map([f"back {i}" for i in range(40)])
    finally:
        a.stop()
        b.stop()
    replies = first + during + back
    assert not any(isinstance(r, LLMError) for r in replies)
    assert [r.text for r in back] == [f"answer to back {i}" for i in range(40)]
    assert b.requests_total - served >= 10  # its share again (2 replicas, 40 requests)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "taken out after 3 consecutive failed calls" in warnings[0] and "1 of 2 replicas" in warnings[0]
    assert f"replica {urls[1]} is back; the run goes on with 2 of 2 replicas" in warnings[1]
    probes = [r for r in caplog.records if "gets a probe request" in r.getMessage()]
    assert probes and all(r.levelno == logging.INFO for r in probes)
    replicas = c.describe()["replicas"]
    assert replicas[1]["returns"] == 1 and replicas[1]["out"] is None
    assert session.report()["total"]["failures"] == 0


def test_a_replica_stays_out_for_its_wait_and_failed_probes_double_it(tmp_path, caplog):
    """Taken out, a replica gets no request until ``replica_retry`` has passed; then one probe; a
    failed probe takes it out again (an info line, not a warning) for twice as long, up to 10
    minutes. The wait is read from the clock, so the test moves the time it was taken out back."""
    from harness.served.endpoint import MAX_REPLICA_RETRY_S

    a = TestServer(reply=answer).start()
    dead = f"http://127.0.0.1:{free_port()}/v1"
    try:
        with caplog.at_level(logging.INFO, logger="harness.llm"):
            _, c = client(replicas_spec([a.openai_base_url, dead]), tmp_path, LLMSettings(replica_retry=5))
            c.map(prompts(10))
            the_set = c.provider
            replica = the_set.replicas[1]
            assert replica.endpoint.out_reason and replica.wait_s == 5 and replica.endpoint.sent == 1
            c.map([f"q{i}" for i in range(10)])
            assert replica.endpoint.sent == 1  # still out: nothing sent to it
            waits = []
            for _ in range(9):
                replica.out_at -= replica.wait_s  # as if its wait were over
                c.chat(f"probe {len(waits)}")
                waits.append(replica.wait_s)
            assert replica.endpoint.sent == 10  # one probe each time
    finally:
        a.stop()
    assert waits == [10, 20, 40, 80, 160, 320, MAX_REPLICA_RETRY_S, MAX_REPLICA_RETRY_S, MAX_REPLICA_RETRY_S]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "its first call failed" in warnings[0]
    again = [r.getMessage() for r in caplog.records if "taken out again: its probe call failed" in r.getMessage()]
    assert len(again) == 9
