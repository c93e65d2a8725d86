"""One precedence for every LLM setting (harness.served.precedence, docs/llm.md "Precedence of settings"):
a component spec's argument beats the LLM spec (or a CLI option), which beats the component's default,
which beats the client's. Checked on the request bodies the loopback server records, for every
LLM-backed component the registry holds, and in results.json."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from harness import Document, Query, Run
from harness.concepts.errors import HarnessError
from harness.llm.spec import parse_llm_spec
from harness.served.precedence import (
    CLIENT_DEFAULT,
    COMPONENT_DEFAULT,
    COMPONENT_SPEC,
    LLM_SPEC,
    Setting,
    resolve,
)
from harness.served.settings import LLMSettings
from harness.testing import TestServer
from harness.testing.env import isolated_context

QUERIES = {q: Query(q, f"query {q} about lobsters", "prefer recipes", {"query": f"query {q}"}) for q in ("q1", "q2")}
CORPUS = {f"d{i}": Document(f"d{i}", f"passage {i} on lobster rolls and sandwiches", title=f"T{i}") for i in range(4)}
RUN = Run.from_order({q: [f"d{i}" for i in range(4)] for q in QUERIES})


def rankgpt_cap(window: int) -> int:
    """The published RankGPT cap, computed here on its own: 6 tokens per passage of the window + 32."""
    return 6 * window + 32


#: every LLM-backed component the registry holds: (kind, plugin distribution, published default cap)
COVERED: dict[str, tuple[str, str, int]] = {
    "rankgpt": ("reranker", "harness-rankgpt", rankgpt_cap(20)),
    "relevance-generation": ("reranker", "harness-rankgpt", 1),
    "birco-rank": ("reranker", "harness-birco", rankgpt_cap(10)),  # BIRCO's window of 10
    "birco-score": ("reranker", "harness-birco", 1024),
    "birco-reason": ("reranker", "harness-birco", 1024),
    "birco-subtask": ("reranker", "harness-birco", 1024),
    "instfol": ("judge", "harness-ifir", 64),
    "true-false": ("reranker", "harness-ir", 1),
    "umbrela": ("judge", "harness-ir", 100),  # the release's max_tokens (castorini/umbrela gpt_judge.py)
}
#: components whose requests the chat server cannot answer (raw completions): checked on the options in
#: effect for each request (the cache key's, which is what the provider sends)
RAW_COMPLETION = {"true-false"}


def reply(request: dict) -> str:
    """One reply every method can read: a permutation, a score, a judge's JSON, criteria."""
    return 'Yes. [2] > [1] > [3] {"score": 2, "reason": "ok"} Criteria:\n1. about lobsters\nSCORE: 2'


@pytest.fixture(scope="module")
def server():
    with TestServer(reply=reply) as srv:
        yield srv


def context(tmp_path, llm: str, **settings: Any):
    return isolated_context(tmp_path / "cache", llm=llm, **settings)


def installed(name: str) -> None:
    from harness.plugins.host import PluginHost

    if name not in PluginHost().registry.names(COVERED[name][0]):
        pytest.skip(f"{name}: plugin {COVERED[name][1]} is not installed")


def build(ctx, name: str, args: str = ""):
    kind = COVERED[name][0]
    return ctx.registry.build(kind, name + (f":{args}" if args else ""), ctx)[0]


def sent_options(ctx, component, name: str, server) -> list[dict[str, Any]]:
    """What ``component`` sends: the request bodies the server saw, or for a raw-completion method the
    options in effect of each request it makes (its cache key payload)."""
    if name in RAW_COMPLETION:
        return [component.client.key_payload(**_split(component.request("prompt", ("true", "false"))))["options"]]
    server.reset_counters()
    if COVERED[name][0] == "judge":
        component.judge(QUERIES, RUN, CORPUS)
    else:
        component.rerank(QUERIES, RUN, CORPUS)
    assert server.requests, f"{name} sent nothing"
    return list(server.requests)


def _split(request: dict) -> dict:
    request = dict(request)
    return {"messages": request.pop("messages"), **request}


# -- the rule ------------------------------------------------------------------------------------------------
def test_resolve_takes_the_first_layer_that_has_the_setting():
    layers = [(COMPONENT_SPEC, {"top_p": None}), (LLM_SPEC, {"max_tokens": 128, "top_p": 0.5}),
              (COMPONENT_DEFAULT, {"max_tokens": 1024, "temperature": 0.0})]
    assert resolve("max_tokens", layers) == Setting(128, LLM_SPEC)
    assert resolve("top_p", layers) == Setting(None, COMPONENT_SPEC)  # typed null: sends none
    assert resolve("temperature", layers) == Setting(0.0, COMPONENT_DEFAULT)
    assert resolve("seed", layers, 7) == Setting(7, CLIENT_DEFAULT)
    assert resolve("max_tokens", [(LLM_SPEC, {"max_tokens": 0})]) == Setting(None, LLM_SPEC)  # 0: no cap


def test_an_unknown_chat_option_is_still_refused(tmp_path, server):
    from harness.llm import get_client

    with pytest.raises(TypeError, match="temprature"):
        get_client(server.spec("m"), cache_dir=tmp_path, temprature=0)


def test_llm_spec_takes_max_tokens_zero_and_refuses_bad_options_in_one_message():
    assert parse_llm_spec("openai-compatible:m:base_url=http://127.0.0.1:9/v1,max_tokens=0").options == {
        "max_tokens": 0}
    with pytest.raises(HarnessError, match="max_tokens must be >= 1"):
        parse_llm_spec("openai-compatible:m:base_url=http://127.0.0.1:9/v1,max_tokens=-3")


def test_settings_record_where_each_value_came_from():
    s = LLMSettings.from_env({"HARNESS_LLM_TIMEOUT": "30", "HARNESS_LLM_BUDGET": "90"})
    assert (s.timeout, s.origin("timeout"), s.origin("budget"), s.origin("connect_timeout")) == (30.0, "env", "env",
                                                                                                 None)
    changed = s.merged(timeout=5)  # set in Python: no longer the environment's
    assert (changed.timeout, changed.origin("timeout"), changed.origin("budget")) == (5, "settings", "env")


# -- every LLM component -----------------------------------------------------------------------------------
def test_every_llm_backed_component_is_covered(tmp_path, server):
    """A component is LLM-backed when, built with ``llm=``, it makes a client in the session: each must be
    in COVERED (and so in the tests below)."""
    pytest.importorskip("openai", reason="the OpenAI SDK is not installed (pip install 'harness-ir[openai]')")
    from harness.plugins.host import PluginHost

    registry = PluginHost().registry
    found = set()
    for kind in ("reranker", "judge"):
        for name in registry.names(kind):
            ctx = context(tmp_path / kind / name.replace(":", "_"), server.spec("m"))
            try:
                ctx.registry.build(kind, name, ctx, llm=server.spec("m"))
            except (HarnessError, TypeError, ValueError, ImportError, OSError):
                continue  # takes no llm=, or needs what is not here (a model, a file)
            if ctx.llm.clients:
                found.add(name)
    assert found, "no LLM-backed component was found"
    assert found <= set(COVERED), f"LLM-backed components not covered here: {sorted(found - set(COVERED))}"


@pytest.mark.parametrize("name", sorted(COVERED))
def test_llm_spec_max_tokens_reaches_every_request(name, tmp_path, server):
    installed(name)
    ctx = context(tmp_path, server.spec("m") + ",max_tokens=128")
    comp = build(ctx, name)
    bodies = sent_options(ctx, comp, name, server)
    assert [b.get("max_tokens") for b in bodies] == [128] * len(bodies)
    assert comp.client.settings["max_tokens"] == Setting(128, LLM_SPEC)


@pytest.mark.parametrize("name", sorted(set(COVERED) - RAW_COMPLETION))  # true-false takes no max_tokens
def test_component_spec_beats_the_llm_spec(name, tmp_path, server):
    installed(name)
    ctx = context(tmp_path, server.spec("m") + ",max_tokens=128")
    comp = build(ctx, name, "max_tokens=64")
    bodies = sent_options(ctx, comp, name, server)
    assert [b.get("max_tokens") for b in bodies] == [64] * len(bodies)
    assert comp.client.settings["max_tokens"] == Setting(64, COMPONENT_SPEC)


@pytest.mark.parametrize("name", sorted(COVERED))
def test_component_default_cap_without_either(name, tmp_path, server):
    installed(name)
    ctx = context(tmp_path, server.spec("m"))
    comp = build(ctx, name)
    bodies = sent_options(ctx, comp, name, server)
    cap = COVERED[name][2]
    assert [b.get("max_tokens") for b in bodies] == [cap] * len(bodies)
    if name not in RAW_COMPLETION:  # true-false sets its cap on each request: the client has none
        assert comp.client.settings["max_tokens"] == Setting(cap, COMPONENT_DEFAULT)


@pytest.mark.parametrize("name", sorted(set(COVERED) - RAW_COMPLETION))
def test_max_tokens_zero_lifts_the_cap(name, tmp_path, server):
    """``max_tokens=0`` means no cap, from the component spec (as before) and from the LLM spec; a
    component spec's own cap still beats the LLM spec's 0."""
    installed(name)
    for llm_args, args, expected in ((",max_tokens=128", "max_tokens=0", None), (",max_tokens=0", "", None),
                                     (",max_tokens=0", "max_tokens=64", 64)):
        ctx = context(tmp_path / f"{llm_args}{args}", server.spec("m") + llm_args)
        bodies = sent_options(ctx, build(ctx, name, args), name, server)
        assert [b.get("max_tokens") for b in bodies] == [expected] * len(bodies), (llm_args, args)


@pytest.mark.parametrize("name", ["birco-score", "instfol"])
def test_other_generation_settings_follow_the_same_rule(name, tmp_path, server):
    """temperature, top_p, top_logprobs: the LLM spec beats the component's default, the component spec
    beats the LLM spec (INSTFOL's published top_p 0.7 and top_logprobs 10 stay when nobody types one)."""
    installed(name)
    ctx = context(tmp_path / "spec", server.spec("m") + ",temperature=0.5,top_p=0.9,seed=3")
    comp = build(ctx, name, "temperature=0.2")
    body = sent_options(ctx, comp, name, server)[0]
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.2, 0.9, 3)
    st = comp.client.settings
    assert (st["temperature"].source, st["top_p"].source, st["seed"].source) == (COMPONENT_SPEC, LLM_SPEC, LLM_SPEC)
    if name == "instfol":
        ctx = context(tmp_path / "plain", server.spec("m"))
        body = sent_options(ctx, build(ctx, name), name, server)[0]
        assert (body["top_p"], body["top_logprobs"], body["temperature"]) == (0.7, 10, 0)


# -- components that set options per request (a third-party plugin) ---------------------------------------
class PerRequestCap:
    """Sets its cap on each request, as a plugin may: a component default, which the LLM spec beats."""

    def __init__(self, llm: str | None = None, context: Any = None):
        from harness import Context

        self.client = Context.of(context).llm.client(llm)

    def rerank(self, queries, run, corpus):
        from harness.llm import user

        self.client.map([{"messages": [user(queries[q].text)], "max_tokens": 5, "sample": 1} for q in run])
        return run


def test_a_plugin_s_per_request_cap_is_a_default_the_llm_spec_beats(tmp_path, server):
    from harness.plugins.hookspecs import hookimpl
    from harness.testing.env import plugin_registry

    plugin = types.SimpleNamespace(register_rerankers=hookimpl(
        lambda register: register("per-request", PerRequestCap, "test")))
    registry = plugin_registry(plugin, entry_points=False)
    ctx = isolated_context(tmp_path / "a", registry=registry, llm=server.spec("m") + ",max_tokens=128,sample=0")
    server.reset_counters()
    ctx.registry.build("reranker", "per-request", ctx)[0].rerank(QUERIES, RUN, CORPUS)
    assert [b["max_tokens"] for b in server.requests] == [128, 128]
    # outside a registry build (a component made in Python), a request's own options stay the caller's
    server.reset_counters()
    ctx = isolated_context(tmp_path / "b", registry=registry, llm=server.spec("m") + ",max_tokens=128")
    PerRequestCap(context=ctx).rerank(QUERIES, RUN, CORPUS)
    assert [b["max_tokens"] for b in server.requests] == [5, 5]


def test_llm_spec_timeout_beats_the_cli_option(tmp_path, server):
    from harness.llm.session import LLMSession

    settings = LLMSettings(llm=server.spec("m") + ",timeout=7").given("cli option", timeout=30.0, connect_timeout=4.0)
    client = LLMSession(settings).client(cache_dir=tmp_path)
    assert (client.provider.timeout, client.settings["timeout"]) == (7.0, Setting(7.0, LLM_SPEC))
    assert client.settings["connect_timeout"] == Setting(4.0, "cli option")


# -- results.json --------------------------------------------------------------------------------------------
def test_results_json_shows_each_value_and_its_source(tmp_path, server):
    """The issue's run: ``--llm ...,max_tokens=128 --reranker birco-score`` sent BIRCO's 1024; now every
    request carries 128 and results.json says where each setting came from."""
    installed("birco-score")
    from click.testing import CliRunner

    from harness.cli import cli

    server.reset_counters()
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "eval", "--task", "demo", "--reranker", "birco-score", "--llm", server.spec("gemma") + ",max_tokens=128",
        "--llm-timeout", "30", "--limit", "2", "--depth", "3", "--cache-dir", str(tmp_path / "cache"),
        "-o", str(out), "--quiet"], env={"HARNESS_LLM_BUDGET": "100", "HARNESS_PROGRESS": "0"})
    assert result.exit_code == 0, result.output
    assert server.requests and {b["max_tokens"] for b in server.requests} == {128}
    settings = json.loads((out / "results.json").read_text())["components"]["rerankers"][0]["llm"]["settings"]
    assert settings["max_tokens"] == {"value": 128, "from": "llm spec"}
    assert settings["temperature"] == {"value": 0.0, "from": "component default"}
    assert settings["timeout"] == {"value": 30.0, "from": "cli option"}
    assert settings["budget"] == {"value": 100.0, "from": "env"}
    assert settings["seed"] == {"value": None, "from": "client default"}
    assert settings["connect_timeout"]["from"] == "client default"
