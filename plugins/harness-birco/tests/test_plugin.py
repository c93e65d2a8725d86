"""Registration through the entry point, and a light import."""

from __future__ import annotations

import subprocess
import sys

import pytest
from harness import PluginHost, evaluate
from harness.testing import ScriptedReply, TestServer


def test_registered_through_entry_point():
    host = PluginHost()
    reg = host.registry
    for kind, names in {
        "task": ["birco", "birco:arguana", "birco:clinical-trial", "birco:relic", "birco:wtb", "birco:doris-mae"],
        "dataset": ["birco"],
        "metric": ["birco-ndcg", "birco-recall"],
        "reranker": ["birco-score", "birco-reason", "birco-subtask", "birco-rank", "birco-random", "birco-ranks"],
    }.items():
        for n in names:
            assert n in reg.names(kind), (kind, n)


def test_import_is_light():
    code = ("import sys, harness_birco; harness_birco.register_rerankers(lambda *a: None); "
            "bad = [m for m in ('numpy', 'openai', 'anthropic', 'torch', 'harness.llm', 'harness_rankgpt', "
            "'harness_birco.pointwise', 'harness_birco.data') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_failed_calls_score_zero_and_are_counted(birco_dir):
    def reply(req):
        last = req["messages"][-1]["content"]
        return ScriptedReply(status=400, error="context length exceeded") if "Passage: " in last and \
            len(last) % 5 == 0 else "SCORE: 2"

    with TestServer(reply=reply) as srv:
        res = evaluate("birco:relic", rerankers=["birco-score"], llm=srv.spec("err"), limit=1, progress=False)
        st = res.components["rerankers"][0]["stats"]
        # a 400 is a transport failure: no reply, so the method was not applied to that pair
        assert st["transport_failures"] > 0 and st["transport_failures"] + st["calls"] == st["pairs"]
        assert sum(st["transport_failures_per_query"].values()) == st["transport_failures"]
        assert st["parse_failures"] == 0 and st["failures_per_query"] == {}
        # ... and the run says so: INCOMPLETE, with the provider's message
        assert not res.complete
        report = res.llm_failures
        assert report["failed"] == st["transport_failures"] == res.usage["total"]["failures"]
        assert report["kinds"] == {"BadRequest 400": st["transport_failures"]}
        assert "context length exceeded" in report["examples"][0]["message"]
        assert report["per_query"] == st["transport_failures_per_query"]


def test_random_baseline_reranker(birco_dir):
    res = evaluate("birco:arguana", rerankers=["birco-random:seed=3"], progress=False)
    assert res.metrics["birco-ndcg@10"] == pytest.approx(4.5436 / 50, abs=0.05)
