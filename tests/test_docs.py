"""Every hook is documented with its exact signature and an example (as datasette does)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from harness.components.kinds import KIND_TABLE
from harness.plugins import hookspecs

DOCS = Path(__file__).resolve().parent.parent / "docs"
HOOKS = [n for n, f in vars(hookspecs).items() if n.startswith("register_") and callable(f)]


def test_there_are_hooks():
    """One hook per kind of :data:`KIND_TABLE`, with the kind's documentation, and ``register_commands``."""
    assert sorted(HOOKS) == sorted([k.hook for k in KIND_TABLE] + ["register_commands"])
    assert all(getattr(hookspecs, k.hook).__doc__ == k.doc for k in KIND_TABLE)


def test_the_hook_sections_follow_the_kinds():
    """docs/plugin_hooks.md has one section per kind, in the order of :data:`KIND_TABLE` (then
    ``register_commands``), each opening with what the kind's hook registers (``Register dataset loaders``)."""
    text = (DOCS / "plugin_hooks.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (register_\w+)\(", text, re.M) == [k.hook for k in KIND_TABLE] + ["register_commands"]
    for kind in KIND_TABLE:
        opening = text.split(f"## {kind.hook}(", 1)[1].split("\n\n", 1)[1]
        assert opening.startswith(kind.doc.split(":")[0]), f"{kind.hook}: section opens {opening[:60]!r}"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook):
    text = (DOCS / "plugin_hooks.md").read_text(encoding="utf-8")
    params = ", ".join(inspect.signature(getattr(hookspecs, hook)).parameters)
    heading = f"## {hook}({params})"
    assert heading in text, f"docs/plugin_hooks.md lacks the heading {heading!r}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    assert re.search(rf"```python\n.*def {hook}\(", section, re.S), f"{hook}: no example in its section"


def _example(hook: str) -> str:
    text = (DOCS / "plugin_hooks.md").read_text(encoding="utf-8")
    section = text.split(f"## {hook}(", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.parametrize("hook", ["register_datasets", "register_tasks", "register_retrievers",
                                  "register_rerankers", "register_judges", "register_metrics"])
def test_hook_examples_run(hook):
    """The documented examples are real plugins: register them and use what they register."""
    import types

    from harness.plugins.host import PluginHost

    host = PluginHost(load_entry_points=False)
    for h in ("register_datasets", hook):  # the task example uses the dataset example
        module = types.ModuleType(f"doc_example_{h}")
        exec(compile(_example(h), f"docs/plugin_hooks.md:{h}", "exec"), module.__dict__)
        if not host.pm.is_registered(module) and h not in {p.name for p in host.plugins}:
            host.register_plugin(module, h)
    ds = host.registry.create("dataset", "tiny")
    assert set(ds.corpus) == {"d0", "d1"}
    from harness import Run
    from harness.concepts.protocols import MetricInput

    run = Run.from_order({"q1": ["d0", "d1"]})
    if hook == "register_tasks":
        assert host.registry.create("task", "tiny").dataset_args == {"size": 3}
    elif hook == "register_retrievers":
        r = host.registry.create("retriever", "title-match:boost=2")
        r.index(ds.corpus)
        assert len(r.search({"q1": "x"}, 5)["q1"]) == 2
    elif hook == "register_rerankers":
        assert host.registry.create("reranker", "reverse").rerank({}, run, ds.corpus).doc_ids("q1") == ["d1", "d0"]
    elif hook == "register_judges":
        js = host.registry.create("judge", "short").judge({}, run, ds.corpus)
        assert {j.score for j in js.values()} == {1.0}
    elif hook == "register_metrics":
        m = host.registry.create("metric", "found:cutoff=1")
        res = m.compute(MetricInput({"default": run}, dict(ds.qrels), ds))
        assert res.aggregate == {"found@1": 0.0}
