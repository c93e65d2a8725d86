"""The flow with several modes, a reranker chain, a judge and a cross-mode metric, through
in-process plugins registered on a fresh PluginHost (the same path entry points take)."""

from __future__ import annotations

import json
import types

import pytest

from harness import Dataset, Document, Judgment, Judgments, MetricResult, Qrels, Query, Run
from harness.concepts.errors import DataError, HarnessError
from harness.concepts.task import Task
from harness.evaluation.pipeline import evaluate
from harness.plugins.hookspecs import hookimpl
from harness.plugins.host import PluginHost


def _dataset() -> Dataset:
    corpus = {
        "zh": Document("zh", "糖尿病是一种慢性疾病 diabetes chinese", "糖尿病"),
        "en": Document("en", "Diabetes is a chronic disease affecting blood sugar. english", "Diabetes"),
        "x": Document("x", "Photosynthesis converts light into chemical energy."),
    }
    q = "What is diabetes?"
    queries = {
        "og": {"q1": Query("q1", q)},
        "changed": {"q1": Query("q1", q, "Please answer in English.")},
        "reversed": {"q1": Query("q1", q, "Please use a language other than English.")},
    }
    qrels = {
        "og": Qrels({"q1": {"zh": 1, "en": 1}}),
        "changed": Qrels({"q1": {"zh": 0, "en": 1}}),
        "reversed": Qrels({"q1": {"zh": 1, "en": 0}}),
    }
    return Dataset("lang", corpus, queries, qrels, identity={"name": "lang"})


class Keyword:
    """Scores 1 for documents containing 'english' when the query mentions English."""

    def index(self, corpus):
        self.corpus = corpus

    def search(self, queries, k):
        return Run.from_scores({q: {d: float(("english" in t.lower()) == ("english" in doc.text)) + 0.1 * (d == "zh")
                                    for d, doc in self.corpus.items()} for q, t in queries.items()}).top(k)


class Swap:
    def rerank(self, queries, run, corpus):
        assert all(q.meta["query"] == "What is diabetes?" for q in queries.values())
        return Run({q: [(d, 1.0) for d in reversed(run.doc_ids(q))] for q in run})  # ties: pipeline fixes


class FirstIsGold:
    def __init__(self, depth: int = 2):
        self.depth = depth

    def judge(self, queries, run, corpus):
        out = Judgments()
        for q in run:
            for d in run.doc_ids(q)[: self.depth]:
                out.add(Judgment(q, d, None if d == "x" else 1.0, {"raw": "ok"}))
        return out


class GoldMoved:
    """Cross-mode: 1 when the English doc ranks higher with the instruction than without."""

    per_mode = False
    names = ["moved"]

    def compute(self, inp):
        per = {}
        for q in inp.runs["og"]:
            og, ch = inp.runs["og"].doc_ids(q), inp.runs["changed"].doc_ids(q)
            per[q] = {"moved": float(ch.index("en") < og.index("en"))}
        return MetricResult({"moved": sum(v["moved"] for v in per.values()) / len(per)}, per)


def _host() -> PluginHost:
    plugin = types.SimpleNamespace()

    @hookimpl
    def register_datasets(register):
        register("lang", _dataset, "three modes")

    @hookimpl
    def register_retrievers(register):
        register("keyword", Keyword, "test")

    @hookimpl
    def register_rerankers(register):
        register("swap", Swap, "test")

    @hookimpl
    def register_judges(register):
        register("first-is-gold", FirstIsGold, "test")

    @hookimpl
    def register_metrics(register):
        register("moved", GoldMoved, "test")

    for f in (register_datasets, register_retrievers, register_rerankers, register_judges, register_metrics):
        setattr(plugin, f.__name__, f)
    host = PluginHost(load_entry_points=False)
    host.register_plugin(plugin, "test-plugin")
    return host


def test_modes_chain_judge_and_cross_mode_metric(tmp_path):
    reg = _host().registry
    task = Task(name="lang", dataset="lang", first_stage="retrieve", retriever="keyword", metrics=["nDCG@1"])
    res = evaluate(task, metrics=["nDCG@1", "moved"], rerankers=["swap", "swap"], judge="first-is-gold",
                   output=str(tmp_path), registry=reg, progress=False)
    assert res.runs["changed"].doc_ids("q1")[0] == "en"
    assert res.runs["og"].doc_ids("q1")[0] == "zh"
    assert res.metrics["nDCG@1[changed]"] == 1.0 and res.metrics["nDCG@1[og]"] == 1.0
    assert res.metrics["nDCG@1[reversed]"] == 0.0  # keyword matching cannot follow a negation
    assert res.metrics["moved"] == 1.0
    assert res.counts["scores_made_strict"] == [f"swap[{m}]" for m in ("og", "changed", "reversed") for _ in "12"]
    assert res.counts["judge_failures"] == {"og": 1, "changed": 0, "reversed": 0}  # "x" fails in og
    assert all(r.is_strictly_decreasing() for r in res.runs.values())
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["judgments.jsonl", "per_query.jsonl", "qrels.jsonl", "queries.jsonl", "results.json",
                     "run.changed.trec", "run.first_stage.changed.trec", "run.first_stage.og.trec",
                     "run.first_stage.reversed.trec", "run.og.trec", "run.reversed.trec"]  # + harness view's
    data = json.loads((tmp_path / "results.json").read_text())
    # each stage's ranking is kept: the first stage's equals the retriever's own run, before the swaps
    alone = evaluate(task, metrics=["nDCG@1"], registry=reg, progress=False)
    for mode in ("og", "changed", "reversed"):
        assert res.first_stage_runs[mode].doc_ids("q1") == alone.runs[mode].doc_ids("q1")
        assert data["files"][f"first_stage[{mode}]"] == f"run.first_stage.{mode}.trec"
        lines = (tmp_path / f"run.first_stage.{mode}.trec").read_text().splitlines()
        assert [ln.split()[2] for ln in lines if ln.startswith("q1 ")] == alone.runs[mode].doc_ids("q1")
    assert [r["spec"] for r in data["components"]["rerankers"]] == ["swap", "swap"]
    assert data["components"]["judge"]["args"] == {}
    assert data["dataset"]["modes"] == ["og", "changed", "reversed"]


def test_empty_query_set_is_a_clear_error():
    ds = Dataset.single("empty", {"d": Document("d", "t")}, {}, Qrels())
    with pytest.raises(DataError, match="no queries"):
        ds.validate()


def test_unknown_ids_are_counted_not_dropped():
    ds = Dataset.single("u", {"d": Document("d", "t")}, {"q": Query("q", "t")},
                        Qrels({"q": {"d": 1, "ghost": 1}, "nobody": {"d": 1}}))
    assert ds.validate() == {"default:qrels_unknown_queries": 1, "default:qrels_unknown_docs": 1}


def test_dataset_without_candidates_needs_a_retriever():
    reg = _host().registry
    task = Task(name="lang", dataset="lang", first_stage="candidates")
    with pytest.raises(HarnessError, match="no candidate lists"):
        evaluate(task, registry=reg, progress=False)


def test_suite_runs_members_and_averages(tmp_path):
    plugin = types.SimpleNamespace()

    @hookimpl
    def register_tasks(register):
        register("demo-top3", lambda: Task(name="demo-top3", dataset="demo", first_stage="retrieve", depth=3,
                                           metrics=["nDCG@10", "MRR@10"]), "demo, depth 3")
        register("demo-mrr", lambda: Task(name="demo-mrr", dataset="demo", first_stage="retrieve",
                                          metrics=["MRR@10"]), "demo, MRR only")
        register("pair", lambda: Task(name="pair", tasks=["demo-top3", "demo-mrr"]), "a suite")

    plugin.register_tasks = register_tasks
    host = PluginHost(load_entry_points=False)
    host.register_plugin(plugin, "suite-plugin")
    res = evaluate("pair", output=str(tmp_path), registry=host.registry, progress=False)
    assert list(res.members) == ["demo-top3", "demo-mrr"]
    a, b = res.per_task["demo-top3"], res.per_task["demo-mrr"]
    assert res.metrics["MRR@10"] == pytest.approx((a["MRR@10"] + b["MRR@10"]) / 2)
    assert res.metrics["nDCG@10"] == a["nDCG@10"]  # reported by one member only
    data = json.loads((tmp_path / "results.json").read_text())
    assert set(data["tasks"]) == {"demo-top3", "demo-mrr"} and data["metrics"]["MRR@10"] == res.metrics["MRR@10"]
    assert (tmp_path / "demo-top3" / "run.trec").exists() and (tmp_path / "demo-mrr" / "results.json").exists()
    with pytest.raises(DataError, match="neither a dataset nor member tasks"):
        Task(name="nothing")


def test_task_table_prints_the_papers_row():
    from harness.results.table import summary_table as _summary_table

    task = Task(name="demo", dataset="demo", first_stage="retrieve", metrics=["nDCG@10", "MRR@10"],
                table=[("nDCG", "nDCG@10", 100), ("MRR", "MRR@10", 100), ("absent", "WISE", 100)])
    res = evaluate(task, progress=False)
    lines = _summary_table(res).splitlines()
    assert lines[0].split() == ["nDCG", "MRR", "absent"]
    assert lines[2].split() == ["bm25", "|", "demo", f"{res.metrics['nDCG@10'] * 100:.1f}",
                                f"{res.metrics['MRR@10'] * 100:.1f}", "-"]


def test_the_one_strict_scores_rule_survives_trec_eval():
    """trec_eval keeps a score as a 32-bit float: scores distinct in 64 bits can tie there, and the
    tie is broken by document id, not by the reranker's order. The one rule works in 32 bits."""
    from harness import score
    from harness.concepts.run import strictly_decreasing

    run = Run({"q": [("a", 1.0), ("b", 1.0 - 1e-12), ("c", 1.0 - 2e-12)]})  # equal as 32-bit floats
    qrels = Qrels({"q": {"a": 1}})
    assert not run.is_strictly_decreasing()
    assert score(qrels, run, ["nDCG@1"]).aggregate["nDCG@1"] == 0.0  # trec_eval put "c" first
    strict = run.with_strict_scores()
    assert strict.doc_ids("q") == ["a", "b", "c"] and strict.is_strictly_decreasing()
    assert score(qrels, strict, ["nDCG@1"]).aggregate["nDCG@1"] == 1.0
    assert strictly_decreasing([0.9, 0.5, 0.1]) == [0.9, 0.5, 0.1]  # already strict: kept as it is
    assert strictly_decreasing([2.0, 3.0])[1] < 2.0  # an increase is lowered below its predecessor
