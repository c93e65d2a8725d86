"""Compute-aware evaluation (docs/compute.md): each query's LLM calls, tokens, USD and seconds in
``per_query.jsonl`` summing to the run's totals, the reasoning stored with each call and shown by ``harness
view``, ``--sweep`` (one folder per combination, the first stage shared, one cache) and the chart of
effectiveness against compute in ``harness report`` and the viewer (three runs, the Pareto frontier)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.compare.compute_chart import compute_section, pareto, query_deltas
from harness.concepts.errors import HarnessError
from harness.evaluation.sweep import combinations, folder_name, parse_axis, with_arg
from harness.served.query_usage import attribute_calls
from harness.testing import ScriptedReply, TestServer
from harness.testing.llm_server import input_tokens, last_user_text
from harness.view.catalog import Catalog
from harness.view.comparison import compare_payload
from tests.llm_double import parse

pytest.importorskip("openai", reason="needs openai: pip install 'harness-ir[openai]'")

PRICES = ('[models]\n"openai-compatible:judge" = { input = 1.0, output = 4.0 }\n'
          '"anthropic:judge" = { input = 3.0, output = 15.0 }\n')
DECOY = "Yes. Yes. Yes."


def answer_by_effort(req: dict, **shape) -> ScriptedReply:
    """High effort (or a thinking budget): Yes for a document that shares a word with the query; low: always
    No. Every reply reasons, and the reasoning holds a decoy (a Yes that must never be parsed)."""
    text = last_user_text(req)
    query = text.split("\n")[0].lower().split()[1:]
    doc = set(text.split("\n")[1].lower().split())
    high = req.get("reasoning_effort") == "high" or "thinking" in req
    yes = high and any(w in doc for w in query if len(w) > 3)
    return ScriptedReply("Yes" if yes else "No", reasoning=f"{DECOY} effort {req.get('reasoning_effort')}",
                         reasoning_tokens=30 if high else 3, **shape)


def harness_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ})


def eval_args(srv: TestServer, reranker: str, tmp_path: Path, *extra: str) -> list[str]:
    (tmp_path / "prices.toml").write_text(PRICES)
    return ["eval", "--task", "demo", "--reranker", f"{reranker}:depth=5", "--llm", srv.spec("judge"),
            "--cache-dir", str(tmp_path / "cache"), "--prices", str(tmp_path / "prices.toml"), "--quiet", *extra]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- the grammar -----------------------------------------------------------------------------------------------
def test_the_sweep_grammar():
    a = parse_axis("llm.reasoning_effort=low,high")
    assert (a.key, a.values) == ("llm.reasoning_effort", ("low", "high"))
    assert parse_axis('reranker2.x=[1,2],3').values == ("[1,2]", "3")  # commas inside brackets do not split
    for bad, needle in (("llm=low", "expected KEY"), ("reranker.window=", "non-empty"), ("depth=1,1", "twice"),
                        ("model.x=1", "expected KEY")):
        with pytest.raises(HarnessError, match=needle):
            parse_axis(bad)
    combos = combinations([parse_axis("llm.reasoning_effort=low,high"), parse_axis("reranker.window=10,20")])
    assert combos == [{"llm.reasoning_effort": "low", "reranker.window": "10"},
                      {"llm.reasoning_effort": "low", "reranker.window": "20"},
                      {"llm.reasoning_effort": "high", "reranker.window": "10"},
                      {"llm.reasoning_effort": "high", "reranker.window": "20"}]
    with pytest.raises(HarnessError, match="swept twice"):
        combinations([parse_axis("depth=1,2"), parse_axis("depth=3")])


def test_a_combination_replaces_the_argument_and_names_its_folder():
    assert with_arg("rankgpt", "window", "10") == "rankgpt:window=10"
    assert with_arg("rankgpt:window=20,step=5", "window", "10") == "rankgpt:step=5,window=10"
    assert with_arg("ollama:llama3:8b:base_url=http://h:1/v1", "reasoning_effort", "low") == \
        "ollama:llama3:8b:base_url=http://h:1/v1,reasoning_effort=low"
    assert folder_name({"llm.reasoning_effort": "low", "reranker.window": "10"}) == \
        "llm.reasoning_effort=low+reranker.window=10"
    assert folder_name({"llm.x": "../../etc"}) == "llm.x=.._.._etc"  # never a path
    assert "/" not in folder_name({"llm.base_url": "http://a/b"})


# -- the frontier, by hand -------------------------------------------------------------------------------------
def test_the_pareto_frontier():
    #            cheap, low   dearer, higher   dearest, lower   as dear as the 2nd, lower
    pts = [(0.0, 0.50), (1.0, 0.70), (3.0, 0.60), (1.0, 0.65), (2.0, 0.70)]
    assert pareto(pts) == [True, True, False, False, False]
    assert pareto(pts, lower_is_better=True) == [True, False, False, False, False]
    assert pareto([(1.0, 0.5), (1.0, 0.5)]) == [True, True]  # equal points dominate neither


def test_the_deltas_against_the_cheapest_run():
    base = {"a": {"m": 0.5}, "b": {"m": 0.2}, "c": {"m": 0.9}}
    other = {"a": {"m": 0.7}, "b": {"m": 0.2}, "c": {"m": 0.4}}
    llm = [{q: {"cost_usd": 0.0} for q in base}, {"a": {"compute_usd": 0.3}, "b": {"compute_usd": 0.1},
                                                  "c": {"compute_usd": 0.2}}]
    (d,) = query_deltas([base, other], ["cheap", "dear"], "m", 0, llm)
    assert [x["query_id"] for x in d["queries"]] == ["a", "b", "c"]
    assert [round(x["delta"], 6) for x in d["queries"]] == [0.2, 0.0, -0.5]
    assert (d["wins"], d["ties"], d["losses"]) == (1, 1, 1)
    assert [x["query_id"] for x in d["helped"]] == ["a"] and [x["query_id"] for x in d["hurt"]] == ["c"]
    assert d["queries"][0]["extra_usd"] == pytest.approx(0.3)


def test_no_section_without_llm_calls():
    res = [{"metrics": {"m": 0.5}, "usage": {}}, {"metrics": {"m": 0.6}, "usage": {}}]
    assert compute_section(["a", "b"], ["#000", "#111"], res, "m", [{}, {}]) is None


# -- the accounting, by hand -----------------------------------------------------------------------------------
class _Logged:
    def __init__(self, rows: list[dict]) -> None:
        self.call_log = rows


def test_every_call_is_counted_once():
    def row(q, cached=False, error=None, out=10, cost=0.5, seconds=1.0, latency=2.0):
        return {"query_id": q, "cached": cached, "error": error, "input_tokens": 100, "output_tokens": out,
                "reasoning_tokens": out // 2, "cost_usd": 0.0 if cached else cost, "price_usd": cost,
                "seconds": seconds, "latency_s": latency}

    log = [row("q1"), row("q1", cached=True), row("q2", error="LLMTimeout: x", out=0, cost=0.0), row("q9"),
           row(None)]
    total = {"calls": 3, "cache_hits": 1, "failures": 1, "input_tokens": 300, "output_tokens": 30,
             "reasoning_tokens": 15, "cost_usd": 1.5 + 0.25}  # +0.25: a client that logs no calls
    per, summary = attribute_calls([_Logged(log)], total, ["q1", "q2"])
    assert per["q1"]["calls"] == 1 and per["q1"]["cache_hits"] == 1 and per["q1"]["cost_usd"] == 0.5
    assert per["q1"]["compute"] == {"output_tokens": 20, "reasoning_tokens": 10, "usd": 1.0, "seconds": 4.0,
                                    "unknown": 0}  # the hit's reply too: what it took to make
    assert per["q2"]["failures"] == 1 and per["q2"]["calls"] == 0
    assert summary["other_queries"]["calls"] == 1  # q9 has no per_query.jsonl row
    assert summary["unattributed"]["calls"] == 1 and summary["unattributed"]["cost_usd"] == pytest.approx(0.75)
    for k in ("calls", "cache_hits", "failures", "input_tokens", "output_tokens", "reasoning_tokens"):
        assert summary["total"][k] == total[k]
    assert summary["total"]["cost_usd"] == pytest.approx(total["cost_usd"])
    assert summary["total"]["seconds"] == pytest.approx(5.0)


# -- end to end: per query, reasoning, the viewer ---------------------------------------------------------------
def test_per_query_costs_sum_to_the_totals_and_reasoning_is_never_parsed(tmp_path, llm_double):
    with TestServer(answer_by_effort) as srv:
        out = tmp_path / "high"
        res = harness_cli(*eval_args(srv, llm_double, tmp_path, "--llm", srv.spec("judge") + ",reasoning_effort=high",
                                     "-o", str(out)))
        assert res.returncode == 0, res.stderr
        sent = list(srv.requests)
    assert sent and all(r["reasoning_effort"] == "high" for r in sent)
    data = json.loads((out / "results.json").read_text())
    per = {r["query_id"]: r["llm"] for r in rows(out / "per_query.jsonl")}
    # each query's input tokens, by the server's own count of the requests that named its text
    queries = {r["query_id"]: f"{r['text']} {r['instruction']}" for r in rows(out / "queries.jsonl")}  # demo's format
    for qid, text in queries.items():
        mine = [b for b in sent if last_user_text(b).split("\n")[0] == f"Query: {text}"]
        assert per[qid]["calls"] == len(mine) == 5
        assert per[qid]["input_tokens"] == sum(input_tokens(b) for b in mine)
    total, summary = data["usage"]["total"], data["usage"]["per_query"]
    for k in ("calls", "input_tokens", "output_tokens", "reasoning_tokens"):
        assert sum(p[k] for p in per.values()) == total[k] == summary["total"][k]
    assert sum(p["cost_usd"] for p in per.values()) == pytest.approx(total["cost_usd"])
    assert summary["unattributed"]["calls"] == 0 and summary["other_queries"]["calls"] == 0
    assert total["reasoning_tokens"] == 30 * total["calls"]
    # the reasoning is with each call, and the decoy Yes in it changed nothing: the replies' own text decides
    calls = rows(out / "llm_calls.jsonl")
    assert len(calls) == total["calls"] and all(c["reasoning"].startswith(DECOY) for c in calls)
    yes = sum(1 for b in sent if answer_by_effort(b).text == "Yes")
    assert data["components"]["rerankers"][0]["stats"]["parse_failures"] == 0
    assert yes < len(sent) and parse(ScriptedReply(DECOY)) == 1.0  # the decoy would have parsed as Yes
    q = Catalog([out], cache_dir=tmp_path / "cache").query_payload("r1", next(iter(queries)))
    assert q["llm_calls"] and all(c["reasoning"].startswith(DECOY) and c["reply"] in ("Yes", "No")
                                  for c in q["llm_calls"])


@pytest.mark.parametrize("shape", [{}, {"reasoning_field": "reasoning"}, {"think_in_content": True}],
                         ids=["reasoning_content", "reasoning", "think-in-content"])
def test_a_decoy_in_the_reasoning_does_not_change_the_run(tmp_path, llm_double, shape):
    def plain(req):
        return ScriptedReply(answer_by_effort(req).text)

    outs = {}
    for name, script in (("with", lambda req: answer_by_effort(req, **shape)), ("without", plain)):
        with TestServer(script) as srv:
            spec, home = srv.spec("judge") + ",reasoning_effort=high", tmp_path / name
            home.mkdir()
            res = harness_cli(*eval_args(srv, llm_double, home, "--llm", spec, "-o", str(home / "o")))
            assert res.returncode == 0, res.stderr
        outs[name] = (tmp_path / name / "o" / "run.trec").read_text()
    assert outs["with"] == outs["without"]
    calls = rows(tmp_path / "with" / "o" / "llm_calls.jsonl")
    assert calls and all(c["reasoning"].startswith(DECOY) for c in calls)


def test_anthropic_thinking_end_to_end(tmp_path, llm_double):
    """The budget and the larger max_tokens in every request, the thinking blocks stored and never parsed,
    the thinking tokens per query summing to the totals; a warm rerun sends nothing, another budget anew."""
    pytest.importorskip("anthropic", reason="needs anthropic: pip install 'harness-ir[anthropic]'")
    with TestServer(answer_by_effort) as srv:
        base = srv.spec("judge", "anthropic")
        for budget, out in ((2048, "a"), (2048, "b"), (4096, "c")):
            res = harness_cli(*eval_args(srv, llm_double, tmp_path, "--llm", f"{base},thinking_budget={budget}",
                                         "-o", str(tmp_path / out)))
            assert res.returncode == 0, res.stderr
        bodies = list(srv.requests)
    assert len(bodies) == 2 * 50  # 10 queries x depth 5, for 2048 then for 4096; the rerun sent none
    assert [b["thinking"]["budget_tokens"] for b in bodies] == [2048] * 50 + [4096] * 50
    assert all(b["max_tokens"] == b["thinking"]["budget_tokens"] + 1 for b in bodies)  # llm-double's cap is 1
    data = json.loads((tmp_path / "a" / "results.json").read_text())
    per = [r["llm"] for r in rows(tmp_path / "a" / "per_query.jsonl")]
    assert data["usage"]["total"]["reasoning_tokens"] == 30 * 50 == sum(p["reasoning_tokens"] for p in per)
    assert sum(p["cost_usd"] for p in per) == pytest.approx(data["usage"]["total"]["cost_usd"])
    assert json.loads((tmp_path / "b" / "results.json").read_text())["usage"]["total"]["calls"] == 0
    calls = rows(tmp_path / "a" / "llm_calls.jsonl")
    assert all(c["reasoning"].startswith(DECOY) for c in calls)
    assert data["components"]["rerankers"][0]["stats"]["parse_failures"] == 0


# -- sweeps and the chart ---------------------------------------------------------------------------------------
def test_a_sweep_scores_against_the_qrels_given_as_harness_eval_does(tmp_path, llm_double):
    """--qrels reaches every combination, the one that shares the first stage too, with the load's counts."""
    from harness.api import load_dataset
    from harness.formats.qrels_file import write_qrels

    qrels = load_dataset("demo").qrels["default"]  # each query's judged documents, the grades reversed
    top = {q: max(g.values()) for q, g in qrels.items()}
    other = write_qrels(tmp_path / "other.qrels", [(q, d, top[q] - g) for q, docs in qrels.items()
                                                    for d, g in docs.items()])
    with TestServer(answer_by_effort) as srv:
        res = harness_cli(*eval_args(srv, llm_double, tmp_path, "--sweep", "llm.reasoning_effort=low,high",
                                     "--qrels", str(other), "-o", str(tmp_path / "sweep")))
        assert res.returncode == 0, res.stderr
        for effort in ("low", "high"):
            for name, extra in ((f"plain-{effort}", ()), (f"given-{effort}", ("--qrels", str(other)))):
                one = harness_cli(*eval_args(srv, llm_double, tmp_path, "--llm",
                                             srv.spec("judge") + f",reasoning_effort={effort}", *extra,
                                             "-o", str(tmp_path / name)))
                assert one.returncode == 0, one.stderr
    read = {f.name: json.loads((f / "results.json").read_text()) for f in (tmp_path / "sweep").iterdir()}
    for effort in ("low", "high"):
        swept = read[f"llm.reasoning_effort={effort}"]
        given, plain = (json.loads((tmp_path / f"{n}-{effort}" / "results.json").read_text())
                        for n in ("given", "plain"))
        assert swept["metrics"] == given["metrics"] != plain["metrics"]
        assert swept["counts"]["unknown_ids"] == given["counts"]["unknown_ids"]
    assert read["llm.reasoning_effort=high"]["sweep"]["first_stage"] == "shared with llm.reasoning_effort=low"


def test_a_sweep_writes_a_folder_per_value_and_the_report_charts_three_runs(tmp_path, llm_double):
    pytest.importorskip("jinja2", reason="needs jinja2: pip install 'harness-ir[report]'")
    with TestServer(answer_by_effort) as srv:
        res = harness_cli(*eval_args(srv, llm_double, tmp_path, "--sweep", "llm.reasoning_effort=low,high",
                                     "-o", str(tmp_path / "sweep")))
        assert res.returncode == 0, res.stderr
        first = srv.requests_total
        efforts = [r["reasoning_effort"] for r in srv.requests]
        again = harness_cli(*eval_args(srv, llm_double, tmp_path, "--sweep", "llm.reasoning_effort=low,high",
                                       "-o", str(tmp_path / "sweep"), "--overwrite"))
        assert again.returncode == 0 and srv.requests_total == first  # warm: nothing sent
    assert efforts.count("low") == efforts.count("high") == first // 2
    low, high = tmp_path / "sweep" / "llm.reasoning_effort=low", tmp_path / "sweep" / "llm.reasoning_effort=high"
    d_low, d_high = (json.loads((f / "results.json").read_text()) for f in (low, high))
    assert d_low["sweep"]["values"] == {"llm.reasoning_effort": "low"} and d_low["sweep"]["first_stage"] == "computed"
    assert d_high["sweep"]["first_stage"] == f"shared with {low.name}"
    assert d_high["components"]["rerankers"][0]["llm"]["settings"]["reasoning_effort"] == {"value": "high",
                                                                                            "from": "llm spec"}
    assert (low / "run.first_stage.trec").read_text() == (high / "run.first_stage.trec").read_text()
    assert "llm.reasoning_effort=high" in again.stdout
    bm25 = tmp_path / "bm25"
    assert harness_cli("eval", "--task", "demo", "-o", str(bm25), "--quiet").returncode == 0
    report = tmp_path / "report.html"
    made = harness_cli("report", str(low), str(high), str(bm25), "-o", str(report), "-B", "100")
    assert made.returncode == 0, made.stderr
    html = report.read_text()
    assert html.count('<figure class="compute-chart"') == 3  # USD, output tokens, LLM seconds
    points = [(json.loads((f / "results.json").read_text()), f.name) for f in (low, high, bm25)]
    usd = [(p["usage"]["per_query"]["total"]["compute"]["usd"] if p["usage"] else 0.0, p["metrics"]["nDCG@10"])
           for p, _ in points]
    want = {name for (_, name), on in zip(points, pareto(usd)) if on}  # by hand from the three results
    chart = html.split('data-axis="usd"')[1].split("</figure>")[0]
    assert chart.count('<circle class="point') == 3
    assert {n for n in (p[1] for p in points) if f'data-system="{n}" data-frontier="yes"' in chart} == want
    # the viewer's compare page: the same computation
    view = compare_payload(Catalog([low, high, bm25]), ["r1", "r2", "r3"], permutations=100)["compute"]
    usd_chart = next(c for c in view["charts"] if c["key"] == "usd")
    names = {"r1": low.name, "r2": high.name, "r3": bm25.name}
    assert len(usd_chart["dots"]) == 3
    assert {next(v for k, v in names.items() if d["system"].startswith(k + ":")) for d in usd_chart["dots"]
            if d["frontier"]} == want
    assert view["cheapest"].startswith("r3:")  # bm25: no LLM call, no cost
