"""Tests of harness-plugin-name.

A chat round trip against harness.testing.TestServer (a loopback server speaking the OpenAI
protocol), error mapping, and the client (cache included) through the entry point."""

from importlib import metadata

import pytest
from harness.llm import AuthError, ChatOptions, MissingKey, RateLimited, get_client, system, user
from harness.testing import ScriptedReply, TestServer

import harness_plugin_name as plugin
from harness_plugin_name.provider import KEY_ENV, HttpChatProvider

NAME, DIST = plugin.NAME, "harness-plugin-name"
ELSEWHERE = "https://api.example.com/v1"


from _helpers import needs_install, registered  # noqa: E402 (rendering puts templates/_helpers.py here)


def test_registers_the_provider():
    factory, description = registered(plugin.register_llm_providers)[NAME]
    assert description
    assert isinstance(factory(model="m", base_url="http://127.0.0.1:9/v1"), HttpChatProvider)


def test_chat_round_trip():
    seen = []

    def reply(request):
        seen.append(request)
        return "Paris."

    with TestServer(reply=reply) as server:
        provider = HttpChatProvider("tiny", base_url=server.openai_base_url)
        options = provider.normalize_options(ChatOptions(temperature=0.0, stop=("\n",)))
        answer = provider.chat([system("Answer briefly."), user("Capital of France?")], options)
    assert answer.text == "Paris." and answer.finish_reason == "stop"
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    (request,) = seen
    assert request["model"] == "tiny" and request["max_tokens"] == 512 and request["stop"] == ["\n"]
    assert [m["role"] for m in request["messages"]] == ["system", "user"]


def test_errors_are_typed():
    script = [ScriptedReply(status=429, error="slow down", headers={"Retry-After": "2"}),
              ScriptedReply(status=401, error="bad key")]
    with TestServer(reply=script) as server:
        provider = HttpChatProvider("tiny", base_url=server.openai_base_url)
        with pytest.raises(RateLimited) as limited:
            provider.chat([user("hi")], provider.normalize_options(ChatOptions()))
        assert limited.value.retry_after == 2
        with pytest.raises(AuthError):
            provider.chat([user("hi")], provider.normalize_options(ChatOptions()))


def test_a_missing_key_fails_at_creation(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(MissingKey, match=KEY_ENV):
        HttpChatProvider("tiny", base_url=ELSEWHERE)
    HttpChatProvider("tiny", base_url=ELSEWHERE, require_key=False)  # dry runs need no key


@needs_install
def test_client_through_the_entry_point(tmp_path):
    with TestServer(reply="Paris.") as server:
        client = get_client(f"{NAME}:tiny:base_url={server.openai_base_url}", cache_dir=tmp_path)
        assert client.chat([user("Capital of France?")]).text == "Paris."
        again = client.chat([user("Capital of France?")])
        assert again.text == "Paris." and again.cached  # the client's disk cache answered
        assert server.requests_total == 1
