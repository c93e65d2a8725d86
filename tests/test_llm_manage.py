"""The public API for managing the LLM reply cache and the batch journal (``harness.llm``:
``cache_info``, ``clear_cache``, ``explain_cache_miss``, ``Batches``), on real cache folders and
journals written by the LLM layer through the loopback server."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from harness import HarnessError
from harness.cli.cache import cache_group
from harness.llm import (
    Batches,
    BatchPending,
    LLMSession,
    LLMSettings,
    RetryPolicy,
    cache_info,
    cache_path,
    clear_cache,
    endpoint_allowed,
    explain_cache_miss,
    get_client,
)
from harness.testing import TestServer, last_user_text

MODEL = "gpt-4o-mini"


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _settings(tmp_path, **changes) -> LLMSettings:
    return LLMSettings(batch=True, batch_wait=False, batch_poll=0.01, cache_dir=str(tmp_path / "cache"),
                       retry=RetryPolicy.fast()).merged(**changes)


def _submit(tmp_path, srv: TestServer, n: int) -> None:
    """Leave one batch of ``n`` requests pending, as `harness eval --llm-batch --no-wait` does."""
    with pytest.raises(BatchPending):
        LLMSession(_settings(tmp_path)).client(srv.spec(MODEL, "openai")).map([f"item {i}" for i in range(n)])


def _done(req: dict) -> str:
    return "done: " + last_user_text(req)


# -- the reply cache -----------------------------------------------------------------------------
def test_cache_info_and_clear_on_a_cache_the_llm_layer_wrote(tmp_path):
    sent = {"m": [f"p{i}" for i in range(5)] + ["p0", "p1"], "other": ["x", "y"]}  # repeats: one entry each
    with TestServer() as srv:
        for model, prompts in sent.items():
            get_client(srv.spec(model), cache_dir=tmp_path).map(prompts)
    expected = {f"openai-compatible:{m}": len(set(p)) for m, p in sent.items()}
    (tmp_path / "llm" / "cache.db.corrupt-1").write_bytes(b"junk")  # a database moved aside earlier

    info = cache_info(tmp_path)
    assert info.path == cache_path(tmp_path) == tmp_path / "llm"
    assert dict(info.by_model) == expected and info.entries == sum(expected.values())
    assert info.size_bytes > 0 and info.corrupt_copies == ("cache.db.corrupt-1",) and info.pending_batches == 0
    cli = CliRunner().invoke(cache_group, ["info", "--cache-dir", str(tmp_path), "--json"])
    assert json.loads(cli.output) == info.as_dict()  # the command prints what the API returns

    one = clear_cache(tmp_path, model="openai-compatible:other")
    assert (one.entries, one.corrupt_copies) == (2, 0)
    assert dict(cache_info(tmp_path).by_model) == {"openai-compatible:m": 5}
    rest = clear_cache(tmp_path)
    assert (rest.entries, rest.corrupt_copies, rest.path) == (5, 1, tmp_path / "llm")
    after = cache_info(tmp_path)
    assert (after.entries, dict(after.by_model), after.corrupt_copies) == (0, {}, ())


def test_an_absent_cache_is_empty_and_stays_absent(tmp_path):
    info = cache_info(tmp_path / "none")
    assert (info.entries, info.size_bytes, info.pending_batches) == (0, 0, 0)
    assert clear_cache(tmp_path / "none").entries == 0 and not (tmp_path / "none").exists()


def test_explain_cache_miss_names_the_differing_option(tmp_path):
    with TestServer() as srv:
        spec = srv.spec("m")
        get_client(spec, cache_dir=tmp_path).chat("hello", max_tokens=5)
    messages = [{"role": "user", "content": "hello"}]
    assert explain_cache_miss(spec, messages, {"max_tokens": 5}, tmp_path)["hit"]
    miss = explain_cache_miss(spec, messages, {"max_tokens": 6}, tmp_path)
    assert not miss["hit"] and [d["field"] for d in miss["differences"]] == ["options.max_tokens"]


# -- the batch journal ---------------------------------------------------------------------------
def test_status_collect_and_clean_a_pending_batch(tmp_path):
    with TestServer(reply=_done, batch_delay=3600) as srv:
        _submit(tmp_path, srv, 4)
        batches = Batches(LLMSession(_settings(tmp_path)))
        assert batches.path == tmp_path / "cache" / "llm" / "batches.db"
        [rec] = batches.records()
        assert (rec.state, rec.n, rec.provider, rec.model) == ("submitted", 4, "openai", MODEL)
        assert rec.remote_id == srv.batches[0].id and cache_info(tmp_path / "cache").pending_batches == 1
        [live] = batches.status()
        assert (live.remote.status, live.remote.done, live.remote.total) == ("in_progress", 0, 4)
        assert live.describe() == "in_progress 0/4"
        [offline] = batches.status(offline=True)
        assert offline.remote is None and offline.describe() == "-"

        lines: list[str] = []
        still = batches.collect(echo=lines.append)
        assert still.running == 1 and lines == [f"{rec.remote_id}: in_progress, 0/4 requests done"]
        lines.clear()  # --wait: the server finishes the batch during the first pause
        done = batches.collect(wait=True, echo=lines.append, sleep=lambda s: setattr(srv, "batch_delay", 0))
        assert (done.running, done.unknown) == (0, [])
        assert lines[-1].startswith(f"{rec.remote_id}: completed; collected (4 replies")
        assert "via the batch API: 4 calls collected from batches submitted earlier" in done.usage, done.usage
        assert batches.records() == [] and [r.state for r in batches.records(include_ended=True)] == ["collected"]

        held = srv.stored_files
        assert [r.id for r in batches.cleanable()] == [rec.id] and len(held) == 2
        cleaned = batches.clean(echo=lines.append)
        assert sorted(cleaned.deleted[rec.remote_id]) == sorted(held) and cleaned.kept == []
        assert srv.stored_files == [] and srv.file_deletes == 2 and batches.cleanable() == []
    cached = get_client(srv.spec(MODEL, "openai"), cache_dir=tmp_path / "cache", dry_run=True)  # sends nothing
    assert [r.text for r in cached.map([f"item {i}" for i in range(4)])] == [f"done: item {i}" for i in range(4)]


def test_cancel_by_id_or_all(tmp_path):
    with TestServer(reply=_done, batch_delay=3600, batch_cancel_keep=1) as srv:
        _submit(tmp_path, srv, 3)
        batches = Batches(LLMSession(_settings(tmp_path)))
        [rec] = batches.records()
        with pytest.raises(HarnessError, match="no pending batch batch_nope"):
            batches.cancel(["batch_nope", rec.remote_id])
        assert srv.batch_cancels == 0  # nothing was sent
        lines: list[str] = []
        out = batches.cancel([rec.remote_id], echo=lines.append)
        assert (out.requested, out.unknown, out.refused) == ([rec.remote_id], [], [])
        assert lines == [f"{rec.remote_id}: cancel requested"] and srv.batch_cancels == 1
        assert "cancel requested" in batches.records()[0].note
        done = batches.collect()
        assert done.running == 0
        note = batches.records(include_ended=True)[0].note
        assert "1 replies, 0 errors, 2 unprocessed" in note, note
        assert batches.cancel(cancel_all=True).requested == []  # nothing is pending any more


def test_a_batch_the_provider_does_not_know_is_abandoned(tmp_path):
    old = TestServer(reply=_done, batch_delay=3600).start()
    port = old.port
    _submit(tmp_path, old, 2)
    old.stop()
    with TestServer(reply=_done, port=port):  # a reset server: the batch is gone
        batches = Batches(LLMSession(_settings(tmp_path)))
        [rec] = batches.records()
        [status] = batches.status()
        assert status.remote is None and status.describe() == "unknown to the provider (404)"
        out = batches.collect()
        assert out.running == 0 and len(out.unknown) == 1 and out.unknown[0].startswith(f"{rec.remote_id}: ")
        assert "does not know batch" in out.unknown[0]
        assert [r.state for r in batches.records(include_ended=True)] == ["abandoned"]


def test_a_journal_endpoint_gets_the_key_only_when_allowed(tmp_path, monkeypatch):
    with TestServer(reply=_done, batch_delay=3600) as srv:
        _submit(tmp_path, srv, 2)
        session = LLMSession(_settings(tmp_path))
        [rec] = Batches(session).records()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")  # making a client sends nothing
        foreign = dataclasses.replace(rec, base_url="https://collector.example.org/v1")
        with pytest.raises(HarnessError, match="--endpoint https://collector.example.org/v1"):
            Batches(session).runner(foreign)
        assert Batches(session, ["https://collector.example.org/v1/"]).runner(foreign).api is not None
        masked = dataclasses.replace(rec, base_url="https://***@collector.example.org/v1")
        with pytest.raises(HarnessError, match="held credentials"):
            Batches(session, ["https://collector.example.org/v1"]).runner(masked)
    assert endpoint_allowed(None) and endpoint_allowed(srv.url) and not endpoint_allowed("https://x.example/v1")
    assert endpoint_allowed("https://x.example/v1/", ["https://x.example/v1"])
    assert not endpoint_allowed("http://[bad", ["https://x.example/v1"])
