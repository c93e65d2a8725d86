"""BIRCO in batch mode (``--llm-batch``) against the loopback server through the official SDK:
Reason and Subtask take a round for the criteria and a round for the scores, with the run of direct
mode; a suite submits the first stage of every task before waiting on any, and ``--no-wait`` stops
once for all of them."""

from __future__ import annotations

import pytest
from harness import evaluate
from harness.llm import BatchPending
from harness.testing import TestServer

from harness_birco.data import load_birco

from .test_protocols import Oracle

MODEL = "gpt-4o-mini"


def _context(cache):
    from harness import Context
    from harness.llm import LLMSettings, RetryPolicy

    return Context.create(cache_dir=str(cache), llm=LLMSettings(batch_poll=0.01, retry=RetryPolicy.fast(),
                                                                cache_dir=str(cache)))


@pytest.mark.parametrize("protocol", ["birco-reason", "birco-subtask"])
def test_two_rounds_and_the_run_of_direct_mode(birco_dir, tmp_path, protocol):
    ds = load_birco("arguana", "test").limit(2)
    with TestServer(reply=Oracle(ds)) as srv:
        kw = dict(rerankers=[f"{protocol}:max_requirements=3"] if protocol == "birco-subtask" else [protocol],
                  llm=srv.spec(MODEL, "openai"), limit=2, progress=False)
        direct = evaluate("birco:arguana", context=_context(tmp_path / "direct"), **kw)
        sent = srv.requests_total
        batch = evaluate("birco:arguana", context=_context(tmp_path / "batch"), llm_batch=True, **kw)
        assert srv.requests_total == sent and srv.batch_submissions == 2  # criteria, then scores
        assert srv.batch_requests_total == sent
    assert batch.runs["default"] == direct.runs["default"]
    assert batch.metrics == direct.metrics
    b = batch.usage["models"][f"openai:{MODEL}"]["batch"]
    assert (b["calls"], b["rounds"], b["batches"]) == (sent, 2, 2)


def test_a_suite_submits_every_task_then_waits(birco_dir, tmp_path):
    with TestServer(reply="SCORE: 5", batch_delay=3600) as srv:
        kw = dict(rerankers=["birco-score"], llm=srv.spec(MODEL, "openai"), limit=2, progress=False,
                  context=_context(tmp_path / "cache"), llm_batch=True)
        with pytest.raises(BatchPending, match=r"for 4 task\(s\) of birco") as info:
            evaluate("birco", llm_batch_wait=False, **kw)
        assert srv.batch_submissions == 4 and info.value.batches == 4
        assert info.value.requests == srv.batch_requests_total
        srv.batch_delay = 0
        res = evaluate("birco", **kw)
        assert srv.batch_submissions == 4 and srv.requests_total == 0
    assert set(res.members) == {"birco:arguana", "birco:wtb", "birco:clinical-trial", "birco:relic"}
    assert res.usage["total"]["batch"]["calls"] == srv.batch_requests_total
