"""`evaluate` is a composition of named stages (harness/evaluation/stages.py): the stages called by
hand give the same result; `harness.score` and `evaluate` merge metric results through the one
`apply_metrics`; a suite's usage is added up through `Usage`."""

from __future__ import annotations

import pytest

from harness import (
    Context,
    Dataset,
    Document,
    Judgment,
    Judgments,
    MetricInput,
    MetricResult,
    Qrels,
    Query,
    Run,
    Task,
    Uncertainty,
    evaluate,
    hookimpl,
    score,
)
from harness.evaluation import stages
from harness.evaluation.options import ComponentSpecs, EvalOptions
from harness.metrics.resolve import resolve_metrics
from harness.served.request_errors import LLMError
from harness.served.types import Reply, TokenCounts
from harness.served.usage import MAX_EXAMPLES, Usage, sum_reports
from harness.testing import plugin_registry

DOCS = {f"d{i}": Document(f"d{i}", text) for i, text in enumerate([
    "lobster roll with butter", "crab bisque soup", "lobster lobster lobster", "butter and bread",
    "a roll of bread", "soup of the day", "fishing boats", "boats in the harbour"])}
QRELS = Qrels({"q1": {"d0": 2, "d4": 1}, "q2": {"d1": 1}, "q3": {"d3": 1, "d4": 1}})


def _dataset() -> Dataset:
    """Two modes (the second with an instruction), an excluded document for q1."""
    queries = {"plain": {"q1": Query("q1", "lobster roll butter"), "q2": Query("q2", "lobster soup"),
                         "q3": Query("q3", "bread")},
               "told": {"q1": Query("q1", "lobster roll butter", "not soup"), "q2": Query("q2", "lobster soup", "a"),
                        "q3": Query("q3", "bread", "butter")}}
    ds = Dataset("food", dict(DOCS), queries, {"plain": QRELS, "told": QRELS}, identity={"name": "food"})
    ds.excluded = {"q1": frozenset({"d2"})}
    return ds


class Reverse:
    """Reverses the ranking it is given (ties everywhere: the pipeline makes scores strict)."""

    def rerank(self, queries, run, corpus):
        return Run({q: [(d, 1.0) for d in reversed(run.doc_ids(q))] for q in run})


class TopTwoRelevant:
    def judge(self, queries, run, corpus):
        out = Judgments()
        for q in run:
            for d in run.doc_ids(q)[:2]:
                out.add(Judgment(q, d, None if d == "d5" else float(QRELS.get(q, {}).get(d, 0) > 0), {}))
        return out


class FirstHit:
    """Per mode: 1 when the first document is relevant, with an uncertainty, a detail and a note."""

    per_mode = True
    names = ["first-hit"]

    def compute(self, inp: MetricInput) -> MetricResult:
        (mode, run), = inp.runs.items()
        per = {q: {"first-hit": float(inp.qrels[mode].get(q, {}).get(run.doc_ids(q)[0], 0) > 0)} for q in run}
        value = sum(v["first-hit"] for v in per.values()) / len(per)
        return MetricResult({"first-hit": value}, per, {"first-hit": Uncertainty(n=len(per))},
                            {"first-hit:queries": len(per)}, {"first-hit": f"{mode} mode"})


class Moved:
    """Across modes: the share of queries whose top document differs between the modes."""

    per_mode = False
    names = ["moved"]

    def compute(self, inp: MetricInput) -> MetricResult:
        a, b = inp.runs["plain"], inp.runs["told"]
        per = {q: {"moved": float(a.doc_ids(q)[0] != b.doc_ids(q)[0])} for q in a}
        return MetricResult({"moved": sum(v["moved"] for v in per.values()) / len(per)}, per)


class _Plugin:
    @hookimpl
    def register_datasets(self, register):
        register("food", _dataset, "two modes")

    @hookimpl
    def register_metrics(self, register):
        register("first-hit", FirstHit, "test")
        register("moved", Moved, "test")


TASK = Task(name="food", dataset="food", first_stage="retrieve", retriever="bm25", depth=4,
            metrics=["nDCG@3", "first-hit", "moved"])


def _by_hand(registry) -> object:
    """evaluate(TASK, rerankers=[Reverse(), Reverse()], judge=TopTwoRelevant()), one stage at a time."""
    ctx = Context.create(registry=registry).for_evaluation()
    ledger = stages.Ledger()
    metrics = resolve_metrics(ctx.registry, TASK.metrics)
    comps = stages.build_components(ctx, TASK, ComponentSpecs(None, (Reverse(), Reverse()), TopTwoRelevant()))
    ds = stages.load(ctx, TASK, None, ledger, progress=False)
    depth = stages.settle_first_stage(comps, TASK, ds, None)
    stages.index(comps, ds, ledger, progress=False)
    ranked = stages.Rankings()
    for mode in ds.modes:
        queries = stages.task_queries(ds, mode, TASK.query_format)
        run = stages.first_stage(comps, ds, mode, queries, depth, ledger)
        ranked.first_stage[mode] = stages.kept(run, "first_stage")
        ranked.runs[mode] = stages.rerank(comps, ds, mode, queries, run, ledger)
        ranked.judgments[mode] = stages.judge(comps, ds, mode, queries, ranked.runs[mode], ledger)
    stages.account(comps, ds, ranked.runs, ledger)
    with ledger.timed("metrics"):
        scores = stages.apply_metrics(metrics, ranked.runs, ds, ranked.judgments)
        comps.describe_metrics(metrics)
    return stages.assemble_result(ctx, TASK, ds, comps, ranked, scores, ledger, EvalOptions())


def _comparable(result) -> dict:
    out = result.to_dict()
    del out["created"]
    out["timings"] = list(out["timings"])  # the same stages, in the same order; seconds differ
    out["runs"] = {m: {q: r[q] for q in r} for m, r in result.runs.items()}
    out["first_stage_runs"] = {m: {q: r[q] for q in r} for m, r in result.first_stage_runs.items()}
    out["judgments"] = {m: sorted((j.query_id, j.doc_id, j.score) for j in js.values())
                        for m, js in result.judgments.items()}
    out["per_query"] = result.per_query
    return out


def test_the_stages_by_hand_give_evaluate_s_result():
    registry = plugin_registry(_Plugin())
    result = evaluate(TASK, rerankers=[Reverse(), Reverse()], judge=TopTwoRelevant(), registry=registry,
                      progress=False)
    assert _comparable(_by_hand(registry)) == _comparable(result)
    # what the stages did, checked against the retriever alone
    alone = evaluate(TASK, metrics=["nDCG@3"], registry=registry, progress=False)
    for mode in ("plain", "told"):
        for q in ("q1", "q2", "q3"):  # reversed twice: the first stage's order, excluded d2 never back
            assert result.first_stage_runs[mode].doc_ids(q) == alone.runs[mode].doc_ids(q)
            assert result.runs[mode].doc_ids(q) == alone.runs[mode].doc_ids(q)
        assert "d2" not in alone.runs[mode].doc_ids("q1") and len(alone.runs[mode].doc_ids("q1")) == 4
    assert list(result.timings) == ["load", "index", *(f"{stage}[{m}]" for m in ("plain", "told") for stage in (
        "retrieve", "rerank object:Reverse", "judge")), "metrics", "total"]
    assert result.counts["scores_made_strict"] == [f"object:Reverse[{m}]" for m in ("plain", "told") for _ in "12"]


def test_apply_metrics_suffixes_per_mode_results_and_merges_cross_mode_ones():
    ds = _dataset()
    runs = {"plain": Run({"q1": [("d0", 2.0), ("d1", 1.0)], "q2": [("d3", 1.0)], "q3": [("d3", 1.0)]}),
            "told": Run({"q1": [("d1", 2.0), ("d0", 1.0)], "q2": [("d1", 1.0)], "q3": [("d3", 1.0)]})}
    res = stages.apply_metrics([FirstHit(), Moved()], runs, ds)
    # first documents, plain / told: q1 d0 (relevant) / d1 (not); q2 d3 (not) / d1 (relevant); q3 d3 / d3
    assert res.aggregate == {"first-hit[plain]": pytest.approx(2 / 3), "first-hit[told]": pytest.approx(2 / 3),
                             "moved": pytest.approx(2 / 3)}
    assert res.per_query["q2"] == {"first-hit[plain]": 0.0, "first-hit[told]": 1.0, "moved": 1.0}
    assert res.uncertainty["first-hit[told]"].n == 3 and res.details == {"first-hit:queries[plain]": 3,
                                                                          "first-hit:queries[told]": 3}
    assert res.notes == {"first-hit[plain]": "plain mode", "first-hit[told]": "told mode"}
    one = Dataset.single("one", dict(DOCS), ds.queries["plain"], QRELS)  # one mode: names without [mode]
    assert stages.apply_metrics([FirstHit()], {"default": runs["plain"]}, one).aggregate == {
        "first-hit": pytest.approx(2 / 3)}


def test_score_and_evaluate_give_the_same_metrics():
    registry = plugin_registry(_Plugin())
    names = ["nDCG@10", "MRR@10", "P@5", "R@100", "first-hit"]
    result = evaluate("demo", metrics=names, registry=registry, progress=False)
    scored = score(result.dataset.qrels["default"], result.runs["default"], names,
                   context=Context.create(registry=registry))
    assert scored.aggregate == result.metrics and scored.per_query == result.per_query
    assert scored.uncertainty == result.uncertainty and scored.details == result.metric_details
    assert result.metrics["nDCG@10"] == pytest.approx(0.7491, abs=5e-5)  # the published demo figure


def _member(calls: int, failures: int, batch: bool, label: str = "openai:gpt-4o-mini") -> Usage:
    u = Usage()
    for i in range(calls):
        u.record_call(label, Reply("ok", usage=TokenCounts(100 + i, 10)), batch=batch)
    u.record_hit(label, Reply("ok", usage=TokenCounts(7, 1)))
    for i in range(failures):
        u.record_failure(label, LLMError(f"failure {i}"))
    if batch:
        u.record_batch(label, 1000)
        u.record_round(label)
    return u


def test_a_suite_s_usage_is_added_up_through_usage():
    a, b = _member(3, 4, batch=False), _member(2, 3, batch=True)
    unpriced = _member(1, 0, batch=False, label="openai-compatible:m")
    reports = [a.as_dict(), {}, b.as_dict(), unpriced.as_dict()]
    total = sum_reports(reports)
    assert total["members"] == 3 and total["dry_run"] is False
    m = total["models"]["openai:gpt-4o-mini"]
    assert (m["calls"], m["cache_hits"], m["failures"]) == (5, 2, 7)
    assert m["input_tokens"] == (100 + 101 + 102) + (100 + 101) and m["cached_input_tokens"] == 14
    assert m["errors"] == {"LLMError": 7} and len(m["failure_examples"]) == MAX_EXAMPLES
    assert m["batch"]["calls"] == 2 and m["batch"]["batches"] == 1 and m["batch"]["bytes_uploaded"] == 1000
    cost = a.cost("openai:gpt-4o-mini") + b.cost("openai:gpt-4o-mini")
    assert m["cost_usd"] == pytest.approx(cost) and cost > 0
    assert "cost_usd" not in total["models"]["openai-compatible:m"]  # no price: nothing to add up
    assert total["total"]["calls"] == 6 and total["total"]["failure_kinds"] == {"LLMError": 7}
    assert total["total"]["cost_usd"] == pytest.approx(cost)
    assert total["total"]["batch"] == {"calls": 2, "batches": 1, "rounds": 1, "bytes_uploaded": 1000}
    merged = Usage.merged([a, b, unpriced])  # the same counts as the objects merged directly
    assert total["total"]["input_tokens"] == merged.total().input_tokens
    assert sum_reports([{}, {}]) == {}
