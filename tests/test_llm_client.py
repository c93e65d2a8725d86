"""The LLM client end to end: real openai/anthropic SDKs -> real HTTP -> the loopback test server.
Nothing is patched; retry waits are shortened with ``RetryPolicy.fast()``."""

from __future__ import annotations

import threading

import pytest

from harness.concepts.errors import HarnessError, UnknownComponentError
from harness.llm import (
    AuthError,
    BadRequest,
    ConnectionFailed,
    LLMSession,
    LLMSettings,
    LLMTimeout,
    LogprobsUnsupported,
    MalformedReply,
    MissingKey,
    RetryPolicy,
    ServerError,
    get_client,
    system,
    user,
)
from harness.testing import ScriptedReply, TestServer


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                "HARNESS_PRICES", "HARNESS_LLM"):
        monkeypatch.delenv(var, raising=False)
    yield


def make(srv, tmp_path, provider="openai-compatible", model="test-model", session=None, settings=None, **kw):
    """A client (in ``session``, or a session of its own with ``settings``)."""
    kw.setdefault("retry", RetryPolicy.fast())
    session = session or LLMSession(settings)
    return session.client(srv.spec(model, provider), cache_dir=tmp_path, shared=False, **kw)


# -- the basic call, per provider --------------------------------------------------------------------
def test_openai_compatible_options_reach_the_server(tmp_path):
    with TestServer() as srv:
        c = make(srv, tmp_path)
        r = c.chat([system("be brief"), user("hello world")], temperature=0.3, top_p=0.7, max_tokens=20,
                   stop=["STOP"], seed=7)
        assert r.text == "hello world" and r.finish_reason == "stop" and not r.cached
        body = srv.requests[-1]
        assert body["messages"][0] == {"role": "system", "content": "be brief"}
        assert (body["temperature"], body["top_p"], body["max_tokens"], body["stop"], body["seed"]) == (
            0.3, 0.7, 20, ["STOP"], 7)
        assert "logprobs" not in body
        assert r.usage.output_tokens == 2 and r.model == "test-model"


def test_openai_logprobs_with_top_alternatives(tmp_path):
    script = ("3", [("3", -0.2, [("3", -0.2), ("2", -1.9), ("1", -3.0)])])
    with TestServer(reply=lambda req: script) as srv:
        c = make(srv, tmp_path, provider="openai")
        r = c.chat("score it", logprobs=True, top_logprobs=3, top_p=0.7)
        body = srv.requests[-1]
        assert body["logprobs"] is True and body["top_logprobs"] == 3
        assert r.text == "3"
        tok = r.logprobs[0]
        assert tok.token == "3" and [t.token for t in tok.top] == ["3", "2", "1"]
        assert tok.top[1].logprob == pytest.approx(-1.9)
        again = c.chat("score it", logprobs=True, top_logprobs=3, top_p=0.7)
        assert again.cached and again.logprobs == r.logprobs and srv.requests_total == 1


def test_anthropic_system_param_and_logprobs_policy(tmp_path):
    with TestServer() as srv:
        c = make(srv, tmp_path, provider="anthropic", model="claude-test")
        r = c.chat([system("You are terse."), user("hi"), ("assistant", "yes?"), user("again")],
                   stop=["\n\n"], temperature=0.0)
        body = srv.requests[-1]
        assert body["system"] == "You are terse."
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert body["max_tokens"] == 1024 and body["stop_sequences"] == ["\n\n"]
        assert body["temperature"] == 0.0
        assert r.text == "again" and r.provider == "anthropic"
        with pytest.raises(LogprobsUnsupported, match="logprobs='optional'"):
            c.chat("x", logprobs=True, top_logprobs=10)
        assert srv.requests_total == 1  # refused before sending
        r2 = c.chat("y", logprobs="optional", top_logprobs=10)
        assert r2.logprobs is None and r2.fallback == "no-logprobs" and r2.text == "y"
        r3 = c.chat("y", logprobs="optional")
        assert r3.cached and r3.fallback == "no-logprobs"


def test_openai_logprobs_missing_from_server(tmp_path):
    with TestServer(reply=lambda req: ScriptedReply("fine", no_logprobs=True)) as srv:
        c = make(srv, tmp_path)
        r = c.chat("hello", logprobs="optional", top_logprobs=5)
        assert r.logprobs is None and r.fallback == "no-logprobs" and r.text == "fine"
        # cached with the fallback recorded: a rerun costs nothing and gives the same figure
        assert len(c.cache) == 1
        again = c.chat("hello", logprobs="optional", top_logprobs=5)
        assert again.cached and again.fallback == "no-logprobs" and srv.requests_total == 1
        # a request that requires logprobs is not served from that entry, and a reply without them fails
        with pytest.raises(MalformedReply, match="logprobs were required"):
            c.chat("hello", logprobs=True, top_logprobs=5)
        assert srv.requests_total == 2 and len(c.cache) == 1
        assert c.chat("hello").text == "fine" and len(c.cache) == 2


# -- retries and faults ----------------------------------------------------------------------------
def test_thirty_percent_faults_500_calls_all_right(tmp_path):
    with TestServer(reply=lambda req: "answer:" + req["messages"][-1]["content"], rate_429=0.15,
                    rate_500=0.15, seed=1) as srv:
        c = make(srv, tmp_path, retry=RetryPolicy.fast(max_attempts=12), max_concurrency=16)
        prompts = [f"question {i}" for i in range(500)]
        out = c.map([[user(p)] for p in prompts])
        assert [r.text for r in out] == [f"answer:{p}" for p in prompts]
        u = c.usage.get(c.label)
        injected = sum(srv.faults.values())
        assert 100 < injected < 320  # ~30% of ~714 requests
        assert u.calls == 500 and u.failures == 0
        assert u.retries == injected == srv.requests_total - 500
        assert u.errors["retried:RateLimited"] == srv.faults["429"]
        assert u.errors["retried:ServerError"] == srv.faults["500"]


def test_bad_request_fails_fast_with_its_message(tmp_path):
    def script(req):
        if req["messages"][-1]["content"] == "bad":
            return ScriptedReply(status=400, error="context length exceeded: 9999 tokens")
        return "fine"

    with TestServer(reply=script) as srv:
        c = make(srv, tmp_path, retry=RetryPolicy(max_attempts=6, initial_wait=5.0))
        with pytest.raises(BadRequest) as info:
            c.chat("bad")
        assert c.usage.get(c.label).retries == 0
        assert "context length exceeded: 9999 tokens" in str(info.value) and info.value.status == 400
        assert srv.requests_total == 1
        out = c.map(["ok1", "bad", "ok2"])
        assert out[0].text == "fine" and isinstance(out[1], BadRequest) and out[2].text == "fine"
        assert c.usage.get(c.label).failures == 2 and c.usage.get(c.label).retries == 0


def test_auth_error_not_retried(tmp_path):
    with TestServer(reply=ScriptedReply(status=401, error="invalid key")) as srv:
        srv.reply = lambda req: ScriptedReply(status=401, error="invalid key")
        c = make(srv, tmp_path, provider="anthropic", model="claude-test")
        with pytest.raises(AuthError, match="invalid key"):
            c.chat("x")
        assert srv.requests_total == 1


def test_exhausted_attempts_raise_server_error(tmp_path):
    with TestServer(rate_500=1.0) as srv:
        c = make(srv, tmp_path, retry=RetryPolicy.fast(max_attempts=4))
        with pytest.raises(ServerError) as info:
            c.chat("x")
        assert info.value.status == 500 and srv.requests_total == 4
        u = c.usage.get(c.label)
        assert (u.retries, u.failures, u.calls) == (3, 1, 0)


class RecordedWaits(RetryPolicy):
    """A policy whose waits are recorded in ``slept`` instead of slept (the mechanism, not the clock)."""

    def call(self, fn, on_retry=None, **kw):
        return super().call(fn, on_retry, sleep=self.slept.append)


@pytest.mark.parametrize("cap, expected", [(0.4, 0.4), (5.0, 1.0)])
def test_retry_after_is_honoured(tmp_path, cap, expected):
    with TestServer(fail_first=1, fail_status=429, retry_after="1") as srv:
        policy = RecordedWaits(max_attempts=3, initial_wait=0.001, jitter=0, retry_after_cap=cap)
        object.__setattr__(policy, "slept", [])
        c = make(srv, tmp_path, retry=policy)
        assert c.chat("x").text == "x"
        assert policy.slept == [expected]  # the server's Retry-After: 1, capped at retry_after_cap
        assert srv.requests_total == 2 and srv.faults == {"429": 1}


def test_hang_times_out_and_is_retried(tmp_path):
    seen = set()

    def script(req):
        text = req["messages"][-1]["content"]
        if text not in seen:
            seen.add(text)
            return ScriptedReply(hang=True)
        return "late but fine"

    with TestServer(reply=script, hang_s=3) as srv:
        c = make(srv, tmp_path, settings=LLMSettings(timeout=0.3))
        r = c.chat("x")
        assert r.text == "late but fine" and r.retries == 1
        assert c.usage.get(c.label).errors["retried:LLMTimeout"] == 1
    with TestServer(rate_hang=1.0, hang_s=2) as srv:
        c = make(srv, tmp_path, settings=LLMSettings(timeout=0.2), retry=RetryPolicy.fast(max_attempts=2))
        with pytest.raises(LLMTimeout):
            c.chat("y")


def test_connection_refused(tmp_path):
    srv = TestServer().start()
    spec = srv.spec()
    srv.stop()
    c = get_client(spec, cache_dir=tmp_path, retry=RetryPolicy.fast(max_attempts=2), shared=False)
    with pytest.raises(ConnectionFailed):
        c.chat("x")
    assert c.usage.get(c.label).retries == 1


def test_malformed_reply_is_a_failure_and_the_batch_goes_on(tmp_path):
    def script(req):
        return ScriptedReply(malformed=True) if req["messages"][-1]["content"] == "p3" else "ok"

    with TestServer(reply=script) as srv:
        c = make(srv, tmp_path, max_concurrency=4)
        out = c.map([f"p{i}" for i in range(8)])
        assert isinstance(out[3], MalformedReply)
        assert all(r.text == "ok" for i, r in enumerate(out) if i != 3)
        assert srv.requests_total == 8  # not retried
        assert c.usage.get(c.label).failures == 1
    with TestServer(rate_malformed=1.0) as srv:
        c = make(srv, tmp_path, provider="anthropic", model="claude-x")
        with pytest.raises(MalformedReply):
            c.chat("z")


# -- cache -----------------------------------------------------------------------------------------
def test_cache_hits_keys_and_explain(tmp_path):
    with TestServer() as srv:
        c = make(srv, tmp_path)
        c.chat("same")
        assert c.chat("same").cached and srv.requests_total == 1
        c.chat("same", temperature=0.5)
        c.chat("same", temperature=0.5, sample=1)
        assert srv.requests_total == 3
        c2 = make(srv, tmp_path, model="other-model")
        assert not c2.chat("same").cached
        expl = c.explain_miss("same", temperature=0.7)
        assert not expl["hit"] and [d["field"] for d in expl["differences"]] == ["options.temperature"]
        assert c.explain_miss("same")["hit"]
        info = c.cache.info()
        assert info["entries"] == 4 and info["by_model"]["openai-compatible:test-model"] == 3
        assert c.cache.clear("openai-compatible:other-model") == 1 and len(c.cache) == 3


def test_errors_empty_and_refusals_are_not_cached(tmp_path):
    replies = {"empty": "", "refused": ScriptedReply("no", finish_reason="content_filter"),
               "refusal": ScriptedReply("I can't", finish_reason="refusal")}

    def script(req):
        return replies.get(req["messages"][-1]["content"], "fine")

    with TestServer(reply=script) as srv:
        c = make(srv, tmp_path)
        for p in ("empty", "refused", "refusal"):
            assert not c.chat(p).cached
            assert not c.chat(p).cached
        assert c.chat("refusal").finish_reason == "refusal"
        assert c.chat("refused").refused
        assert srv.requests_total == 8
        srv.reply = ScriptedReply(status=400, error="nope")
        srv.reply = lambda req: ScriptedReply(status=400, error="nope")
        with pytest.raises(BadRequest):
            c.chat("err")
        srv.reply = None
        assert c.chat("err").text == "err"
        assert len(c.cache) == 1


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "root"))
    with TestServer() as srv:
        c = get_client(srv.spec(), shared=False)
        c.chat("x")
        assert c.cache.path == (tmp_path / "root" / "llm").resolve() and len(c.cache) == 1
        off = get_client(srv.spec(), use_cache=False, shared=False)
        off.chat("x")
        assert off.cache is None and srv.requests_total == 2


# -- concurrency -----------------------------------------------------------------------------------
def test_concurrency_is_bounded(tmp_path):
    with TestServer(latency=0.03) as srv:
        c = make(srv, tmp_path, max_concurrency=4)
        workers = set()

        def note(i, reply):
            workers.add(threading.current_thread().name)

        c.map([f"m{i}" for i in range(40)], on_result=note)
        assert srv.max_in_flight == 4, srv.stats()
        assert len(workers) == 4, workers  # a fixed pool, not a thread per request
        srv.reset_counters()
        workers.clear()
        c.map([f"n{i}" for i in range(30)], max_concurrency=12, on_result=note)
        assert srv.max_in_flight == 4  # the client's bound holds whatever the pool size
        assert len(workers) == 12


def test_run_sequences_sequential_within_parallel_across(tmp_path):
    with TestServer(reply=lambda req: req["messages"][-1]["content"] + "+", latency=0.05) as srv:
        c = make(srv, tmp_path, max_concurrency=8)

        def window(item, chat):
            text = item
            for _ in range(3):  # call N depends on reply N-1
                text = chat([user(text)]).text
            return text

        out = c.run_sequences(window, [f"q{i}" for i in range(16)])
        assert out == [f"q{i}+++" for i in range(16)]
        assert srv.requests_total == 48
        # parallel across sequences (up to the bound), never more than one call per sequence at a time
        assert 2 <= srv.max_in_flight <= 8, srv.stats()

        def failing(item, chat):
            if item == "boom":
                raise BadRequest("bad item")
            return chat(item).text

        out = c.run_sequences(failing, ["a", "boom", "b"])
        assert out[0] == "a+" and isinstance(out[1], BadRequest) and out[2] == "b+"


# -- dry run ---------------------------------------------------------------------------------------
def test_dry_run_sends_nothing_and_estimates(tmp_path):
    with TestServer() as srv:
        warm = make(srv, tmp_path, provider="openai", model="gpt-4o-mini")
        warm.chat("cached one")
        srv.reset_counters()
        dry = get_client(srv.spec("gpt-4o-mini", "openai"), cache_dir=tmp_path, dry_run=True, shared=False)
        hit = dry.chat("cached one")
        assert hit.cached and not hit.dry_run and hit.text == "cached one"
        r = dry.chat([system("s"), user("x" * 4000)], max_tokens=50, logprobs=True)
        assert r.dry_run and r.text == "" and r.logprobs == [] and r.finish_reason == "dry_run"
        dry.chat([system("s"), user("x" * 4000)], max_tokens=50, logprobs=True)  # duplicate: would hit
        assert srv.requests_total == 0
        d = dry.usage.as_dict()
        m = d["models"]["openai:gpt-4o-mini"]
        assert d["dry_run"] and m["calls"] == 1 and m["cache_hits"] == 2
        assert 1000 <= m["input_tokens"] <= 1100 and m["output_tokens"] == 50
        assert m["cost_usd"] == pytest.approx((m["input_tokens"] * 0.15 + 50 * 0.6) / 1e6, rel=1e-3)


def test_dry_run_needs_no_key():
    c = get_client("openai:gpt-4o-mini", dry_run=True, shared=False)
    assert c.chat("hello").dry_run


# -- keys, providers, plugins ----------------------------------------------------------------------
def test_missing_key_is_raised_at_creation_naming_the_variable():
    with pytest.raises(MissingKey, match="OPENAI_API_KEY"):
        get_client("openai:gpt-4o-mini")
    with pytest.raises(MissingKey, match="ANTHROPIC_API_KEY"):
        get_client("anthropic:claude-3-5-haiku-latest")
    with pytest.raises(MissingKey, match="MY_VLLM_KEY"):
        get_client("vllm:m:base_url=http://10.0.0.1:8000/v1,api_key_env=MY_VLLM_KEY")
    # a loopback server, or an OpenAI-compatible server without api_key_env, needs none
    get_client("openai:m:base_url=http://127.0.0.1:9/v1")
    get_client("vllm:m:base_url=http://10.0.0.1:8000/v1")


def test_unknown_provider_lists_known_ones():
    with pytest.raises(UnknownComponentError) as info:
        get_client("openia:gpt-4o")
    assert "openai" in str(info.value)
    with pytest.raises(UnknownComponentError) as info:
        get_client("zzz:m")
    for name in ("anthropic", "openai-compatible", "vllm", "ollama"):
        assert name in str(info.value)
    with pytest.raises(HarnessError, match="needs base_url"):
        get_client("openai-compatible:m")


def test_plugin_provider_through_the_hook(tmp_path):
    from harness.plugins.hookspecs import hookimpl
    from harness.plugins.host import PluginHost
    from harness.served.types import Reply, TokenCounts

    class Upper:
        name, base_url, supports_logprobs = "upper", None, False

        def __init__(self, model, require_key=True, timeout=None, shout=1):
            self.model, self.shout = model, shout

        def normalize_options(self, options):
            return options

        def chat(self, messages, options):
            return Reply(messages[-1]["content"].upper() + "!" * self.shout, usage=TokenCounts(1, 1),
                         model=self.model, provider=self.name)

    class Plugin:
        @hookimpl
        def register_llm_providers(self, register):
            register("upper", Upper, "test provider")

    host = PluginHost(load_entry_points=False)
    host.register_plugin(Plugin(), "upper-plugin")
    c = LLMSession(registry=host.registry).client("upper:m:shout=2", cache_dir=tmp_path)
    assert c.chat("hi").text == "HI!!" and c.chat("hi").cached
    assert c.usage.get("upper:m").calls == 1


def test_shared_clients_and_session_usage(tmp_path):
    with TestServer() as srv:
        session = LLMSession(LLMSettings(cache_dir=str(tmp_path), max_concurrency=3, retry=RetryPolicy.fast()))
        a = session.client(srv.spec())
        assert session.client(srv.spec()) is a and a.max_concurrency == 3
        b = session.client(srv.spec("m2"))
        a.chat("1")
        b.chat("2")
        b.chat("2")
        d = session.usage().as_dict()
        assert d["models"]["openai-compatible:test-model"]["calls"] == 1
        assert d["models"]["openai-compatible:m2"]["cache_hits"] == 1
        other = LLMSession(LLMSettings(llm=srv.spec("m3")))
        assert other.client().label == "openai-compatible:m3"
        assert other.usage().as_dict()["total"]["calls"] == 0  # two sessions never share counters


def test_clients_of_one_endpoint_share_the_bound(tmp_path):
    with TestServer(latency=0.03) as srv:
        session = LLMSession()
        a = make(srv, tmp_path, session=session, max_concurrency=3)
        b = make(srv, tmp_path, session=session, max_concurrency=3, temperature=0.5)  # other defaults, same endpoint
        assert a is not b
        threads = [threading.Thread(target=c.map, args=([f"{i}-{k}" for k in range(15)],))
                   for i, c in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.requests_total == 30 and srv.max_in_flight == 3


def test_progress_bar_for_long_work(tmp_path, monkeypatch, capsys):
    """A terminal gets a progress bar over a batch (forced here with HARNESS_PROGRESS=1); =0 silences it."""
    with TestServer() as srv:
        c = make(srv, tmp_path)
        monkeypatch.setenv("HARNESS_PROGRESS", "1")
        c.map([f"p{i}" for i in range(5)])
        err = capsys.readouterr().err
        assert c.label in err and "/5 [" in err
        monkeypatch.setenv("HARNESS_PROGRESS", "0")
        c.map([f"s{i}" for i in range(5)])
        assert capsys.readouterr().err == ""
