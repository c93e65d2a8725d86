"""Every LLM path against a real model: llama.cpp's server (llama-cpp-python's, through the official
openai SDK, behind a counting proxy) and the embedded provider (``--llm local``), both with the
packaged Gemma 3 270M on CPU.

A 270M base model is too small to judge well, so nothing here asserts what it decides; each test
asserts that the run completes, that no candidate is lost or repeated, that reply-quality failures
are counted and handled by the method's rule, that scores lie in their range, that the tokens the
harness records are those the server reported, that a warm rerun sends nothing and that temperature
0 with a seed gives the same run twice. Skipped, with the reason, where llama-cpp-python is missing,
except under CI=true, where that is a failure.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from harness import Context, Dataset, Document, Query, Run, evaluate, task_queries
from harness.llm import LLMSettings, RetryPolicy
from harness.testing import CountingProxy, LlamaServer, require_data, requires_plugin, shared_data_dir

REPO = Path(__file__).resolve().parents[1]
try:
    import llama_cpp  # noqa: F401

    MISSING = None
except ImportError as exc:  # pragma: no cover - depends on the install
    MISSING = f"llama-cpp-python is not installed (pip install 'harness-ir[local]'): {exc}"
if MISSING and os.environ.get("CI") == "true":  # pragma: no cover
    raise RuntimeError(f"CI must run the real-model tests: {MISSING}")
pytestmark = [pytest.mark.skipif(MISSING is not None, reason=MISSING or ""), pytest.mark.slow]
BACKENDS = ["server", "local"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LlamaServer(n_ctx=2048, n_threads=2, cache_dir=tmp_path_factory.mktemp("models")) as srv:
        yield srv


@pytest.fixture
def proxy(server):
    with CountingProxy(server.url) as p:
        yield p


def context(tmp_path: Path, name: str = "cache") -> Context:
    settings = LLMSettings(cache_dir=str(tmp_path / name), retry=RetryPolicy(budget=600.0))
    return Context.create(cache_dir=str(tmp_path / name), llm=settings, data_dir=str(shared_data_dir(REPO)))


def llm_for(backend: str, proxy: CountingProxy) -> str:
    if backend == "server":
        return f"openai-compatible:gemma:base_url={proxy.url}/v1,seed=7"
    return "local:n_ctx=2048,seed=7"


def check_tokens(result, backend: str, proxy: CountingProxy) -> None:
    """The tokens the harness recorded are the ones the model reported (server: read by the proxy)."""
    total = result.usage["total"]
    assert total["input_tokens"] > 0 and total["output_tokens"] > 0
    if backend == "server":
        assert (total["input_tokens"], total["output_tokens"]) == (proxy.usage["prompt_tokens"],
                                                                   proxy.usage["completion_tokens"])
        assert proxy.posts == proxy.distinct_posts == total["calls"]  # each distinct request sent once
        assert proxy.max_in_flight == 1  # the server runs one at a time: the client queued nothing
    else:
        assert total["cost_usd"] == 0.0


def same_candidates(before: Run, after: Run) -> None:
    for q in before:
        assert sorted(after.doc_ids(q)) == sorted(before.doc_ids(q)) and len(set(after.doc_ids(q))) == len(after[q])


@pytest.fixture(scope="module")
def dl19_data():
    return require_data(shared_data_dir(REPO), "trec-dl/bm25_top100.dl19.json", fetch="trec-dl19")


@requires_plugin("harness-rankgpt")
@pytest.mark.parametrize("backend", BACKENDS)
def test_rankgpt_on_one_dl19_query(backend, proxy, dl19_data, tmp_path):
    """Two overlapping windows (the real window plan, smaller): window 4, step 2, depth 6."""
    spec = "rankgpt:window=4,step=2,depth=6"
    first = evaluate("trec-dl19", rerankers=[spec], llm=llm_for(backend, proxy), limit=1, progress=False,
                     context=context(tmp_path))
    stats = first.components["rerankers"][0]["stats"]
    assert stats["windows"] == 2 and stats["transport_failures"] == 0
    assert stats["calls"] + stats["cache_hits"] == 2 and stats["failed_windows"] <= 2  # unparseable: kept order
    bm25 = evaluate("trec-dl19", limit=1, progress=False, context=context(tmp_path, "bm25")).runs["default"]
    same_candidates(bm25, first.runs["default"])
    assert first.runs["default"].doc_ids(next(iter(bm25)))[6:] == bm25.doc_ids(next(iter(bm25)))[6:]
    check_tokens(first, backend, proxy)
    assert first.components["rerankers"][0]["max_tokens"] == 6 * 4 + 32  # the default cap
    proxy.reset()
    warm = evaluate("trec-dl19", rerankers=[spec], llm=llm_for(backend, proxy), limit=1, progress=False,
                    context=context(tmp_path))
    assert proxy.posts == 0 and warm.usage["total"]["calls"] == 0 and warm.runs == first.runs
    again = evaluate("trec-dl19", rerankers=[spec], llm=llm_for(backend, proxy), limit=1, progress=False,
                     context=context(tmp_path, "again"))
    assert again.runs["default"] == first.runs["default"]  # temperature 0 with a seed: the same run


@requires_plugin("harness-rankgpt")
@pytest.mark.parametrize("backend", BACKENDS)
def test_relevance_generation_scores_from_logprobs(backend, proxy, dl19_data, tmp_path):
    res = evaluate("trec-dl19", rerankers=["relevance-generation:depth=10"], llm=llm_for(backend, proxy), limit=1,
                   progress=False, context=context(tmp_path))
    stats = res.components["rerankers"][0]["stats"]
    assert stats["items"] == 10 and stats["transport_failures"] == 0
    assert stats.get("no_logprobs", 0) == 0  # both backends give logprobs
    run = res.runs["default"]
    qid = next(iter(run))
    top = [s for _, s in run[qid][:10]]
    assert top == sorted(top, reverse=True) and len(run[qid]) == 100
    check_tokens(res, backend, proxy)


def ifir_fixture() -> Dataset:
    """Five passages, one query in the two IFIR modes (the instruction only in ``instructed``)."""
    corpus = {f"d{i}": Document(f"d{i}", text) for i, text in enumerate([
        "Index funds track a market index with low fees and broad diversification.",
        "A savings account pays interest and keeps your money available.",
        "Day trading options is risky and needs constant attention.",
        "Bonds pay fixed interest; government bonds carry little default risk.",
        "Buying a house is often the largest purchase a family makes."])}
    meta = {"level": 1, "judge_instruction": "how to invest my savings. I am 40 and want low fees.",
            "ifir_subset": "fiqa"}
    queries = {"query": {"q1": Query("q1", "how to invest my savings", "", dict(meta))},
               "instructed": {"q1": Query("q1", "how to invest my savings", "I am 40 and want low fees.", dict(meta))}}
    return Dataset("ifir:fixture", corpus, queries, {"query": {"q1": {"d0": 1}}, "instructed": {"q1": {"d0": 1}}})


@requires_plugin("harness-ifir")
@pytest.mark.parametrize("backend", BACKENDS)
def test_instfol_judge_on_five_passages(backend, proxy, tmp_path):
    ctx = context(tmp_path).for_evaluation(llm=llm_for(backend, proxy))
    judge = ctx.registry.create("judge", "instfol:depth=5", ctx)
    ds = ifir_fixture()
    run = Run.from_order({"q1": [f"d{i}" for i in range(5)]})
    judgments = {m: judge.judge(task_queries(ds, m, "{text} {instruction}"), run, ds.corpus) for m in ds.modes}
    for js in judgments.values():
        assert len(js) == 5  # every pair judged or counted as failed, none lost
        for j in js.values():
            assert j.score is None or 0.0 <= j.score <= 3.0
            assert j.score is not None or j.details.get("error")
    stats = judge.stats()
    assert stats["transport_failures"] == 0 and stats["failed"] == stats["parse_failures"] + stats["dry_run"]
    if backend == "server":
        assert proxy.posts == proxy.distinct_posts == stats["calls"]
        assert proxy.max_in_flight == 1


@requires_plugin("harness-birco")
@pytest.mark.parametrize("backend", BACKENDS)
def test_birco_score_on_one_query(backend, proxy, tmp_path):
    require_data(shared_data_dir(REPO), "birco/arguana/test_set.pickle", fetch="birco")
    res = evaluate("birco:arguana", rerankers=["birco-score:depth=5,max_tokens=96"], llm=llm_for(backend, proxy),
                   limit=1, progress=False, context=context(tmp_path))
    stats = res.components["rerankers"][0]["stats"]
    assert stats["items"] == 5 and stats["transport_failures"] == 0
    assert 0 <= stats["parse_failures"] <= 5  # a score the base model did not give counts as 0, by the rule
    assert not math.isnan(res.metrics["birco-ndcg@10"])
    check_tokens(res, backend, proxy)


def test_openai_provider_with_a_base_url(proxy, tmp_path):
    """The ``openai`` provider (the official SDK, a loopback base URL: no key needed) against the real
    server: text, logprobs with top alternatives in the OpenAI shape, and the server's token counts."""
    from harness.llm import get_client, user

    client = get_client(f"openai:gemma:base_url={proxy.url}/v1,seed=7", cache_dir=str(tmp_path / "cache"))
    reply = client.chat([user("Is the sky blue? Answer Yes or No.")], max_tokens=4, top_logprobs=3)
    assert reply.usage.output_tokens == len(reply.logprobs) == proxy.usage["completion_tokens"] <= 4
    assert reply.usage.input_tokens == proxy.usage["prompt_tokens"] > 0
    for tok in reply.logprobs:
        assert tok.logprob <= 0.0 and 1 <= len(tok.top) <= 3
    assert "".join(t.token for t in reply.logprobs) == reply.text
    again = client.chat([user("Is the sky blue? Answer Yes or No.")], max_tokens=4, top_logprobs=3)
    assert again.cached and again.text == reply.text and proxy.posts == 1


def test_the_system_prompt_reaches_gemma(tmp_path):
    """The embedded Gemma gets the system prompt (RankGPT's) before the first user turn, as Gemma's
    own template puts it: the prompt grows by its tokens."""
    from harness.llm import get_client, system, user

    client = get_client("local:n_ctx=2048", cache_dir=str(tmp_path / "cache"))
    bare = client.chat([user("Hi")], max_tokens=1)
    with_system = client.chat([system("You are RankGPT, an intelligent assistant."), user("Hi")], max_tokens=1)
    assert with_system.usage.input_tokens > bare.usage.input_tokens + 5


def test_a_pool_of_two_instances_gives_the_replies_of_one(tmp_path):
    """``instances=2``: two calls run at once on two model instances, with the replies one instance
    gives (greedy decoding, the same threads per instance)."""
    from harness.llm import LLMSession, LLMSettings, user

    requests = [[user(f"Name a colour of the rainbow. ({i})")] for i in range(4)]
    replies = {}
    for spec in ("local:n_ctx=1024,n_threads=1", "local:n_ctx=1024,n_threads=1,instances=2"):
        client = LLMSession(LLMSettings(use_cache=False)).client(spec)
        replies[spec] = [r.text for r in client.map([{"messages": m, "max_tokens": 8} for m in requests])]
        assert client.max_concurrency == client.provider.loaded == client.provider.instances
    first, pooled = replies.values()
    assert pooled == first and all(isinstance(t, str) for t in first)


def test_sampled_replies_get_the_logprobs_of_the_tokens_they_hold(tmp_path):
    """At temperature 1 the last token is sampled, not the most likely one: its logprob entry is the
    token the text holds (one-token replies, several samples)."""
    from harness.llm import get_client, user

    client = get_client("local:n_ctx=1024", cache_dir=str(tmp_path / "cache"))
    not_the_top = 0
    for seed in range(8):
        reply = client.chat([user("Say a word.")], max_tokens=1, temperature=1.0, top_logprobs=3, seed=seed)
        assert [t.token for t in reply.logprobs] == ([reply.text] if reply.text else [])
        for t in reply.logprobs:
            assert t.logprob <= t.top[0].logprob + 1e-9
            not_the_top += t.token != t.top[0].token
    assert not_the_top > 0  # some draw is not the most likely token: the case this test is about
