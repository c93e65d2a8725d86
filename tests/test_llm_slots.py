"""A single-slot local server never gets a queue it would time out of: the client's bound follows the
slots llama.cpp's ``llama-server`` reports at ``/props`` (the loopback server imitates it), 1 for a
``llamacpp:`` server that does not say, and a timed-out request is resent only once the server has
finished with the abandoned one (``/slots``)."""

from __future__ import annotations

from harness.llm import LLMSession, LLMSettings, RetryPolicy, user
from harness.testing import ScriptedReply, TestServer


def session(tmp_path) -> LLMSession:
    return LLMSession(LLMSettings(cache_dir=str(tmp_path), retry=RetryPolicy.fast()))


def test_the_bound_follows_the_slots_the_server_reports(tmp_path):
    with TestServer(slots=2) as srv:
        assert session(tmp_path).client(srv.spec("m", "openai-compatible")).max_concurrency == 2
        explicit = session(tmp_path).client(srv.spec("m", "openai-compatible") + ",max_concurrency=6")
        assert explicit.max_concurrency == 6  # given in the spec: kept as given
    with TestServer() as srv:  # a server that says nothing (vLLM, Ollama...): the default bound
        assert session(tmp_path).client(srv.spec("m", "openai-compatible")).max_concurrency == 8
        assert session(tmp_path).client(f"llamacpp:m:base_url={srv.openai_base_url}").max_concurrency == 1


def run_with_one_timeout(tmp_path, slots: int | None) -> TestServer:
    """The first reply hangs 1.5 s while the client gives up after 0.3 s; the retry gets "ok"."""
    with TestServer([ScriptedReply(hang=True), "ok"], hang_s=1.5, slots=slots) as srv:
        client = session(tmp_path).client(srv.spec("m", "openai-compatible") + ",timeout=0.3")
        reply = client.chat([user("rank these")])
        assert reply.text == "ok" and reply.retries == 1
    return srv


def test_a_timed_out_request_is_resent_once_the_server_is_free(tmp_path):
    srv = run_with_one_timeout(tmp_path / "a", slots=1)
    assert srv.requests_total == 2 and srv.max_in_flight == 1  # the retry waited for the abandoned one
    assert srv.slot_polls >= 1
    other = run_with_one_timeout(tmp_path / "b", slots=None)  # a server that cannot say: resent at once
    assert other.max_in_flight == 2 and other.slot_polls == 0
