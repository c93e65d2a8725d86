"""The LLM layer inside `harness eval`: an LLM-backed reranker plugin against the loopback server;
usage and cost land in results.json, a rerun is served from the cache, a dry run sends nothing."""

from __future__ import annotations

import json
import types

import pytest

import harness.llm
from harness import Context
from harness.concepts.run import Run
from harness.evaluation.pipeline import evaluate
from harness.plugins.hookspecs import hookimpl
from harness.plugins.host import PluginHost
from harness.testing.llm_server import TestServer


class YesNoReranker:
    """Asks the LLM whether each passage answers the query; 'Yes' moves it up."""

    def __init__(self, llm: str | None = None, depth: int = 5, context: Context | None = None):
        # the evaluation's LLM session; a missing key fails here, before any work
        self.client = Context.of(context).llm.client(llm)
        self.depth = depth

    def rerank(self, queries, run, corpus):
        reqs, keys = [], []
        for q in run:
            for d in run.doc_ids(q)[: self.depth]:
                reqs.append([harness.llm.user(f"Query: {queries[q].text}\nPassage: {corpus[d].text}\nAnswer?")])
                keys.append((q, d))
        replies = self.client.map(reqs)
        bonus = {k: 1.0 for k, r in zip(keys, replies) if not isinstance(r, Exception) and "yes" in r.text.lower()}
        return Run.from_scores({q: {d: s + bonus.get((q, d), 0.0) for d, s in run[q]} for q in run})

    def config(self):
        return {"llm": self.client.describe(), "depth": self.depth}


@pytest.fixture
def registry():
    plugin = types.SimpleNamespace()

    @hookimpl
    def register_rerankers(register):
        register("yes-no", YesNoReranker, "LLM yes/no reranker (test)")

    plugin.register_rerankers = register_rerankers
    host = PluginHost(load_entry_points=False)
    host.register_plugin(plugin, "yes-no-plugin")
    yield host.registry


def test_usage_in_results_then_cache_then_dry_run(registry, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    reply = lambda req: "Yes" if "diabetes" in json.dumps(req).lower() else "No"  # noqa: E731
    with TestServer(reply=reply) as srv:
        kw = dict(rerankers=["yes-no:depth=5"], llm=srv.spec("judge-model"), registry=registry, progress=False)
        first = evaluate("demo", output=str(tmp_path / "a"), **kw)
        n_pairs = sum(min(5, len(h)) for h in first.runs["default"].values())
        assert srv.requests_total == n_pairs
        data = json.loads((tmp_path / "a" / "results.json").read_text())
        total = data["usage"]["total"]
        assert total["calls"] == n_pairs and total["cache_hits"] == 0 and total["input_tokens"] > 0
        assert data["usage"]["settings"]["llm"] == srv.spec("judge-model")
        assert data["components"]["rerankers"][0]["llm"]["model"] == "judge-model"

        second = evaluate("demo", output=str(tmp_path / "b"), **kw)
        assert srv.requests_total == n_pairs  # nothing sent again
        assert second.usage["total"]["cache_hits"] == n_pairs
        assert second.metrics == first.metrics

        dry = evaluate("demo", dry_run=True, **{**kw, "rerankers": ["yes-no:depth=7"]})
        assert srv.requests_total == n_pairs  # a dry run sends nothing
        assert dry.usage["dry_run"] is True
        assert dry.usage["total"]["cache_hits"] == n_pairs  # the pairs already cached are free


def test_missing_key_fails_before_any_data_is_read(registry, tmp_path, monkeypatch):
    from harness.concepts.errors import HarnessError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (tmp_path / "empty").mkdir()  # trec-dl19's files are not here: reading them would fail
    context = Context.create(registry=registry, data_dir=tmp_path / "empty")
    with pytest.raises(HarnessError, match="OPENAI_API_KEY"):
        evaluate("trec-dl19", rerankers=["yes-no:llm=openai:gpt-4o-mini"], context=context, progress=False)


def test_suite_adds_up_its_members_usage(tmp_path, monkeypatch):
    from harness.concepts.task import Task

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    plugin = types.SimpleNamespace()

    @hookimpl
    def register_rerankers(register):
        register("yes-no", YesNoReranker, "LLM yes/no reranker (test)")

    @hookimpl
    def register_tasks(register):
        for n in (2, 3):
            register(f"demo{n}", lambda n=n: Task(name=f"demo{n}", dataset="demo", first_stage="retrieve", depth=n),
                     "demo cut")
        register("both", lambda: Task(name="both", tasks=["demo2", "demo3"]), "suite")

    plugin.register_rerankers, plugin.register_tasks = register_rerankers, register_tasks
    host = PluginHost(load_entry_points=False)
    host.register_plugin(plugin, "suite-llm")
    with TestServer(reply="No") as srv:
        res = evaluate("both", rerankers=["yes-no:depth=5"], llm=srv.spec("m"), registry=host.registry,
                       progress=False, output=str(tmp_path / "out"))
        assert srv.requests_total == 10 * 3  # demo3's top 3 include demo2's top 2: those are cache hits
    assert res.usage["total"]["calls"] == 30 and res.usage["total"]["cache_hits"] == 20
    assert res.usage["members"] == 2
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["usage"]["total"]["calls"] == 30
