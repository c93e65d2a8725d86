"""Reasoning models (docs/llm.md, "Reasoning models"): the settings in the LLM spec and their precedence, what
each provider sends (OpenAI ``reasoning_effort``, Anthropic ``thinking`` with ``max_tokens`` above the budget,
the temperature rules), the reasoning kept apart from the answer (``reasoning_content``, ``reasoning``,
``<think>``, Anthropic ``thinking`` blocks), reasoning tokens counted and priced as output, the cache key,
the batch bodies, and the local provider's thinking switch. Every request goes to the loopback server."""

from __future__ import annotations

import pytest

from harness.concepts.errors import HarnessError
from harness.llm import LLMSession, LLMSettings, get_client
from harness.llm.providers.reasoning import split_think
from harness.llm.spec import parse_llm_spec
from harness.served.types import MIN_THINKING_BUDGET, REASONING_EFFORTS, ChatOptions
from harness.testing import ScriptedReply, TestServer
from harness.testing.llm_server import input_tokens, tokenize

pytest.importorskip("openai", reason="needs openai: pip install 'harness-ir[openai]'")

DECOY = "[3] > [2] > [1] is what I first thought"


def thinking(req: dict) -> ScriptedReply:
    """The answer, and a reasoning naming the effort or budget the request asked for."""
    asked = req.get("reasoning_effort") or (req.get("thinking") or {}).get("budget_tokens")
    return ScriptedReply("[1] > [2] > [3]", reasoning=f"asked {asked}: {DECOY}")


# -- the options ------------------------------------------------------------------------------------
def test_the_options_are_checked_when_made():
    assert ChatOptions(reasoning_effort="high").reasoning_effort == "high"
    assert ChatOptions(thinking_budget=0).thinking_budget is None  # 0: thinking off
    for bad in ({"reasoning_effort": "extreme"}, {"thinking_budget": MIN_THINKING_BUDGET - 1},
                {"thinking_budget": True}, {"thinking_budget": 2048.5}):
        with pytest.raises(ValueError):
            ChatOptions(**bad)
    assert set(REASONING_EFFORTS) >= {"minimal", "low", "medium", "high"}


def test_keys_made_before_the_settings_existed_stay_the_same():
    """Unset, neither setting enters the key: the key's options are those of the harness before them."""
    before = {"temperature", "top_p", "max_tokens", "stop", "seed", "logprobs", "top_logprobs", "sample", "extra"}
    assert set(ChatOptions().key_dict()) == before
    assert ChatOptions(reasoning_effort="low").key_dict()["reasoning_effort"] == "low"
    assert ChatOptions(thinking_budget=2048).key_dict()["thinking_budget"] == 2048


def test_a_bad_setting_in_the_spec_is_one_message():
    with pytest.raises(HarnessError, match="reasoning_effort must be one of"):
        parse_llm_spec("openai:o4-mini:reasoning_effort=huge")
    with pytest.raises(HarnessError, match="thinking_budget must be"):
        parse_llm_spec("anthropic:claude-sonnet-4-5:thinking_budget=100")


# -- OpenAI and OpenAI-compatible -------------------------------------------------------------------------
def test_openai_sends_the_effort_and_keeps_the_reasoning_apart(tmp_path):
    with TestServer(thinking) as srv:
        client = get_client(srv.spec("m", "openai") + ",reasoning_effort=high", cache_dir=tmp_path)
        reply = client.chat("rank [1] [2] [3]")
        body = srv.requests[-1]
    assert body["reasoning_effort"] == "high"
    assert reply.text == "[1] > [2] > [3]" and reply.reasoning == f"asked high: {DECOY}"
    n_reason = len(tokenize(reply.reasoning))  # the server counts its tokens this way
    assert reply.usage.reasoning_tokens == n_reason
    assert reply.usage.output_tokens == len(tokenize("[1] > [2] > [3]")) + n_reason  # reasoning is output
    assert client.settings["reasoning_effort"].as_dict() == {"value": "high", "from": "llm spec"}
    assert client.describe()["settings"]["reasoning_effort"] == {"value": "high", "from": "llm spec"}


@pytest.mark.parametrize("script, want_text, want_reasoning", [
    (ScriptedReply("A", reasoning="R", reasoning_field="reasoning"), "A", "R"),
    (ScriptedReply("A", reasoning="R [2] > [1]", think_in_content=True), "A", "R [2] > [1]"),
    (ScriptedReply("<think>cut while thinking [2] > [1]"), "", "cut while thinking [2] > [1]"),
    (ScriptedReply("no reasoning here"), "no reasoning here", None),
])
def test_every_shape_of_reasoning_is_kept_out_of_the_answer(tmp_path, script, want_text, want_reasoning):
    with TestServer(script) as srv:
        reply = get_client(srv.spec("m"), cache_dir=None, use_cache=False).chat("q")
    assert (reply.text, reply.reasoning) == (want_text, want_reasoning)


def test_split_think():
    assert split_think("  <think>a\nb</think>\n\nanswer") == ("answer", "a\nb")
    assert split_think("answer <think>not at the start</think>") == ("answer <think>not at the start</think>", None)
    assert split_think("<think>never closed") == ("", "never closed")


def test_the_official_api_takes_temperature_one_with_an_effort(tmp_path, monkeypatch):
    """api.openai.com's reasoning models accept only temperature 1: a default becomes 1, a typed 0 is refused."""
    from harness.llm.providers.openai import OPENAI_URL, OpenAIProvider

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    p = OpenAIProvider("o4-mini", base_url=OPENAI_URL, require_key=False)
    assert p.normalize_options(ChatOptions(reasoning_effort="low")).temperature == 1.0
    assert p.normalize_options(ChatOptions(reasoning_effort="none")).temperature == 0.0
    body = p.request_body([{"role": "user", "content": "x"}], p.normalize_options(ChatOptions(reasoning_effort="low")))
    assert body["reasoning_effort"] == "low" and body["temperature"] == 1.0
    session = LLMSession(LLMSettings(dry_run=True, cache_dir=str(tmp_path)))
    with pytest.raises(HarnessError, match="accepts only temperature 1"):
        session.client("openai:o4-mini:reasoning_effort=high,temperature=0")
    got = session.client("openai:o4-mini:reasoning_effort=high")
    assert got.describe()["settings"]["temperature"]["value"] == 1.0


def test_settings_a_provider_has_no_field_for_are_refused_before_any_work(tmp_path):
    session = LLMSession(LLMSettings(dry_run=True, cache_dir=str(tmp_path)))
    with pytest.raises(HarnessError, match="takes no thinking_budget"):
        session.client("openai:gpt-5:thinking_budget=2048")
    with pytest.raises(HarnessError, match="takes no reasoning_effort"):
        session.client("anthropic:claude-sonnet-4-5:reasoning_effort=high")


# -- Anthropic -----------------------------------------------------------------------------------------------
def test_anthropic_thinking_raises_max_tokens_above_the_budget(tmp_path):
    pytest.importorskip("anthropic", reason="needs anthropic: pip install 'harness-ir[anthropic]'")
    with TestServer(thinking) as srv:
        client = get_client(srv.spec("claude-x", "anthropic") + ",thinking_budget=2048,max_tokens=64",
                            cache_dir=tmp_path)
        reply = client.chat([{"role": "system", "content": "rank"}, {"role": "user", "content": "[1] [2] [3]"}])
        body = srv.requests[-1]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 2048 + 64  # the budget plus the answer's cap
    assert body["temperature"] == 1.0  # the only temperature the API takes with thinking
    assert reply.text == "[1] > [2] > [3]" and reply.reasoning == f"asked 2048: {DECOY}"
    assert reply.usage.reasoning_tokens == len(tokenize(reply.reasoning))
    assert reply.usage.input_tokens == input_tokens(body)
    assert client.settings["temperature"].value == 1.0


def test_anthropic_rules_with_thinking_are_one_message_each(tmp_path):
    pytest.importorskip("anthropic", reason="needs anthropic: pip install 'harness-ir[anthropic]'")
    session = LLMSession(LLMSettings(dry_run=True, cache_dir=str(tmp_path)))
    base = "anthropic:claude-sonnet-4-5:thinking_budget=2048"
    for extra, needle in ((",temperature=0", "accepts only temperature 1"), (",top_p=0.5", "top_p from 0.95"),
                          (',extra={"top_k":5}', "takes no top_k")):
        with pytest.raises(HarnessError, match=needle):
            session.client(base + extra)
    assert session.client(base + ",top_p=0.97").describe()["settings"]["top_p"]["value"] == 0.97


# -- the cache --------------------------------------------------------------------------------------------------
def test_a_warm_rerun_sends_nothing_and_another_effort_sends_anew(tmp_path):
    with TestServer(thinking) as srv:
        for effort in ("high", "high", "low"):
            client = get_client(srv.spec("m") + f",reasoning_effort={effort}", cache_dir=tmp_path)
            replies = client.map([f"q{i}" for i in range(3)])
        assert srv.requests_total == 6  # high: 3 sent, then 3 hits; low: 3 new
        assert [r["reasoning_effort"] for r in srv.requests] == ["high"] * 3 + ["low"] * 3
    assert all(r.reasoning.startswith("asked low") for r in replies)
    warm = get_client(srv.spec("m") + ",reasoning_effort=high", cache_dir=tmp_path)
    hit = warm.chat("q0")  # the server is gone: only the cache can answer, reasoning and all
    assert hit.cached and hit.reasoning == f"asked high: {DECOY}"


# -- batch APIs -------------------------------------------------------------------------------------------------
def test_the_batch_apis_send_the_same_settings():
    from harness.llm.providers.anthropic import AnthropicProvider
    from harness.llm.providers.openai import OpenAIProvider

    msgs = [{"role": "user", "content": "rank"}]
    o = OpenAIProvider("gpt-5", base_url="http://127.0.0.1:9/v1", require_key=False)
    line = o.batch_api().request("k" * 64, msgs, ChatOptions(reasoning_effort="medium"))
    assert line["body"]["reasoning_effort"] == "medium"
    pytest.importorskip("anthropic", reason="needs anthropic: pip install 'harness-ir[anthropic]'")
    a = AnthropicProvider("claude-x", base_url="http://127.0.0.1:9", require_key=False)
    opts = a.normalize_options(ChatOptions(thinking_budget=4096, max_tokens=100))
    params = a.batch_api().request("k" * 64, msgs, opts)["params"]
    assert params["thinking"] == {"type": "enabled", "budget_tokens": 4096} and params["max_tokens"] == 4196
    assert params["temperature"] == 1.0


# -- accounting ---------------------------------------------------------------------------------------------------
def test_reasoning_tokens_are_counted_apart_and_priced_as_output(tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text('[models]\n"openai-compatible:m" = { input = 2.0, output = 8.0 }\n')
    with TestServer(ScriptedReply("ok", reasoning="one two three four", reasoning_tokens=40)) as srv:
        client = get_client(srv.spec("m"), cache_dir=tmp_path / "c", prices=str(prices))
        reply = client.chat("hello there")
        client.chat("hello there")  # a hit: its reasoning tokens counted apart, at no cost
        body = srv.requests[0]
    usage = client.usage.as_dict()
    m = usage["models"]["openai-compatible:m"]
    assert reply.usage.reasoning_tokens == 40 and reply.usage.output_tokens == 1 + 40
    assert (m["reasoning_tokens"], m["cached_reasoning_tokens"], m["output_tokens"]) == (40, 40, 41)
    by_hand = (input_tokens(body) * 2.0 + (1 + 40) * 8.0) / 1e6  # the reasoning once, inside the output
    assert m["cost_usd"] == pytest.approx(by_hand) and usage["total"]["reasoning_tokens"] == 40
    assert m["price"]["reasoning_per_1m"] == 8.0
    table = client.usage.table()
    assert "reason tok" in table.splitlines()[1] and table.splitlines()[2].split()[-2] == "40"


def test_a_dry_run_counts_the_whole_budget_as_reasoning(tmp_path):
    pytest.importorskip("anthropic", reason="needs anthropic: pip install 'harness-ir[anthropic]'")
    session = LLMSession(LLMSettings(dry_run=True, cache_dir=str(tmp_path)))
    client = session.client("anthropic:claude-sonnet-4-5:thinking_budget=2048,max_tokens=50")
    reply = client.chat("rank these")
    assert reply.usage.reasoning_tokens == 2048 and reply.usage.output_tokens == 50 + 2048


# -- the local provider -----------------------------------------------------------------------------------------
SWITCH = ("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
          "{% if enable_thinking is defined and not enable_thinking %}<no-think>{% endif %}<assistant>")


def test_the_template_switch_is_rendered_bounded():
    pytest.importorskip("jinja2", reason="needs jinja2 (the local extra renders GGUF templates with it)")
    from harness.llm.providers.chat_template import ChatTemplate

    t = ChatTemplate(SWITCH, "t.gguf", max_chars=1 << 16)
    try:
        msgs = [{"role": "user", "content": "hi"}]
        on = t.render(msgs, bos_token="", eos_token="", budget=30, variables={"enable_thinking": True})
        off = t.render(msgs, bos_token="", eos_token="", budget=30, variables={"enable_thinking": False})
        default = t.render(msgs, bos_token="", eos_token="", budget=30)
    finally:
        t.close()
    assert (on, off, default) == ("<user>hi<assistant>", "<user>hi<no-think><assistant>", "<user>hi<assistant>")
    assert t.thinking_switch


def test_local_takes_an_effort_only_where_the_template_has_a_switch(tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'harness-ir[local]')")
    from tests.test_untrusted_options import tiny_gguf

    session = LLMSession(LLMSettings(cache_dir=str(tmp_path / "c")))
    with_switch = tiny_gguf(tmp_path / "switch.gguf", SWITCH)
    without = tiny_gguf(tmp_path / "plain.gguf", "{% for m in messages %}{{ m.content }}{% endfor %}")
    client = session.client(f"local:path={with_switch},reasoning_effort=none,max_tokens=3")
    assert client.settings["reasoning_effort"].value == "none"
    with pytest.raises(HarnessError, match="has no thinking switch"):
        session.client(f"local:path={without},reasoning_effort=high")
    with pytest.raises(HarnessError, match="no thinking budget"):
        session.client(f"local:path={with_switch},thinking_budget=2048")


def test_a_reply_cached_before_the_field_reads_back_as_before():
    """A cached reply without reasoning (written before the field) reads back, and is stored, as before."""
    from harness.served.types import Reply

    old = {"text": "x", "finish_reason": "stop", "logprobs": None, "usage": {"input_tokens": 1, "output_tokens": 2},
           "model": "m", "provider": "p"}
    r = Reply.from_dict(old)
    assert r.reasoning is None and r.usage.reasoning_tokens == 0 and r.latency is None
    assert r.to_dict() == old
