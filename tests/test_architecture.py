"""The arrows that must never exist (docs/architecture.md), checked on the source: which folder may
import which, and no import cycles between modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "harness"
PLUGINS = ("harness_nv_embed", "harness_rankgpt", "harness_infosearch", "harness_birco", "harness_ifir", "harness_pir",
           "harness_qlm", "harness_followir", "harness_bright", "harness_instructir", "plugins")


def module_name(path: Path, pkg: Path = PKG) -> str:
    parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, pkg: Path = PKG) -> set[str]:
    """Absolute names of every module a file imports anywhere, type-checking imports included
    (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mod = module_name(path, pkg).split(".")
    package = mod if path.name == "__init__.py" else mod[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)
    return out


def _files(*patterns: str) -> list[Path]:
    return sorted({p for pat in patterns for p in PKG.glob(pat)})


RULES = [
    ("harness/** never imports plugins", _files("**/*.py"), PLUGINS),
    ("the concepts import nothing of the harness but each other", _files("concepts/*.py"),
     ("harness.plugins", "harness.data", "harness.formats", "harness.retrievers", "harness.metrics", "harness.llm",
      "harness.evaluation", "harness.results", "harness.compare", "harness.cli", "harness.api", "harness.runtime")),
    ("metrics never import the LLM layer or retrieval", _files("metrics/*.py"),
     ("harness.llm", "harness.retrievers", "harness.evaluation")),
    ("data and formats never import retrieval, the LLM layer or the evaluation",
     _files("data/*.py", "formats/*.py"), ("harness.retrievers", "harness.llm", "harness.evaluation", "harness.api")),
    ("the LLM layer never imports the evaluation, the API or the CLI", _files("llm/**/*.py"),
     ("harness.evaluation", "harness.api", "harness.cli", "harness.retrievers", "harness.data")),
    ("retrievers never import the LLM layer or the evaluation", _files("retrievers/**/*.py"),
     ("harness.llm", "harness.evaluation", "harness.api", "harness.cli")),
    ("results never import the evaluation", _files("results/*.py"), ("harness.evaluation", "harness.api")),
    ("compare reads results only", _files("compare/*.py"),
     ("harness.evaluation", "harness.retrievers", "harness.llm", "harness.api", "harness.data")),
    ("the CLI is a thin face over the API", _files("cli/*.py"),
     ("harness.evaluation", "harness.retrievers")),
]


@pytest.mark.parametrize("rule,files,forbidden", RULES, ids=[r[0] for r in RULES])
def test_no_forbidden_imports(rule, files, forbidden):
    assert files, rule
    bad = [
        f"{f.relative_to(PKG.parent)} imports {m}"
        for f in files
        for m in _imports(f)
        if any(m == x or m.startswith(x + ".") for x in forbidden)
    ]
    assert not bad, f"{rule}: " + "; ".join(bad)


PACKAGES = [PKG, *sorted(p.parent for p in (PKG.parent / "plugins").glob("*/*/__init__.py")
                         if p.parent.name != "tests")]


@pytest.mark.parametrize("pkg", PACKAGES, ids=[p.name for p in PACKAGES])
def test_no_import_cycles(pkg: Path):
    """No two modules of a package (the core, each plugin) import each other, directly or through
    others (``__init__`` modules, facades that re-export, are left out)."""
    modules = {module_name(p, pkg): p for p in pkg.rglob("*.py")}
    facades = {m for m, p in modules.items() if p.name == "__init__.py"}
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        if mod in facades:
            continue
        deps = set()
        for name in _imports(path, pkg):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != mod and name not in facades:
                deps.add(name)
        graph[mod] = deps
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)
