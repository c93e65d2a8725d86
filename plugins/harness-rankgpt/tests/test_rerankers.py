"""RankGPT and relevance-generation against the loopback server on a synthetic 100-passage list:
call counts, the order a reply produces, failures kept in order and counted, dry run, missing key,
the RG score and its no-logprobs fallback, and the light import."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from harness import Document, HarnessError, Query, Run
from harness.testing import ScriptedReply, TestServer, isolated_context

from harness_rankgpt.rankgpt import RankGPT
from harness_rankgpt.relevance import RelevanceGeneration, rg_score

from .conftest import PLUGIN_ROOT

N = 100
CORPUS = {f"d{i}": Document(f"d{i}", f"passage number {i} about topic") for i in range(N)}
QUERIES = {q: Query(q, f"query {q}", "", {"query": f"query {q}"}) for q in ("q1", "q2", "q3")}


def bm25_like_run() -> Run:
    return Run({q: [(f"d{i}", float(N - i)) for i in range(N)] for q in QUERIES})


def passages(request: dict) -> list[str]:
    """The passage ids (d17, ...) of a code-variant window request, in window order."""
    return [re.search(r"passage number (\d+)", m["content"]).group(1)
            for m in request["messages"][3:-1:2]]


def reverse_reply(request: dict) -> str:
    n = len(passages(request))
    return " > ".join(f"[{i}]" for i in range(n, 0, -1))


def by_number_desc(request: dict) -> str:
    """Sort the window by the passage's number, highest first: the full slide brings d99 to the top."""
    ids = passages(request)
    order = sorted(range(len(ids)), key=lambda i: -int(ids[i]))
    return " > ".join(f"[{i + 1}]" for i in order)


def make(srv, tmp_path, dry_run=False, **kw) -> RankGPT:
    return RankGPT(llm=srv.spec("rank-model"), context=isolated_context(tmp_path / "cache", dry_run=dry_run), **kw)


def test_nine_calls_per_query_and_strict_scores(tmp_path):
    with TestServer(reply=by_number_desc) as srv:
        rr = make(srv, tmp_path)
        out = rr.rerank(QUERIES, bm25_like_run(), CORPUS)
        assert srv.requests_total == 9 * len(QUERIES)
        assert all(len(r["messages"]) == 2 * 20 + 4 for r in srv.requests)
        assert all(r.get("temperature") == 0 for r in srv.requests)
    for q in QUERIES:
        assert out.doc_ids(q)[:10] == [f"d{i}" for i in range(99, 89, -1)]
        assert sorted(out.doc_ids(q)) == sorted(CORPUS)
    assert out.is_strictly_decreasing()
    st = rr.stats()
    assert (st["windows"], st["calls"], st["failed_windows"]) == (27, 27, 0)
    assert st["windows_per_query"] == {"9": 3} and st["failures_per_query"] == {"q1": 0, "q2": 0, "q3": 0}
    cfg = rr.config()
    assert cfg["windows_per_query"] == 9 and len(cfg["prompt_template_sha256"]) == 64
    assert cfg["llm"]["model"] == "rank-model" and cfg["llm"]["defaults"]["temperature"] == 0.0


def test_first_window_is_the_bottom_of_the_list(tmp_path):
    with TestServer(reply=reverse_reply) as srv:
        make(srv, tmp_path).rerank({"q1": QUERIES["q1"]}, Run({"q1": bm25_like_run()["q1"]}), CORPUS)
        first, last = passages(srv.requests[0]), passages(srv.requests[-1])
    assert first == [str(i) for i in range(80, 100)]
    assert len(last) == 20 and "0" in last


def test_failures_keep_the_window_order_and_are_counted(tmp_path):
    def script(request):
        ids = passages(request)
        if ids[0] == "80":
            return ScriptedReply("I'm sorry, none of these passages is relevant.")  # unparseable
        if ids[0] == "70":
            return ScriptedReply("", finish_reason="content_filter")  # refused
        if ids[0] == "60":
            return ScriptedReply("[20] > [19] > [18", finish_reason="length")  # truncated
        if ids[0] == "50":
            return ScriptedReply(status=400, error="context length exceeded")  # an error
        if ids[0] == "40":
            return "[3] > [3] > [25] > [0] > [1]"  # partial, duplicate and out-of-range ids
        return reverse_reply(request)

    with TestServer(reply=script) as srv:
        rr = make(srv, tmp_path, depth=50)  # depth 50: windows from [30,50) up: 4 windows, one failing
        out = rr.rerank({"q1": QUERIES["q1"]}, Run({"q1": bm25_like_run()["q1"]}), CORPUS)
    assert sorted(out.doc_ids("q1")) == sorted(CORPUS) and len(out.doc_ids("q1")) == N
    assert out.doc_ids("q1")[50:] == [f"d{i}" for i in range(50, N)]  # below depth: untouched
    st = rr.stats()
    assert st["windows"] == 4 and st["failed_windows"] == 0 and st["partial_windows"] == 0

    with TestServer(reply=script) as srv:
        rr = make(srv, tmp_path / "2")
        out = rr.rerank({"q1": QUERIES["q1"]}, Run({"q1": bm25_like_run()["q1"]}), CORPUS)
    ids = out.doc_ids("q1")
    assert sorted(ids) == sorted(CORPUS) and len(set(ids)) == N
    st = rr.stats()
    assert (st["unparseable"], st["refused"], st["truncated"]) == (1, 1, 1)  # reply-quality failures
    assert st["failed_windows"] == 3 and st["failures_per_query"] == {"q1": 3}
    # the 400 is a transport failure: no reply, the method was not applied there; counted apart
    assert st["transport_failures"] == 1 and st["transport_failures_per_query"] == {"q1": 1}
    assert st["partial_windows"] == 1 and st["duplicate_ids"] == 1 and st["out_of_range_ids"] == 2
    assert st["missing_ids"] == 18


def test_warm_cache_sends_nothing_and_gives_the_same_run(tmp_path):
    with TestServer(reply=by_number_desc) as srv:
        first = make(srv, tmp_path).rerank(QUERIES, bm25_like_run(), CORPUS)
        sent = srv.requests_total
        rr = make(srv, tmp_path)
        again = rr.rerank(QUERIES, bm25_like_run(), CORPUS)
        assert srv.requests_total == sent == 27
    assert again.to_dict() == first.to_dict()
    assert rr.stats()["cache_hits"] == 27 and rr.stats()["calls"] == 0


def test_shuffle_is_seeded_per_query_and_depth_limits_the_calls(tmp_path):
    identity = lambda req: " > ".join(f"[{i + 1}]" for i in range(len(passages(req))))  # noqa: E731
    with TestServer(reply=identity) as srv:
        a = make(srv, tmp_path, shuffle=0, depth=20).rerank(QUERIES, bm25_like_run(), CORPUS)
        b = make(srv, tmp_path / "b", shuffle=0, depth=20).rerank(QUERIES, bm25_like_run(), CORPUS)
        assert srv.requests_total == 2 * 3  # one window per query at depth 20
    assert a.to_dict() == b.to_dict()
    top = a.doc_ids("q1")[:20]
    assert set(top) == {f"d{i}" for i in range(20)}
    assert top != [f"d{i}" for i in range(20)] and top != a.doc_ids("q2")[:20]
    assert a.doc_ids("q1")[20:] == [f"d{i}" for i in range(20, N)]


def test_dry_run_sends_nothing_and_keeps_the_order(tmp_path):
    with TestServer(reply=reverse_reply) as srv:
        rr = make(srv, tmp_path, dry_run=True)
        out = rr.rerank(QUERIES, bm25_like_run(), CORPUS)
        assert srv.requests_total == 0
    assert out.doc_ids("q1") == [f"d{i}" for i in range(N)]
    assert rr.stats()["dry_run"] == 27 and rr.stats()["failed_windows"] == 0


def test_missing_key_fails_at_construction(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(HarnessError, match="OPENAI_API_KEY"):
        RankGPT(llm="openai:gpt-4o-mini")
    with pytest.raises(HarnessError, match="OPENAI_API_KEY"):
        RelevanceGeneration(llm="openai:gpt-4o-mini")


def test_objective_from_instruction_and_raw_query(tmp_path):
    q = {"q1": Query("q1", "lobster roll prefer recipes", "prefer recipes", {"query": "lobster roll"})}
    with TestServer(reply="[1] > [2]") as srv:
        rr = make(srv, tmp_path, objective="instruction", depth=2)
        rr.rerank(q, Run({"q1": [("d1", 2.0), ("d2", 1.0)]}), CORPUS)
        msgs = srv.requests[0]["messages"]
    assert msgs[0]["content"].startswith("Task Description: prefer recipes You are RankGPT")
    assert msgs[1]["content"].endswith("relevance to query: lobster roll.")
    assert msgs[-1]["content"].startswith("Search Query: lobster roll.\n\nTask Description: prefer recipes\n\nRank")
    assert rr.config()["query"] == "raw" and rr.config()["objective_from"] == "instruction"


def test_relevance_generation_scores_by_p_yes(tmp_path):
    def script(request):
        last = request["messages"][-1]["content"].rsplit("Passage: ", 1)[1]
        n = int(re.search(r"passage number (\d+)", last).group(1))
        if n % 3 == 0:
            return ("Yes", [("Yes", -0.1 * (n / 99), [("Yes", -0.1 * (n / 99)), ("No", -3.0)])])
        if n % 3 == 1:
            return ("No", [("No", -0.05, [("No", -0.05), ("Yes", -3.0)])])
        return ("Maybe", [("Maybe", -0.5, [("Maybe", -0.5), ("No", -1.5), ("Yes", -2.5)])])

    with TestServer(reply=script) as srv:
        rg = RelevanceGeneration(llm=srv.spec("rg-model"), depth=30, context=isolated_context(tmp_path / "cache"))
        out = rg.rerank({"q1": QUERIES["q1"]}, Run({"q1": bm25_like_run()["q1"]}), CORPUS)
        body = srv.requests[0]
        assert srv.requests_total == 30 and body["max_tokens"] == 1 and body["top_logprobs"] == 5
        assert body["logprobs"] is True
    ids = out.doc_ids("q1")
    # Yes answers first, the most confident Yes (smallest n) first; then "Maybe" (1 - p(No)), then No
    assert ids[:10] == [f"d{i}" for i in range(0, 30, 3)]
    assert ids[10:20] == [f"d{i}" for i in range(2, 30, 3)] and ids[20:30] == [f"d{i}" for i in range(1, 30, 3)]
    assert ids[30:] == [f"d{i}" for i in range(30, N)]
    assert rg.stats()["items"] == 30 and rg.stats()["parse_failures"] == 0
    assert rg.config()["shots"] == 4 and len(rg.config()["prompt_template_sha256"]) == 64


def test_relevance_generation_without_logprobs_falls_back_to_the_label(tmp_path):
    reply = lambda req: "Yes" if "number 7 " in json.dumps(req) else "No"  # noqa: E731
    with TestServer(reply=reply) as srv:
        rg = RelevanceGeneration(llm=srv.spec("claude-test", "anthropic"), depth=10,
                                 context=isolated_context(tmp_path / "cache"))
        out = rg.rerank({"q1": QUERIES["q1"]}, Run({"q1": bm25_like_run()["q1"]}), CORPUS)
    assert out.doc_ids("q1")[:3] == ["d7", "d0", "d1"]  # Yes = 2 first, the No ties keep their order
    assert rg.stats()["no_logprobs"] == 10


def test_rg_score_formula():
    from harness.llm import Reply, TokenLogprob, TopLogprob

    yes = Reply("Yes", logprobs=[TokenLogprob("Yes", -0.5, (TopLogprob("Yes", -0.5),))])
    no = Reply(" No", logprobs=[TokenLogprob(" No", -0.2, ())])
    assert rg_score(yes) == (pytest.approx(1 + 0.6065306597), "ok")
    assert rg_score(no) == (pytest.approx(1 - 0.8187307531), "ok")
    assert rg_score(Reply("Yes")) == (2.0, "no-logprobs") and rg_score(Reply("no.")) == (0.0, "no-logprobs")
    assert rg_score(Reply("???")) == (1.0, "unparseable")


def test_import_loads_no_sdk():
    code = (f"import sys; sys.path.insert(0, {str(PLUGIN_ROOT)!r}); import harness_rankgpt; "
            "bad = [m for m in ('openai', 'anthropic', 'torch', 'harness.llm.client') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
