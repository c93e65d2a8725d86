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
    ("the context sits above the layers it composes: none of them imports it",
     _files("concepts/*.py", "runtime/*.py", "data/*.py", "formats/*.py", "metrics/*.py", "llm/**/*.py",
            "plugins/*.py", "retrievers/**/*.py"), ("harness.context",)),
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


MAX_FUNCTION_LINES = 80
#: the one exception: the unpickler's opcode dispatch, one flat branch per opcode family (easier to audit
#: against pickletools' opcode table whole than split up)
LONG_FUNCTIONS_ALLOWED = frozenset({("harness_birco/unpickler.py", "step")})


def _source_files() -> list[Path]:
    """Every module of the core and of the plugins' packages (not their tests)."""
    plugins = PKG.parent / "plugins"
    return sorted([*PKG.rglob("*.py"), *plugins.glob("*/harness_*/**/*.py")])


def long_functions(files: list[Path], limit: int = MAX_FUNCTION_LINES,
                   allowed: frozenset[tuple[str, str]] = LONG_FUNCTIONS_ALLOWED) -> list[str]:
    """``file:line name (n lines)`` of each function or method longer than ``limit`` lines (``def`` line to
    last line), but those in ``allowed`` (``("<package>/<module>.py", name)``)."""
    out = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            n = node.end_lineno - node.lineno + 1
            if n > limit and (f"{path.parent.name}/{path.name}", node.name) not in allowed:
                out.append(f"{path}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_is_longer_than_80_lines():
    files = _source_files()
    assert any(p.name == "unpickler.py" for p in files) and len(files) > 100
    bad = long_functions(files)
    assert not bad, f"functions over {MAX_FUNCTION_LINES} lines (split them into named helpers): " + "; ".join(bad)


def test_the_length_check_names_a_planted_long_function(tmp_path: Path):
    def body(indent: str) -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(79))

    mod = tmp_path / "pkg" / "mod.py"
    mod.parent.mkdir()
    fits = f"def fits():\n{body(' ' * 4)}"  # 80 lines: the limit
    too_long = f"class C:\n    def too_long(self):\n{body(' ' * 8)}        return 0\n"  # 81 lines
    mod.write_text(f"{fits}\n\n{too_long}", encoding="utf-8")
    assert long_functions([mod]) == [f"{mod}:84 too_long (81 lines)"]
    # the exception covers that one function of that one module, nothing else
    assert long_functions([mod], allowed=frozenset({("pkg/mod.py", "too_long")})) == []
    assert long_functions([mod], allowed=frozenset({("other/mod.py", "too_long")})) != []
