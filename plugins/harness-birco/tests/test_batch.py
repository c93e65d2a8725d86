"""BIRCO in batch mode (``--llm-batch``) against the loopback server through the official SDK:
Reason and Subtask take a round for the criteria and a round for the scores, with the run of direct
mode; a suite submits the first stage of every task before waiting on any, and ``--no-wait`` stops
once for all of them."""

from __future__ import annotations

from collections import Counter

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


def test_a_suite_waits_on_its_tasks_together(birco_dir, tmp_path):
    """BIRCO Reason over the suite: after the first pass has submitted every task's criteria, the
    tasks wait together, so each submits its scores as soon as its criteria are in. Every scores batch
    is held until all four exist (or it has been looked at 200 times): waiting on the tasks one after
    another would end the first one's scores batch while the others' were not yet submitted."""
    released: dict[str, int] = {}
    looks: Counter[str] = Counter()

    def hold(rec) -> bool:
        n = srv.batch_submissions
        if rec.ordinal <= 4:  # the criteria batches of the first pass: all four, then they may end
            return n < 4
        looks[rec.id] += 1
        held = n < 8 and looks[rec.id] < 200
        if not held:
            released.setdefault(rec.id, n)
        return held

    with TestServer(reply="SCORE: 5", batch_hold=hold) as srv:
        res = evaluate("birco", rerankers=["birco-reason"], llm=srv.spec(MODEL, "openai"), limit=2, progress=False,
                       context=_context(tmp_path / "cache"), llm_batch=True)
        assert srv.batch_submissions == 8 and srv.requests_total == 0
    assert sorted(released.values()) == [8, 8, 8, 8], released  # each scores batch ended after all were submitted
    assert set(res.members) == {"birco:arguana", "birco:wtb", "birco:clinical-trial", "birco:relic"}
    for member in res.members.values():  # one evaluation each: what it submitted and collected, once
        m = member.usage["models"][f"openai:{MODEL}"]
        assert (m["batch"]["batches"], m["batch"]["rounds"], m["cache_hits"]) == (2, 2, 0)
        assert m["calls"] == m["batch"]["calls"] > 0
    assert res.usage["total"]["batch"]["calls"] == srv.batch_requests_total


def test_a_failing_member_stops_the_others_waiting(birco_dir, tmp_path):
    """A member's error (here every WhatsThatBook request is refused with a 401 inside its batch) is
    raised at once; the other members, whose batches are held, stop waiting and leave their batches
    pending in the journal. A held batch is released after 2,000 looks, so a wait that does not stop
    shows as a count, not a hang."""
    import json
    import subprocess
    import sys
    import threading

    from harness.llm import AuthError
    from harness.testing import ScriptedReply

    book = "remember the name of a specific book"
    looks: Counter[str] = Counter()

    def is_wtb(rec) -> bool:
        return book in json.dumps(rec.requests[0][1])

    def hold(rec) -> bool:
        looks[rec.id] += 1
        return not is_wtb(rec) and looks[rec.id] < 2000

    def reply(req):
        return ScriptedReply(status=401, error="invalid x-api-key") if book in json.dumps(req) else "SCORE: 5"

    with TestServer(reply=reply, batch_hold=hold) as srv:
        with pytest.raises(AuthError, match="invalid x-api-key"):
            evaluate("birco", rerankers=["birco-score"], llm=srv.spec(MODEL, "openai"), limit=2, progress=False,
                     context=_context(tmp_path / "cache"), llm_batch=True)
        for thread in [t for t in threading.enumerate() if t.name.startswith("harness-suite-")]:
            thread.join(120)
            assert not thread.is_alive()
        assert srv.batch_submissions == 4
        held = [r for r in srv.batches if not is_wtb(r)]
        assert len(held) == 3 and all(looks[r.id] < 2000 for r in held)
    journal = subprocess.run([sys.executable, "-m", "harness.cli", "batch", "status", "--all", "--offline",
                              "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, timeout=300)
    rows = [line.split() for line in journal.stdout.splitlines() if line.startswith("batch_")]
    assert sorted(row[2] for row in rows) == ["collected", "submitted", "submitted", "submitted"], journal.stdout
