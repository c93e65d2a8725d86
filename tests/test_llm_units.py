"""Unit tests of the LLM layer's pure parts: specs, options, replies, retry-after, pricing, usage,
the worker pool and dry-run estimates. No network, no SDK."""

from __future__ import annotations

import email.utils
import json
import subprocess
import sys
import threading
import time

import pytest

from harness.concepts.errors import HarnessError
from harness.llm.providers.base import is_loopback
from harness.llm.spec import parse_llm_spec
from harness.served.dryrun import DryRun, estimate_input_tokens, placeholder
from harness.served.pool import bounded_map
from harness.served.pricing import BUILTIN_PRICES, PriceTable
from harness.served.reply_cache import diff_payloads, key_of, llm_cache_dir
from harness.served.request_errors import BadRequest, ConnectionFailed, LLMTimeout, RateLimited
from harness.served.retry import RetryPolicy, parse_retry_after
from harness.served.types import (
    ChatOptions,
    ChatRequest,
    Reply,
    TokenCounts,
    TokenLogprob,
    normalize_messages,
    user,
)
from harness.served.usage import Usage


# -- specs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, provider, model, base_url",
    [
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", None),
        ("anthropic:claude-3-5-haiku-latest", "anthropic", "claude-3-5-haiku-latest", None),
        ("openai:Qwen/Qwen2.5-7B:base_url=http://127.0.0.1:8000/v1", "openai", "Qwen/Qwen2.5-7B",
         "http://127.0.0.1:8000/v1"),
        ("ollama:llama3:8b", "openai-compatible", "llama3:8b", "http://127.0.0.1:11434/v1"),
        ("vllm:meta/llama:base_url=http://gpu:9000/v1", "openai-compatible", "meta/llama", "http://gpu:9000/v1"),
        ("openai:ft:gpt-4o-mini:org::abc", "openai", "ft:gpt-4o-mini:org::abc", None),
        ("gpt-4o-mini", "openai", "gpt-4o-mini", None),
        ("claude-3-5-haiku-latest", "anthropic", "claude-3-5-haiku-latest", None),
    ],
)
def test_spec_parsing(text, provider, model, base_url):
    spec = parse_llm_spec(text)
    assert (spec.provider, spec.model, spec.base_url) == (provider, model, base_url)
    assert str(spec) == text


def test_spec_splits_options_client_and_provider_args():
    spec = parse_llm_spec(
        'openai:gpt-4o:temperature=0.7,max_tokens=64,stop=["\\n"],max_concurrency=3,timeout=5'
    )
    assert spec.options == {"temperature": 0.7, "max_tokens": 64, "stop": ["\n"]}
    assert spec.client_args == {"max_concurrency": 3}
    assert spec.provider_args == {"timeout": 5}


@pytest.mark.parametrize("text", ["", "mystery-model", "openai:", "openai:gpt:temperature=9"])
def test_spec_errors(text):
    with pytest.raises((HarnessError, ValueError)):
        parse_llm_spec(text)


def test_spec_refuses_api_key_without_echoing_it():
    with pytest.raises(HarnessError) as info:
        parse_llm_spec("openai:gpt-4o:api_key=sk-SECRET123")
    assert "SECRET123" not in str(info.value) and "api_key_env" in str(info.value)


# -- options, messages, replies ---------------------------------------------------------------------
def test_options_validation_and_merge():
    o = ChatOptions()
    assert o.temperature == 0.0 and o.logprobs is False
    assert ChatOptions(top_logprobs=5).logprobs is True
    assert ChatOptions(stop="\n").stop == ("\n",)
    with pytest.raises(TypeError, match="unknown chat option"):
        o.merged(temprature=1)
    for bad in ({"temperature": 3}, {"top_p": 0}, {"max_tokens": 0}, {"top_logprobs": 21}, {"logprobs": "x"}):
        with pytest.raises(ValueError):
            ChatOptions(**bad)
    assert ChatOptions(logprobs="optional").key_dict()["logprobs"] is True


def test_key_payload_is_canonical_and_diffable():
    a = {"v": 1, "model": "m", "options": ChatOptions().key_dict(), "messages": [user("x")]}
    b = {"messages": [user("x")], "options": ChatOptions().key_dict(), "model": "m", "v": 1}
    assert key_of(a) == key_of(b)
    c = {**a, "options": ChatOptions(temperature=0.5).key_dict(), "messages": [user("y")]}
    fields = {d["field"] for d in diff_payloads(a, c)}
    assert fields == {"options.temperature", "messages[0]"}


def test_normalize_messages():
    assert normalize_messages("hi") == [{"role": "user", "content": "hi"}]
    assert normalize_messages([("system", "s"), {"role": "user", "content": "u"}])[0]["role"] == "system"
    with pytest.raises(ValueError):
        normalize_messages([{"role": "robot", "content": "x"}])
    with pytest.raises(ValueError):
        normalize_messages([("system", "only")])
    with pytest.raises(TypeError):
        normalize_messages([{"role": "user", "content": 3}])


def test_reply_roundtrip_and_cacheability():
    tok = TokenLogprob.from_dict({"token": "3", "logprob": -0.1, "top": [["3", -0.1], ["2", -2]]})
    r = Reply("3", "stop", [tok], TokenCounts(10, 1), "m", "openai")
    back = Reply.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.logprobs == r.logprobs and back.usage == r.usage and back.text == "3"
    assert r.cacheable
    assert not Reply("  ").cacheable
    assert not Reply("no", "content_filter").cacheable
    assert not Reply("x", dry_run=True).cacheable


def test_chat_request_coerce():
    assert ChatRequest.coerce({"messages": "hi", "max_tokens": 3}).options == {"max_tokens": 3}
    assert ChatRequest.coerce("hi").messages == "hi"
    with pytest.raises(TypeError):
        ChatRequest.coerce({"prompt": "hi"})


# -- retry -----------------------------------------------------------------------------------------
def test_parse_retry_after():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_700_000_000.0  # an HTTP date is read against the clock passed in, not the machine's
    when = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": when}, now=now) == 30.0
    assert parse_retry_after({"retry-after": email.utils.formatdate(now - 5, usegmt=True)}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retry_policy_retries_only_retryable():
    calls = []

    def flaky(time_left):
        calls.append(1)
        if len(calls) < 3:
            raise RateLimited("slow", retry_after=0.0)
        return "ok"

    seen = []
    assert RetryPolicy.fast().call(flaky, lambda e, n: seen.append(n)) == "ok"
    assert seen == [1, 2]

    calls.clear()

    def bad(time_left):
        calls.append(1)
        raise BadRequest("no")

    with pytest.raises(BadRequest):
        RetryPolicy.fast().call(bad)
    assert len(calls) == 1


def test_retry_after_is_capped():
    policy = RetryPolicy(max_attempts=2, initial_wait=0.001, retry_after_cap=0.05)
    n, waits = [], []

    def f(time_left):
        n.append(1)
        if len(n) == 1:
            raise RateLimited("x", retry_after=1000)
        return 1

    assert policy.call(f, sleep=waits.append) == 1
    assert waits == [0.05]


class FakeClock:
    """A clock that advances only when slept on (or by an attempt's own duration)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_budget_bounds_a_call_across_attempts():
    """A hung endpoint: every attempt times out after 30 s; the 100 s budget stops the call after the
    attempts that fit, and each attempt is told how much of the budget is left."""
    clock = FakeClock()
    given = []

    def hang(time_left):
        given.append(time_left)
        clock.now += min(30.0, time_left)
        raise LLMTimeout("no reply within 30 s")

    policy = RetryPolicy(max_attempts=6, initial_wait=1.0, jitter=0.0, budget=100.0)
    with pytest.raises(LLMTimeout, match="gave up after 4 attempt") as info:
        policy.call(hang, sleep=clock.sleep, clock=clock)
    assert clock.now == pytest.approx(100.0)  # 30 + 1 + 30 + 2 + 30 + 4 + the last 3 s
    assert given[0] == 100.0 and all(b < a for a, b in zip(given, given[1:]))
    assert "time budget is 100 s" in str(info.value)


def test_connection_refused_is_retried_briefly():
    clock = FakeClock()
    n = []

    def refused(time_left):
        n.append(1)
        raise ConnectionFailed("connection refused")

    waits = []

    def sleep(s):
        waits.append(s)
        clock.sleep(s)

    with pytest.raises(ConnectionFailed):
        RetryPolicy().call(refused, sleep=sleep, clock=clock)
    assert len(n) == 3 and waits == [0.5, 1.0]  # not the 429 backoff (1, 2, 4, 8, 16 s + jitter)


# -- pricing and usage -----------------------------------------------------------------------------
def test_price_lookup_prefix_and_override(tmp_path):
    t = PriceTable()
    assert t.lookup("openai", "gpt-4o-mini-2024-07-18").key == "openai:gpt-4o-mini"
    assert t.lookup("openai", "gpt-4o-2024-08-06").key == "openai:gpt-4o"
    assert t.lookup("anthropic", "claude-3-5-haiku-latest").key == "anthropic:claude-3-5-haiku"
    assert t.lookup("anthropic", "claude-sonnet-4-20250514").key == "anthropic:claude-sonnet-4"
    assert t.lookup("openai-compatible", "gpt-4o-mini") is None  # a local server is not OpenAI
    assert t.cost("openai", "gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)

    f = tmp_path / "p.toml"
    f.write_text('date = "2030-01-01"\n[models]\n"openai-compatible:llama3" = { input = 0, output = 0 }\n'
                 '"openai:gpt-4o-mini" = { input = 1, output = 2 }\n')
    t2 = PriceTable.load(f)
    assert t2.date == "2030-01-01"
    assert t2.cost("openai", "gpt-4o-mini", 1_000_000, 0) == 1.0
    assert t2.cost("openai-compatible", "llama3:8b", 5, 5) == 0.0
    j = tmp_path / "p.json"
    j.write_text(json.dumps({"my-model": [0.5, 1.5]}))
    assert PriceTable.load(j).cost("openai-compatible", "my-model", 2_000_000, 0) == 1.0
    bad = tmp_path / "bad.json"
    bad.write_text('{"m": {"input": -1, "output": 1}}')
    with pytest.raises(HarnessError, match="bad.json"):
        PriceTable.load(bad)
    # generation: output costs at least input; embeddings: input only (an embedding has no output tokens)
    assert all(i >= 0 and (o >= i or ("embedding" in k and o == 0)) for k, (i, o) in BUILTIN_PRICES.items())
    assert {k for k, (i, o) in BUILTIN_PRICES.items() if o == 0 and i > 0} == {
        "openai:text-embedding-3-small", "openai:text-embedding-3-large", "openai:text-embedding-ada-002"}


def test_usage_counts_and_table():
    u = Usage()
    u.record_call("openai:gpt-4o-mini", Reply("a", usage=TokenCounts(1000, 100)))
    u.record_hit("openai:gpt-4o-mini", Reply("a", usage=TokenCounts(1000, 100)))
    u.record_retry("openai:gpt-4o-mini", RateLimited("x"))
    u.record_failure("vllm:x", BadRequest("y"))
    d = u.as_dict()
    m = d["models"]["openai:gpt-4o-mini"]
    assert (m["calls"], m["cache_hits"], m["retries"], m["input_tokens"]) == (1, 1, 1, 1000)
    assert m["cost_usd"] == pytest.approx((1000 * 0.15 + 100 * 0.6) / 1e6)
    assert d["total"]["failures"] == 1 and d["models"]["vllm:x"]["errors"] == {"BadRequest": 1}
    assert "openai:gpt-4o-mini" in u.table() and json.dumps(d)


# -- pool ------------------------------------------------------------------------------------------
def test_bounded_map_order_bound_and_laziness():
    active, peak, lock = [0], [0], threading.Lock()
    produced = []

    def gen():
        for i in range(200):
            produced.append(i)
            yield i

    def f(x):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.001)
        with lock:
            active[0] -= 1
        return x * 2

    before = threading.active_count()
    out = bounded_map(f, gen(), 5)
    assert out == [i * 2 for i in range(200)]
    assert peak[0] <= 5 and len(produced) == 200
    assert threading.active_count() <= before + 1


def test_bounded_map_stops_on_error():
    """Items 0-2 are held until item 3 has failed and its worker has stopped the pool: the three
    workers finish the item in hand and take no other, so exactly four items ever start."""
    seen, failing, failed = [], [], threading.Event()

    def f(x):
        seen.append(x)
        if x == 3:
            failing.append(threading.current_thread())
            failed.set()
            raise KeyError("boom")
        failed.wait()
        failing[0].join()  # the failing worker exits right after it stops the pool
        return x

    with pytest.raises(KeyError):
        bounded_map(f, range(10_000), 4)
    assert sorted(seen) == [0, 1, 2, 3]


# -- dry run, misc ---------------------------------------------------------------------------------
def test_dry_run_estimates():
    msgs = [user("x" * 400)]
    assert 100 <= estimate_input_tokens(msgs) <= 120
    r = placeholder(msgs, ChatOptions(max_tokens=5, logprobs=True), "openai", "m", DryRun())
    assert r.dry_run and r.text == "" and r.logprobs == [] and r.usage.output_tokens == 5


def test_loopback_and_cache_dir(monkeypatch, tmp_path):
    assert is_loopback("http://127.0.0.1:9/v1") and is_loopback("http://localhost/v1")
    assert not is_loopback("https://api.openai.com/v1")
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "h"))
    assert llm_cache_dir() == tmp_path / "h" / "llm"
    monkeypatch.delenv("HARNESS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert llm_cache_dir() == tmp_path / "x" / "harness" / "llm"
    assert llm_cache_dir(tmp_path / "opt") == tmp_path / "opt" / "llm"


def test_import_is_light():
    heavy = ("openai", "anthropic", "httpx", "httpx2", "tenacity", "diskcache")
    code = ("import sys, harness.llm, harness.cli.options, harness.cli.cache, harness.plugins.builtin.llm_providers; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
