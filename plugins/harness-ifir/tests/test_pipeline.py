"""`harness eval --task ifir:fiqa --judge instfol` on the fixture through `harness.evaluate` and the
CLI, with the loopback server as the LLM; a second retriever sends only the judgments not yet made."""

from __future__ import annotations

import json
import zlib

import pytest
from harness import HarnessError, evaluate
from harness.testing import TestServer


def reply(request):
    """A fixed, content-dependent score 0-3 (so both modes' rankings get varied scores)."""
    user = request["messages"][-1]["content"]
    return json.dumps({"score": zlib.crc32(user.encode()) % 4, "reason": "scripted"})


def judged_pairs(result, depth):
    """Per mode, the (judge instruction, document) pairs a result's judge had to judge."""
    out = {}
    for mode, run in result.runs.items():
        out[mode] = set()
        for q in run:
            instr = result.dataset.queries[mode][q].meta["judge_instruction"]
            out[mode] |= {(instr, d) for d in run.doc_ids(q)[:depth]}
    return out


def check_second_retriever_sends_only_new(registry, tmp_path, first_retriever, second_retriever):
    with TestServer(reply=reply) as srv:
        kw = dict(judge="instfol:depth=3", llm=srv.spec("gpt-judge"), registry=registry, progress=False)
        first = evaluate("ifir:fiqa", retriever=first_retriever, output=str(tmp_path / "first"), **kw)
        per_mode1 = judged_pairs(first, 3)
        pairs1 = set().union(*per_mode1.values())
        assert srv.requests_total == srv.unique_requests == len(pairs1)
        m = first.metrics
        for key in ("nDCG@20[query]", "nDCG@20[instructed]", "instfol", "instfol_L1", "instfol_L2", "instfol_L3"):
            assert key in m and m[key] == m[key], key
        assert m["instfol"] == pytest.approx((m["instfol_L1"] + m["instfol_L2"] + m["instfol_L3"]) / 3)
        assert first.counts["judge_failures"] == {"query": 0, "instructed": 0}
        data = json.loads((tmp_path / "first" / "results.json").read_text())
        judge_cfg = data["components"]["judge"]
        assert judge_cfg["depth"] == 3 and judge_cfg["prompt_version"] == "v1"
        assert judge_cfg["stats"]["calls"] == data["usage"]["total"]["calls"] == len(pairs1)
        lines = (tmp_path / "first" / "judgments.jsonl").read_text().splitlines()
        assert len(lines) == 2 * 5 * 3  # 2 modes x 5 instructions x top 3

        before = srv.requests_total
        second = evaluate("ifir:fiqa", retriever=second_retriever, **kw)
        per_mode2 = judged_pairs(second, 3)
        pairs2 = set().union(*per_mode2.values())
        new = pairs2 - pairs1
        assert new and pairs2 & pairs1  # the case is not trivial: some documents are new, some were judged
        assert srv.requests_total - before == len(new)  # only documents not yet judged are sent
        assert second.components["judge"]["stats"]["calls"] == len(new)
        assert second.usage["total"]["cache_hits"] == sum(len(p) for p in per_mode2.values()) - len(new)
        assert second.metrics["instfol"] != first.metrics["instfol"]


def test_eval_then_a_second_retriever_sends_only_new_judgments(registry, tmp_path):
    check_second_retriever_sends_only_new(registry, tmp_path, "bm25", "bm25:k1=0.3,b=0.0,stemmer=null,stopwords=null")


@pytest.mark.slow
def test_dense_then_bm25(registry, tmp_path, monkeypatch):
    """The issue's command: ``--retriever dense`` (packaged all-MiniLM-L6-v2), then a second retriever."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check_second_retriever_sends_only_new(registry, tmp_path, "dense", "bm25")


def test_cli_eval(tmp_path):
    from click.testing import CliRunner
    from harness import PluginHost
    from harness.cli import cli

    if "ifir:fiqa" not in PluginHost().registry.components["task"]:  # the CLI loads installed plugins
        pytest.skip("the CLI sees installed plugins only: pip install -e plugins/harness-ifir --no-deps")
    with TestServer(reply=reply) as srv:
        res = CliRunner().invoke(cli, ["eval", "--task", "ifir:fiqa", "--retriever", "bm25", "--judge", "instfol",
                                        "--llm", srv.spec("gpt-judge"), "--json", "--quiet"])
        assert res.exit_code == 0, res.output
        metrics = json.loads(res.output[res.output.index("{"):])
        assert "instfol" in metrics and "nDCG@20[instructed]" in metrics
        assert srv.requests_total > 0


def test_suite_averages_over_subsets(registry):
    from harness import Task

    with TestServer(reply=reply) as srv:
        suite = Task(name="ifir-mini", tasks=["ifir:fiqa", "ifir:nfcorpus"], first_stage="retrieve")
        res = evaluate(suite, retriever="bm25", judge="instfol:depth=2", llm=srv.spec("gpt-judge"), registry=registry,
                       progress=False)
    per = res.per_task
    assert "instfol_L1" not in per["ifir:nfcorpus"]  # no levels there: the mean over its queries
    # the counts are no metrics, so the suite does not average them
    assert not any(k.endswith(("_queries", "_queries_skipped", "_positions_dropped")) for k in res.metrics)
    assert set(res.members["ifir:fiqa"].metric_details) == {"instfol_queries", "instfol_queries_skipped",
                                                           "instfol_positions_dropped"}
    assert res.metrics["instfol"] == pytest.approx((per["ifir:fiqa"]["instfol"] + per["ifir:nfcorpus"]["instfol"]) / 2)


def test_without_a_judge_instfol_is_left_out(registry):
    res = evaluate("ifir:fiqa", retriever="bm25", registry=registry, progress=False)
    assert "nDCG@20[query]" in res.metrics and "instfol" not in res.metrics


def test_nv_embed_without_weights_fails_clearly(registry, tmp_path, monkeypatch):
    if "nv-embed" not in registry.components["retriever"]:
        pytest.skip("harness-nv-embed is not installed: pip install -e plugins/harness-nv-embed --no-deps")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "st"))  # an empty model cache
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with TestServer(reply=reply) as srv:
        with pytest.raises(HarnessError) as err:
            evaluate("ifir:fiqa", retriever="plugin:nv-embed", judge="instfol", llm=srv.spec("gpt-judge"),
                     registry=registry, progress=False)
        assert srv.requests_total == 0
    msg = str(err.value)
    assert msg.startswith("nv-embed:") and "nvidia/NV-Embed-v2" in msg


def test_judge_llm_from_its_own_spec(registry):
    with TestServer(reply=reply) as srv:
        res = evaluate("ifir:nfcorpus", retriever="bm25", judge=f'instfol:llm="{srv.spec("own-judge")}",depth=2',
                       registry=registry, progress=False)
        assert srv.requests_total == len({d for r in res.runs.values() for d in r.doc_ids("PLAIN-1")[:2]})
        assert {r["model"] for r in srv.requests} == {"own-judge"}
    assert res.components["judge"]["llm"]["model"] == "own-judge" and "instfol" in res.metrics


def test_instfol_at_k_keeps_its_own_key(registry):
    """``-m instfol -m instfol@2``: the @2 figures are stored under their own keys, not over the @20 ones."""
    with TestServer(reply=reply) as srv:
        res = evaluate("ifir:fiqa", retriever="bm25", judge="instfol:depth=3", metrics=["instfol", "instfol@2"],
                       llm=srv.spec("gpt-judge"), registry=registry, progress=False)
    m = res.metrics
    for key in ("instfol", "instfol_L1", "instfol@2", "instfol@2_L1"):
        assert key in m, key
    # counts are details, not metrics
    assert "instfol@2_queries" in res.metric_details and not any(k.endswith("_queries") for k in m)
    # depth 3 judged: instfol (cut 20) uses all 3 positions, instfol@2 only the top 2, so they differ in general
    per = res.per_query
    assert all({"instfol", "instfol@2"} <= set(v) for v in per.values())
    assert any(v["instfol"] != v["instfol@2"] for v in per.values())
