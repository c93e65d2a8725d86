"""No process-wide state: one Context per evaluation carries the registry, the data folder, the
caches, the LLM settings and the progress switch; nothing leaks from one evaluation to the next."""

from __future__ import annotations

import ast
import os
import shutil
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
ROOT = PKG.parent
#: what may stay, with why it cannot change a result (docs/architecture.md lists each): (module, name) -> reason
ALLOWED = {
    ("harness/formats/files.py", "_SHA_MEMO"): "sha256 memo keyed by (path, mtime, size): a new file, a new key",
    ("harness/retrievers/dense/encoder.py", "_LOADED"): "weak references to loaded models, a pure function of weights",
    ("harness/llm/providers/local.py", "global _LOG_CALLBACK"): "the ctypes log callback llama.cpp keeps a pointer to",
    ("plugins/harness-pir/harness_pir/data.py", "_DEMO_CACHE"): "parsed demo JSON keyed by (path, mtime, size)",
    ("harness/served/dryrun.py", "@lru_cache _encoder"): "the tiktoken encoder: a function of the installed package",
    ("harness/llm/embedding_client.py", "@lru_cache _encoding"): "the tiktoken encoder: of the installed package",
    ("harness/served/retry.py", "@lru_cache _first_wait_name"): "tenacity's signature: a function of the package",
    ("harness/served/cache_rows.py", "@cache safe_disk"): "diskcache's Disk subclass: a function of the package",
    ("harness/served/transport.py", "@lru_cache _backend_class"): "the httpx backend subclass: of the package",
    ("harness/served/transport.py", "_local"): "the deadline of this thread's HTTP attempt, set and restored",
}
#: calls that build a mutable object (``dict.fromkeys`` is seen as ``fromkeys``); frozenset, tuple and
#: MappingProxyType are what a constant table is made of
_MUTABLE_CALLS = frozenset({
    "dict", "list", "set", "bytearray", "defaultdict", "Counter", "OrderedDict", "deque", "ChainMap", "fromkeys",
    "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "SimpleNamespace", "local", "sorted", "Queue",
    "SimpleQueue", "array"})
_MEMO_DECORATORS = frozenset({"lru_cache", "cache"})
_NOT_SOURCE = frozenset({"tests", "build", "dist", "__pycache__", "node_modules"})


def _mutable(value: ast.expr) -> bool:
    """A value that can be changed in place: a list/dict/set display or comprehension, a call that builds
    one, or a tuple holding one. Upper case does not make a constant: ``TABLE = [...]`` is reported."""
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Tuple):
        return any(_mutable(e) for e in value.elts)
    return isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in _MUTABLE_CALLS


def _top_level(body: list[ast.stmt]):
    """The statements run at import (into ``if``/``try`` blocks, not into functions or classes)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            yield from _top_level(node.body + node.orelse + getattr(node, "finalbody", []) +
                                  [s for h in getattr(node, "handlers", []) for s in h.body])


def module_state(source: str) -> list[str]:
    """Names holding process-wide mutable state in a module's source: module-level mutable values
    (``_CACHE = {}``, ``_SEEN: set[str] = set()``, ``TABLE = [...]``), ``global`` statements anywhere and
    memoised module-level functions (``@lru_cache``, ``@cache``)."""
    tree = ast.parse(source)
    found = []
    for node in _top_level(tree.body):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [ast.unparse(d.func if isinstance(d, ast.Call) else d).split(".")[-1] for d in node.decorator_list]
            found += [f"@{n} {node.name}" for n in names if n in _MEMO_DECORATORS][:1]
            continue
        else:
            continue
        if _mutable(value):
            found += [n.id for t in targets for n in ast.walk(t)
                      if isinstance(n, ast.Name) and n.id not in ("__all__", "__slots__")]
    found += [f"global {n}" for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names]
    return found


def source_files(root: Path) -> list[Path]:
    """The shipped code under ``root``: ``harness/`` and each plugin under ``plugins/`` without its tests."""
    files = sorted((root / "harness").rglob("*.py"))
    for plugin in sorted(p for p in (root / "plugins").iterdir() if p.is_dir()):
        files += sorted(p for p in plugin.rglob("*.py")
                        if not any(part in _NOT_SOURCE or part.startswith(".") for part in
                                   p.relative_to(plugin).parts[:-1]))
    return files


def scan(root: Path) -> set[tuple[str, str]]:
    """``(module path, name)`` for each piece of module-level state in the code under ``root``."""
    return {(p.relative_to(root).as_posix(), name) for p in source_files(root)
            for name in module_state(p.read_text(encoding="utf-8"))}


def test_no_module_level_mutable_state_beyond_the_documented():
    found = scan(ROOT)
    assert found - set(ALLOWED) == set(), sorted(found - set(ALLOWED))
    assert set(ALLOWED) - found == set(), f"allowlisted but gone (remove them): {sorted(set(ALLOWED) - found)}"
    docs = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    state = docs[docs.index("Module-level state that remains"):]
    assert [n for _, n in ALLOWED if n.split()[-1] not in state] == []


PLANTED = {  # module -> the lines planted at its end, and the names the guard must report
    "harness/formats/beir.py": ("_CACHE = {}\n_TABLE: dict[str, int] = {}\n", {"_CACHE", "_TABLE"}),
    "harness/metrics/names.py": ("_SEEN = set()\nRESULTS = []\n_PAIR = ([], 1)\n", {"_SEEN", "RESULTS", "_PAIR"}),
    "harness/llm/spec.py": ("import collections\n_BY_KEY = collections.defaultdict(list)\n"
                            "_ORDER = sorted(ALIASES)\nfor_k = {k: 1 for k in ALIASES}\n",
                            {"_BY_KEY", "_ORDER", "for_k"}),
    "harness/rerankers/model_base.py": ("def _remember(x):\n    global _LAST\n    _LAST = x\n", {"global _LAST"}),
    "harness/retrievers/bm25.py": ("import functools\n@functools.lru_cache(maxsize=None)\ndef _memo(x):\n"
                                   "    return x\n", {"@lru_cache _memo"}),
    "plugins/harness-pir/harness_pir/data.py": ("_CACHE = {}\n", {"_CACHE"}),
    "plugins/harness-birco/harness_birco/prompts.py": ("if True:\n    _SEEN: set = set()\n", {"_SEEN"}),
    # immutable tables pass
    "harness/formats/scifact.py": ("from types import MappingProxyType\n_OK = MappingProxyType({'a': 1})\n"
                                   "_KEYS = frozenset({'a'})\n_ROWS = (('a', 1),)\nNAME = 'x'\n", set()),
}


def test_the_guard_reports_state_planted_in_a_copy_of_the_tree(tmp_path):
    """Plant state in a copy of harness/ and plugins/ (the .py files): the scan reports exactly what was
    planted, in the core and in a plugin, and passes the immutable tables planted beside them."""
    for part in ("harness", "plugins"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=lambda d, names: [
            n for n in names if n in _NOT_SOURCE or (not n.endswith(".py") and not (Path(d) / n).is_dir())])
    before = scan(tmp_path)
    assert before == scan(ROOT)  # the copy is what the guard sees in the tree
    for module, (lines, _) in PLANTED.items():
        path = tmp_path / module
        path.write_text(path.read_text(encoding="utf-8") + "\n" + lines, encoding="utf-8")
    expected = {(module, name) for module, (_, names) in PLANTED.items() for name in names}
    assert scan(tmp_path) - before == expected
    assert ("plugins/harness-pir/harness_pir/data.py", "_CACHE") in expected  # a plugin's state is seen too


def _context_annotations(paths):
    """``file:line function`` for every parameter named ``context`` whose annotation is missing or
    ``Any`` (a factory's context is typed with the ComponentContext protocol, or the Context itself)."""
    bad = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            for arg in args:
                if arg.arg != "context":
                    continue
                text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if "Context" not in text:
                    bad.append(f"{path}:{node.lineno} {node.name}(context: {text or 'unannotated'})")
    return bad


def _source_files():
    root = Path(__file__).resolve().parent.parent
    files = list((root / "harness").rglob("*.py"))
    files += [p for p in (root / "plugins").glob("*/harness_*/**/*.py")]
    return [p for p in files if "templates" not in p.parts]


def test_no_component_takes_an_untyped_context():
    assert _context_annotations(_source_files()) == []


def test_the_context_check_finds_an_untyped_context(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text("from typing import Any\n\ndef make(context: Any = None):\n    pass\n\n"
                       "def other(x, context=None):\n    pass\n\ndef fine(context: 'ComponentContext | None' = None):\n"
                       "    pass\n")
    bad = _context_annotations([planted])
    assert [b.split(" ", 1)[1] for b in bad] == ["make(context: Any)", "other(context: unannotated)"]


def test_the_context_is_what_components_may_use(tmp_path):
    from harness import ComponentContext, Context

    ctx = Context.create(cache_dir=tmp_path / "cache", data_dir=tmp_path)
    assert isinstance(ctx, ComponentContext)
    assert not isinstance(object(), ComponentContext)
