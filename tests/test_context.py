"""No process-wide state: one Context per evaluation carries the registry, the data folder, the
caches, the LLM settings and the progress switch; nothing leaks from one evaluation to the next."""

from __future__ import annotations

import ast
import os
import types
from pathlib import Path

import pytest

from harness import Context, Run, evaluate, hookimpl
from harness.concepts.errors import UnknownComponentError
from harness.plugins.host import PluginHost
from harness.testing import TestServer

PKG = Path(__file__).resolve().parents[1] / "harness"


class AskEach:
    """A reranker that asks the LLM about each of the top 3 passages (the order is kept)."""

    def __init__(self, llm: str | None = None, context: Context | None = None, tag: str = "a"):
        self.client = Context.of(context).llm.client(llm)
        self.tag = tag

    def rerank(self, queries, run, corpus):
        self.client.map([f"{queries[q].text} | {d}" for q in run for d in run.doc_ids(q)[:3]])
        return Run.from_order({q: run.doc_ids(q) for q in run})

    def config(self):
        return {"tag": self.tag}


def registry_with(name: str, tag: str):
    plugin = types.SimpleNamespace()

    @hookimpl
    def register_rerankers(register):
        register(name, lambda context=None, **kw: AskEach(context=context, tag=tag, **kw), "test reranker")

    plugin.register_rerankers = register_rerankers
    host = PluginHost(load_entry_points=False)
    host.register_plugin(plugin, f"plugin-{tag}")
    return host.registry


def test_a_dry_run_does_not_leak_into_the_next_evaluation(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    registry = registry_with("ask", "a")
    with TestServer(reply="fine") as srv:
        dry = evaluate("demo", rerankers=["ask"], llm=srv.spec("m"), dry_run=True, registry=registry, progress=False)
        assert dry.usage["dry_run"] is True and srv.requests_total == 0
        real = evaluate("demo", rerankers=["ask"], llm=srv.spec("m"), registry=registry, progress=False)
        assert real.usage["dry_run"] is False
        assert srv.requests_total == real.usage["total"]["calls"] == 30  # 10 queries x top 3, really sent
        # a third evaluation without any LLM option takes the environment's defaults, not the last call's
        with pytest.raises(Exception, match="no LLM given"):
            evaluate("demo", rerankers=["ask"], registry=registry, progress=False)


def test_two_registries_in_one_process_do_not_see_each_other(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    a, b = registry_with("ask", "a"), registry_with("other", "b")
    with TestServer(reply="fine") as srv:
        res_a = evaluate("demo", rerankers=["ask"], llm=srv.spec("m"), registry=a, progress=False)
        assert res_a.components["rerankers"][0]["tag"] == "a"
        with pytest.raises(UnknownComponentError, match="unknown reranker 'ask'"):
            evaluate("demo", rerankers=["ask"], llm=srv.spec("m"), registry=b, progress=False)
        res_b = evaluate("demo", rerankers=["other"], llm=srv.spec("m"), registry=b, progress=False)
        assert res_b.components["rerankers"][0]["tag"] == "b"
    # each evaluation counted its own calls: b's are all cache hits of a's requests, none sent again
    assert res_a.usage["total"]["calls"] == 30 and res_b.usage["total"]["calls"] == 0
    assert res_b.usage["total"]["cache_hits"] == 30
    # versions come from each evaluation's own plugins
    assert "plugin-a" not in res_b.versions and res_a.versions["harness-ir"] == res_b.versions["harness-ir"]


def test_evaluate_takes_component_objects(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with TestServer(reply="fine") as srv:
        ctx = Context.create(registry=registry_with("ask", "a"))
        obj = AskEach(llm=srv.spec("m"), context=ctx.for_evaluation())
        res = evaluate("demo", rerankers=[obj], context=ctx, progress=False)
    assert res.components["rerankers"][0]["spec"] == "object:AskEach"
    with pytest.raises(Exception, match="does not implement the Reranker protocol"):
        evaluate("demo", rerankers=[object()], progress=False)


def test_the_cli_writes_no_environment_variable(tmp_path):
    from click.testing import CliRunner

    from harness.cli import cli

    before = dict(os.environ)
    result = CliRunner().invoke(cli, ["eval", "--task", "demo", "--cache-dir", str(tmp_path / "c"), "-q", "--json",
                                      "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert dict(os.environ) == before


def test_contexts_are_separate(tmp_path):
    a = Context.create(data_dir=tmp_path / "a", cache_dir=tmp_path / "ca")
    b = Context.create(data_dir=tmp_path / "b", cache_dir=tmp_path / "cb")
    assert a.data.path != b.data.path and a.llm is not b.llm and a.host is not b.host
    c = a.for_evaluation(dry_run=True)
    assert c.llm.settings.dry_run and not a.llm.settings.dry_run and c.data is a.data


# -- the source holds no process-wide mutable state -----------------------------------------------------
ALLOWED = {  # docs/architecture.md lists each with why it cannot change a result
    ("harness/formats/files.py", "_SHA_MEMO"),
    ("harness/retrievers/dense/encoder.py", "_LOADED"),
    ("harness/llm/providers/local.py", "global _LOG_CALLBACK"),
}


def _module_level_mutables(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for t in targets:
            if not isinstance(t, ast.Name) or t.id.lstrip("_").isupper() or t.id.startswith("__"):
                continue  # CONSTANTS (tables never mutated) and dunders
            mutable = isinstance(value, (ast.Dict, ast.List, ast.Set)) or (
                isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in (
                    "dict", "list", "set", "defaultdict", "Counter", "WeakValueDictionary", "OrderedDict"))
            if mutable:
                found.append(t.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found += [f"global {n}" for n in node.names]
    return found


def test_no_module_level_mutable_state_beyond_the_documented():
    found = {(str(p.relative_to(PKG.parent)), name) for p in PKG.rglob("*.py") for name in _module_level_mutables(p)}
    assert found - ALLOWED == set(), sorted(found - ALLOWED)
    docs = (PKG.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert all(name in docs for _, name in ALLOWED)
