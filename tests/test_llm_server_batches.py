"""The loopback LLM server's batch APIs (harness.testing.llm_server + llm_batches), driven through the
official SDKs: OpenAI's Batch API (files + batches) and Anthropic's Message Batches API. Every batch
result must equal the direct endpoint's reply to the same request. Loopback only, no long sleeps."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest

from harness.testing.llm_server import ScriptedReply, TestServer

openai = pytest.importorskip("openai", reason="the OpenAI SDK is not installed (pip install 'harness-ir[openai]')")
anthropic = pytest.importorskip(
    "anthropic", reason="the Anthropic SDK is not installed (pip install 'harness-ir[anthropic]')")

MODEL = "gpt-test"


# -- helpers -----------------------------------------------------------------------------------------
def oai(srv: TestServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.openai_base_url, api_key="test", max_retries=0)


def ant(srv: TestServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="test", max_retries=0)


def chat_body(text: str, **extra: Any) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": text}], **extra}


def msg_params(text: str, **extra: Any) -> dict:
    return {"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content": text}], **extra}


def jsonl(bodies: dict[str, dict], **line: Any) -> bytes:
    rows = [{"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": b, **line}
            for cid, b in bodies.items()]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def submit(client: openai.OpenAI, bodies: dict[str, dict], data: bytes | None = None, **kw: Any) -> Any:
    """Uploads the JSONL of ``bodies`` (or ``data``) and creates a batch of it."""
    f = client.files.create(file=("in.jsonl", data if data is not None else jsonl(bodies)), purpose="batch")
    return client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h", **kw)


def wait(retrieve: Any, batch_id: str, field: str = "status", done: tuple[str, ...] = ("completed", "failed",
         "expired", "cancelled", "ended")) -> Any:
    """Polls until the batch's ``field`` is final (at most 5 s)."""
    for _ in range(100):
        b = retrieve(batch_id)
        if getattr(b, field) in done:
            return b
        time.sleep(0.05)
    raise AssertionError(f"batch {batch_id} never ended")


def lines_of(client: openai.OpenAI, file_id: str | None) -> dict[str, dict]:
    """custom_id -> line of an output or error file."""
    assert file_id
    rows = [json.loads(x) for x in client.files.content(file_id).text.splitlines()]
    out = {r["custom_id"]: r for r in rows}
    assert len(out) == len(rows)
    return out


def direct_chat(client: openai.OpenAI, body: dict) -> dict:
    raw = client.chat.completions.with_raw_response.create(**body)
    return json.loads(raw.text)


def direct_message(client: anthropic.Anthropic, params: dict) -> dict:
    return json.loads(client.messages.with_raw_response.create(**params).text())


def without_created(body: dict) -> dict:
    return {k: v for k, v in body.items() if k != "created"}


def script(req: dict) -> Any:
    """Replies by the last user text: 'err:N' a scripted HTTP error, 'hang'/'bad' broken replies,
    'lp' a reply with logprobs, anything else an echo with a suffix."""
    text = req["messages"][-1]["content"]
    if text.startswith("err:"):
        return ScriptedReply(status=int(text[4:]), error=f"no {text}")
    if text == "hang":
        return ScriptedReply(hang=True)
    if text == "bad":
        return ScriptedReply(malformed=True)
    if text == "lp":
        return ScriptedReply("yes", logprobs=[("yes", -0.1, [("yes", -0.1), ("no", -2.4)])])
    return f"answer to {text}. Done, really done."


# -- round trips -------------------------------------------------------------------------------------
def test_openai_round_trip_matches_direct_replies():
    bodies = {f"q-{i}": chat_body(f"question {i}") for i in range(12)}
    bodies["lp"] = chat_body("lp", logprobs=True, top_logprobs=2)
    bodies["short"] = chat_body("question short", max_tokens=2)
    bodies["stop"] = chat_body("question stop", stop=["Done"])
    with TestServer(script) as srv:
        client = oai(srv)
        created = submit(client, bodies, metadata={"run": "r1"})
        assert (created.status, created.object, created.endpoint) == ("validating", "batch", "/v1/chat/completions")
        batch = wait(client.batches.retrieve, created.id)
        assert batch.status == "completed" and batch.error_file_id is None and batch.metadata == {"run": "r1"}
        assert (batch.request_counts.total, batch.request_counts.completed, batch.request_counts.failed) == (15, 15, 0)
        assert batch.in_progress_at and batch.finalizing_at and batch.completed_at and batch.model == MODEL
        out = lines_of(client, batch.output_file_id)
        assert list(out) != list(bodies)  # shuffled: matched by custom_id only
        assert client.files.retrieve(batch.output_file_id).purpose == "batch_output"
        assert srv.requests_total == 0  # batch requests are not direct requests
        for cid, body in bodies.items():
            line = out[cid]
            assert line["id"].startswith("batch_req_") and line["error"] is None
            assert line["response"]["status_code"] == 200
            assert without_created(line["response"]["body"]) == without_created(direct_chat(client, body))
        assert out["short"]["response"]["body"]["choices"][0]["finish_reason"] == "length"
        assert out["lp"]["response"]["body"]["choices"][0]["logprobs"]["content"][0]["top_logprobs"][1]["token"] == "no"
        usage = [out[c]["response"]["body"]["usage"] for c in bodies]
        assert batch.usage.input_tokens == sum(u["prompt_tokens"] for u in usage)
        assert batch.usage.output_tokens == sum(u["completion_tokens"] for u in usage)


def test_anthropic_round_trip_matches_direct_replies():
    requests = [{"custom_id": f"q_{i}", "params": msg_params(f"question {i}")} for i in range(10)]
    requests.append({"custom_id": "stop", "params": msg_params("question stop", stop_sequences=["Done"])})
    requests.append({"custom_id": "short", "params": msg_params("question short", max_tokens=2)})
    with TestServer(script) as srv:
        client = ant(srv)
        created = client.messages.batches.create(requests=requests)
        assert created.id.startswith("msgbatch_") and created.processing_status == "in_progress"
        assert created.results_url is None and created.request_counts.processing == 12
        batch = wait(client.messages.batches.retrieve, created.id, "processing_status")
        assert batch.request_counts.succeeded == 12 and batch.ended_at is not None
        assert batch.results_url == f"{srv.url}/v1/messages/batches/{batch.id}/results"
        results = list(client.messages.batches.results(batch.id))
        assert [r.custom_id for r in results] != [r["custom_id"] for r in requests]  # shuffled
        by_id = {r.custom_id: r.result for r in results}
        for r in requests:
            assert by_id[r["custom_id"]].type == "succeeded"
            assert by_id[r["custom_id"]].message.model_dump(exclude_unset=True) == direct_message(client, r["params"])
        assert by_id["short"].message.stop_reason == "max_tokens"
        assert srv.requests_total == len(requests)  # only the direct calls above


def test_batches_share_the_direct_script_queue_and_ignore_faults():
    with TestServer(["first", "second"], rate_500=1.0) as srv:  # every direct call would fail
        client = oai(srv)
        batch = wait(client.batches.retrieve, submit(client, {"a": chat_body("x"), "b": chat_body("y")}).id)
        out = lines_of(client, batch.output_file_id)
        assert [out[c]["response"]["body"]["choices"][0]["message"]["content"] for c in "ab"] == ["first", "second"]
        assert srv.faults == {}


# -- per-request errors ------------------------------------------------------------------------------
def test_openai_per_request_errors_go_to_the_error_file():
    bodies = {"ok": chat_body("fine"), "e400": chat_body("err:400"), "e429": chat_body("err:429"),
              "hang": chat_body("hang"), "bad": chat_body("bad")}
    with TestServer(script, hang_s=0.2) as srv:
        client = oai(srv)
        batch = wait(client.batches.retrieve, submit(client, bodies).id)
        assert batch.status == "completed"
        assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 4)
        assert set(lines_of(client, batch.output_file_id)) == {"ok"}
        errors = lines_of(client, batch.error_file_id)
        assert {c: e["response"]["status_code"] for c, e in errors.items()} == {
            "e400": 400, "e429": 429, "hang": 500, "bad": 500}
        with pytest.raises(openai.BadRequestError) as exc:
            client.chat.completions.create(**bodies["e400"])
        assert errors["e400"]["response"]["body"] == exc.value.response.json()
        assert all(e["error"] is None and e["response"]["request_id"] for e in errors.values())
        only_bad = wait(client.batches.retrieve, submit(client, {"x": chat_body("err:500")}).id)
        assert only_bad.output_file_id is None and only_bad.error_file_id


def test_anthropic_per_request_errors_are_errored_results():
    requests = [{"custom_id": "ok", "params": msg_params("fine")},
                {"custom_id": "e400", "params": msg_params("err:400")},
                {"custom_id": "e529", "params": msg_params("err:529")},
                {"custom_id": "hang", "params": msg_params("hang")}]
    with TestServer(script) as srv:
        client = ant(srv)
        batch = wait(client.messages.batches.retrieve, client.messages.batches.create(requests=requests).id,
                     "processing_status")
        assert (batch.request_counts.succeeded, batch.request_counts.errored) == (1, 3)
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert results["e529"].error.error.type == "overloaded_error"
        assert results["hang"].error.error.type == "api_error"
        with pytest.raises(anthropic.BadRequestError) as exc:
            client.messages.create(**requests[1]["params"])
        assert results["e400"].error.model_dump(exclude_none=True) == exc.value.response.json()


# -- delay, expiry, cancel -----------------------------------------------------------------------------
def test_delay_keeps_batches_in_progress_until_it_passes():
    with TestServer(batch_delay=60) as srv:
        client, aclient = oai(srv), ant(srv)
        b = submit(client, {"a": chat_body("x")})
        m = aclient.messages.batches.create(requests=[{"custom_id": "a", "params": msg_params("x")}])
        assert client.batches.retrieve(b.id).status == "in_progress"
        assert client.batches.retrieve(b.id).output_file_id is None
        assert aclient.messages.batches.retrieve(m.id).processing_status == "in_progress"
        with pytest.raises(anthropic.AnthropicError, match="results_url"):
            list(aclient.messages.batches.results(m.id))
        with urllib.request.urlopen(f"{srv.url}/v1/messages/batches/{m.id}") as r:
            assert json.load(r)["request_counts"]["processing"] == 1
        srv.batch_delay = 0.2
        assert wait(client.batches.retrieve, b.id).status == "completed"
        assert wait(aclient.messages.batches.retrieve, m.id, "processing_status").request_counts.succeeded == 1
        assert srv.batch_status(b.id) == "completed" and srv.batch_status(m.id) == "ended"


@pytest.mark.parametrize("keep", [0, 2])
def test_openai_expired_batch(keep):
    bodies = {f"r{i}": chat_body(f"q{i}") for i in range(5)}
    with TestServer(batch_expire={2}, batch_expire_keep=keep) as srv:
        client = oai(srv)
        first = wait(client.batches.retrieve, submit(client, bodies).id)
        second = wait(client.batches.retrieve, submit(client, bodies).id)
        assert first.status == "completed"
        assert second.status == "expired" and second.expired_at is not None
        assert (second.request_counts.total, second.request_counts.completed) == (5, keep)
        errors = lines_of(client, second.error_file_id)
        assert set(errors) == {f"r{i}" for i in range(keep, 5)}
        assert all(e["response"] is None and e["error"]["code"] == "batch_expired" for e in errors.values())
        if keep:
            assert set(lines_of(client, second.output_file_id)) == {"r0", "r1"}
        else:
            assert second.output_file_id is None


@pytest.mark.parametrize("keep", [0, 1])
def test_anthropic_expired_batch(keep):
    requests = [{"custom_id": f"r{i}", "params": msg_params(f"q{i}")} for i in range(3)]
    with TestServer(batch_expire=lambda n, ids: "r2" in ids, batch_expire_keep=keep) as srv:
        client = ant(srv)
        batch = wait(client.messages.batches.retrieve, client.messages.batches.create(requests=requests).id,
                     "processing_status")
        assert (batch.request_counts.succeeded, batch.request_counts.expired) == (keep, 3 - keep)
        results = {r.custom_id: r.result.type for r in client.messages.batches.results(batch.id)}
        assert results == {f"r{i}": "succeeded" if i < keep else "expired" for i in range(3)}


@pytest.mark.parametrize("keep", [0, 1])
def test_openai_cancel(keep):
    bodies = {f"r{i}": chat_body(f"q{i}") for i in range(3)}
    with TestServer(batch_delay=60, batch_cancel_keep=keep) as srv:
        client = oai(srv)
        batch = submit(client, bodies)
        cancelling = client.batches.cancel(batch.id)
        assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
        done = client.batches.retrieve(batch.id)
        assert done.status == "cancelled" and done.cancelled_at is not None
        errors = lines_of(client, done.error_file_id)
        assert len(errors) == 3 - keep and {e["error"]["code"] for e in errors.values()} == {"batch_cancelled"}
        assert (done.output_file_id is not None) == bool(keep)
        with pytest.raises(openai.ConflictError):
            client.batches.cancel(batch.id)
        assert srv.batch_cancels == 2


def test_anthropic_cancel_keeps_finished_results():
    requests = [{"custom_id": f"r{i}", "params": msg_params(f"q{i}")} for i in range(3)]
    with TestServer(batch_delay=60, batch_cancel_keep=1) as srv:
        client = ant(srv)
        batch = client.messages.batches.create(requests=requests)
        canceling = client.messages.batches.cancel(batch.id)
        assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
        ended = client.messages.batches.retrieve(batch.id)
        assert ended.processing_status == "ended"
        assert (ended.request_counts.succeeded, ended.request_counts.canceled) == (1, 2)
        results = {r.custom_id: r.result.type for r in client.messages.batches.results(batch.id)}
        assert results == {"r0": "succeeded", "r1": "canceled", "r2": "canceled"}
        with pytest.raises(anthropic.BadRequestError):
            client.messages.batches.cancel(batch.id)


# -- listing -----------------------------------------------------------------------------------------
def test_openai_list_pages_newest_first_with_metadata():
    with TestServer(batch_delay=60) as srv:
        client = oai(srv)
        ids = [submit(client, {"a": chat_body("x")}, metadata={"n": str(i)}).id for i in range(5)]
        first = client.batches.list(limit=2)
        assert [b.id for b in first.data] == ids[::-1][:2] and first.has_more
        second = client.batches.list(limit=2, after=first.data[-1].id)
        assert [b.id for b in second.data] == ids[::-1][2:4]
        every = list(client.batches.list(limit=2))  # auto-pagination
        assert [b.metadata["n"] for b in every] == ["4", "3", "2", "1", "0"]
        assert srv.batch_lists == 2 + 3
        with pytest.raises(openai.BadRequestError):
            client.batches.list(limit=101)


def test_anthropic_list_pages_by_after_and_before_id():
    with TestServer(batch_delay=60) as srv:
        client = ant(srv)
        ids = [client.messages.batches.create(requests=[{"custom_id": "a", "params": msg_params("x")}]).id
               for _ in range(5)]
        newest = ids[::-1]
        first = client.messages.batches.list(limit=2)
        assert [b.id for b in first.data] == newest[:2]
        assert (first.has_more, first.first_id, first.last_id) == (True, newest[0], newest[1])
        assert [b.id for b in client.messages.batches.list(limit=2, after_id=newest[1]).data] == newest[2:4]
        before = client.messages.batches.list(limit=2, before_id=newest[3])
        assert [b.id for b in before.data] == newest[1:3] and before.has_more
        assert [b.id for b in client.messages.batches.list(limit=2)] == newest  # auto-pagination
        assert not client.messages.batches.list(limit=20, after_id=newest[-1]).data


# -- validation --------------------------------------------------------------------------------------
@pytest.mark.parametrize("custom_id", ["has space", "x" * 65, "", "slash/id"])
def test_anthropic_rejects_bad_custom_ids(custom_id):
    with TestServer() as srv:
        with pytest.raises(anthropic.BadRequestError) as exc:
            ant(srv).messages.batches.create(requests=[{"custom_id": custom_id, "params": msg_params("x")}])
        assert exc.value.body["error"]["type"] == "invalid_request_error"
        assert srv.batch_submissions == 0 and not srv.batches


def test_anthropic_rejects_duplicate_custom_ids():
    with TestServer() as srv:
        with pytest.raises(anthropic.BadRequestError, match="Duplicate"):
            ant(srv).messages.batches.create(requests=[{"custom_id": "a", "params": msg_params("x")}] * 2)


@pytest.mark.parametrize("data, code", [
    (jsonl({"a": chat_body("x")}) * 2, "duplicate_custom_id"),
    (jsonl({"a": chat_body("x"), "b": {**chat_body("y"), "model": "other"}}), "mismatched_model"),
    (jsonl({"a": chat_body("x")}, url="/v1/embeddings"), "invalid_url"),
    (jsonl({"a": chat_body("x")}, method="GET"), "invalid_method"),
    (b'{"custom_id": "a"\n', "invalid_json_line"),
    (b"\n", "empty_file"),
])
def test_openai_invalid_input_files_fail_the_batch(data, code):
    with TestServer() as srv:
        client = oai(srv)
        created = submit(client, {}, data=data)
        assert created.status == "validating"
        batch = client.batches.retrieve(created.id)
        assert batch.status == "failed" and batch.failed_at is not None
        assert code in {e.code for e in batch.errors.data}
        assert batch.output_file_id is None and batch.request_counts.total == 0


def test_openai_create_rejects_bad_parameters():
    with TestServer() as srv:
        client = oai(srv)
        f = client.files.create(file=("in.jsonl", jsonl({"a": chat_body("x")})), purpose="batch")
        with pytest.raises(openai.BadRequestError, match="completion_window"):
            client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                  completion_window="48h")  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError, match="metadata"):
            client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h",
                                  metadata={f"k{i}": "v" for i in range(17)})
        with pytest.raises(openai.NotFoundError):
            client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h")
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch_nope")
        assert srv.batch_submissions == 0


# -- acknowledgement window ------------------------------------------------------------------------------
def test_on_batch_create_runs_after_storing_and_before_the_reply():
    events: list[str] = []

    def hook(batch: dict) -> None:
        events.append(f"hook {srv.batch_status(batch['id'])} {batch['id']}")

    with TestServer(on_batch_create=hook, batch_delay=60) as srv:
        b = submit(oai(srv), {"a": chat_body("x")})
        events.append("replied")
        m = ant(srv).messages.batches.create(requests=[{"custom_id": "a", "params": msg_params("x")}])
        events.append("replied")
    assert events == [f"hook in_progress {b.id}", "replied", f"hook in_progress {m.id}", "replied"]


def test_on_batch_create_raising_loses_the_reply_but_keeps_the_batch():
    def hook(batch: dict) -> None:
        raise RuntimeError("client killed")

    with TestServer(on_batch_create=hook) as srv:
        with pytest.raises(openai.APIConnectionError):
            submit(oai(srv), {"a": chat_body("x")})
        with pytest.raises(anthropic.APIConnectionError):
            ant(srv).messages.batches.create(requests=[{"custom_id": "a", "params": msg_params("x")}])
        assert [b.api for b in srv.batches] == ["openai", "anthropic"]
        assert srv.batch_status(srv.batches[0].id) == "completed"


# -- counters ----------------------------------------------------------------------------------------
def test_batch_counters_stats_and_reset():
    data = jsonl({"a": chat_body("x"), "b": chat_body("y")})
    with TestServer() as srv:
        client, aclient = oai(srv), ant(srv)
        b = wait(client.batches.retrieve, submit(client, {}, data=data).id)
        m = aclient.messages.batches.create(requests=[{"custom_id": "a", "params": msg_params("x")}])
        list(aclient.messages.batches.results(m.id))  # one retrieve, then the download
        client.batches.list()
        assert (srv.batch_submissions, srv.batch_requests_total, srv.files) == (2, 3, 1)
        assert srv.batch_requests == {"a": 2, "b": 1}
        assert srv.batch_polls == 2 and srv.batch_lists == 1 and srv.batch_cancels == 0
        assert srv.batch_bytes_uploaded > len(data)
        assert [r.nbytes for r in srv.batches][0] == len(data)
        assert [r.custom_ids for r in srv.batches] == [["a", "b"], ["a"]]
        assert srv.batch_bytes_uploaded == sum(r.nbytes for r in srv.batches)
        assert srv.requests_total == 0 and srv.api_keys == {"test"}
        with urllib.request.urlopen(f"{srv.url}/_stats") as r:
            stats = json.load(r)
        assert stats["batch_requests"] == {"a": 2, "b": 1} and stats["files"] == 1
        assert stats == srv.stats()
        srv.reset_counters()
        assert (srv.batch_submissions, srv.batch_polls, srv.files, srv.batch_bytes_uploaded) == (0, 0, 0, 0)
        assert not srv.batch_requests
        assert srv.batch_object(b.id)["status"] == "completed" and srv.batch_polls == 0
        with pytest.raises(KeyError):
            srv.batch_status("batch_nope")
