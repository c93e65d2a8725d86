"""RankGPT in batch mode (``--llm-batch``) on TREC DL19 against the loopback server through the
official SDK: the sliding window goes out in rounds (window i of every query in one batch), so the
43 queries' 387 windows take 9 submissions and give the run and nDCG@10 of direct mode."""

from __future__ import annotations

import hashlib

import pytest
from harness import evaluate

from .test_dl19 import dl19, window  # noqa: F401 - the fixture

MODEL = "gpt-4o-mini"


def shuffled(request):
    """A fixed permutation per window, from its content: any mix-up of windows or rounds shows."""
    n = len(window(request)[1])
    seed = hashlib.sha256(repr(request["messages"]).encode()).digest()
    order = sorted(range(1, n + 1), key=lambda i: seed[i % len(seed)] * 100 + i)
    return " > ".join(f"[{i}]" for i in order)


def test_batch_mode_gives_the_run_of_direct_mode_in_nine_submissions(dl19, registry, tmp_path):  # noqa: F811
    from harness.testing import TestServer

    with TestServer(reply=shuffled) as srv:
        spec = srv.spec(MODEL, "openai")
        direct = evaluate("trec-dl19", rerankers=["rankgpt"], llm=spec, progress=False,
                          context=_context(registry, tmp_path / "direct"))
        assert srv.requests_total == 387 and srv.batch_submissions == 0
        batch = evaluate("trec-dl19", rerankers=["rankgpt"], llm=spec, progress=False,
                         context=_context(registry, tmp_path / "batch"), llm_batch=True)
        assert srv.requests_total == 387 and srv.batch_submissions == 9
        assert sorted(len(b.requests) for b in srv.batches) == [43] * 9
    assert batch.runs["default"] == direct.runs["default"]
    assert batch.metrics["nDCG@10"] == direct.metrics["nDCG@10"] != pytest.approx(0.5058, abs=1e-3)
    m = batch.usage["models"][f"openai:{MODEL}"]
    assert m["calls"] == 387 and m["batch"] == {**m["batch"], "calls": 387, "batches": 9, "rounds": 9}
    assert m["batch"]["cost_usd"] == pytest.approx(direct.usage["models"][f"openai:{MODEL}"]["cost_usd"] / 2)
    assert m["price"]["batch_input_per_1m"] == m["price"]["input_per_1m"] / 2
    stats = batch.components["rerankers"][0]["stats"]
    assert stats["windows"] == 387 and stats["calls"] == 387 and stats["failed_windows"] == 0


def test_dry_run_estimates_rounds_and_the_batch_price(dl19, registry, tmp_path):  # noqa: F811
    from harness.testing import TestServer

    with TestServer(reply=shuffled) as srv:
        res = evaluate("trec-dl19", rerankers=["rankgpt"], llm=srv.spec(MODEL, "openai"), progress=False,
                       context=_context(registry, tmp_path / "dry"), llm_batch=True, dry_run=True)
        assert srv.requests_total == 0 and srv.batch_submissions == 0
    b = res.usage["models"][f"openai:{MODEL}"]["batch"]
    assert (b["calls"], b["rounds"], b["batches"]) == (387, 9, 0)
    assert b["cost_usd"] == pytest.approx(b["cost_usd_at_direct_price"] / 2) and b["cost_usd"] > 0


def _context(registry, cache):
    from harness import Context
    from harness.llm import LLMSettings, RetryPolicy

    settings = LLMSettings(batch_poll=0.01, retry=RetryPolicy.fast(), cache_dir=str(cache))
    return Context.create(registry=registry, cache_dir=str(cache), llm=settings)
