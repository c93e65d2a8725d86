"""The shape of the code, checked on the source: the stack of layers written in docs/architecture.md
(every import counts: module level, inside functions, under ``TYPE_CHECKING``), no cycle between the
top-level folders of ``harness/``, the few arrows that must never exist, no import cycles between
modules, and no overlong function."""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "harness"
ARCH_DOC = REPO / "docs" / "architecture.md"
PLUGINS = ("harness_nv_embed", "harness_rankgpt", "harness_infosearch", "harness_birco", "harness_ifir", "harness_pir",
           "harness_qlm", "harness_followir", "harness_bright", "harness_instructir", "plugins")
#: a public module's lazy export that names a module of a higher layer: a name documented in a public
#: module before it moved up to live with its kind (docs/api.md keeps every documented place)
MOVED_EXPORTS = frozenset({("harness.retrievers.dense", "DenseReranker"), ("harness.llm", "get_client")})
#: the test-helper room and rendered scaffold text are not rooms of the stack
NOT_ROOMS = ("templates",)


def module_name(path: Path, pkg: Path = PKG) -> str:
    parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, pkg: Path = PKG) -> set[str]:
    """Absolute names of every module a file imports anywhere (module level, in functions, under
    ``TYPE_CHECKING``; relative imports resolved); ``from harness import x`` names ``harness.x``."""
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


# -- the layers --------------------------------------------------------------------------------------------------
def documented_layers(doc: Path = ARCH_DOC) -> list[list[str]]:
    """The numbered list under ``## The layers`` in docs/architecture.md, bottom first: each line's rooms
    (```concepts/```, ```context.py```)."""
    text = doc.read_text(encoding="utf-8")
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        m = re.match(r"^(\d+)\. (.*)$", line)
        if m:
            assert int(m.group(1)) == len(layers) + 1, f"layer {m.group(1)} out of order"
            rooms = re.findall(r"`([\w.]+(?:/|\.py))`", m.group(2).split(" — ")[0])
            layers.append([r.rstrip("/") for r in rooms])
    return layers


def room_of(name: str, pkg: Path = PKG) -> str | None:
    """The top-level folder or module of ``harness/`` an absolute module name lies in (``__init__.py``
    for the top package), or None outside the package."""
    parts = name.split(".")
    if parts[0] != pkg.name:
        return None
    if len(parts) == 1:
        return "__init__.py"
    if (pkg / parts[1]).is_dir():
        return parts[1]
    if (pkg / f"{parts[1]}.py").is_file():
        return f"{parts[1]}.py"
    return None


def source_files(pkg: Path = PKG) -> list[Path]:
    return sorted(p for p in pkg.rglob("*.py") if not set(NOT_ROOMS) & set(p.relative_to(pkg).parts))


def room_edges(pkg: Path = PKG) -> dict[tuple[str, str], set[str]]:
    """(room, room it imports) -> the files making that arrow, over every import of every module."""
    edges: dict[tuple[str, str], set[str]] = {}
    for path in source_files(pkg):
        src = room_of(module_name(path, pkg), pkg)
        for name in imports(path, pkg):
            dst = room_of(name, pkg)
            if src and dst and dst != src and not (name == pkg.name and path.name == "__init__.py"):
                edges.setdefault((src, dst), set()).add(str(path.relative_to(pkg.parent)))
    return edges


def export_edges(pkg: Path = PKG) -> dict[tuple[str, str], set[str]]:
    """The same arrows made by the public modules' lazy export tables (``_EXPORTS``: name -> defining
    module, imported on first use), but the moved names of :data:`MOVED_EXPORTS`."""
    edges: dict[tuple[str, str], set[str]] = {}
    for path in source_files(pkg):
        if path.name != "__init__.py" or path.parent == pkg:
            continue
        facade = module_name(path, pkg)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (isinstance(key, ast.Constant) and isinstance(value, ast.Constant)
                            and isinstance(value.value, str)
                            and value.value.startswith(f"{pkg.name}.") and (facade, key.value) not in MOVED_EXPORTS):
                        src, dst = room_of(facade, pkg), room_of(value.value, pkg)
                        if src and dst and src != dst:
                            edges.setdefault((src, dst), set()).add(f"{path.relative_to(pkg.parent)} ({key.value})")
    return edges


def layer_violations(layers: list[list[str]], edges: Mapping[tuple[str, str], Iterable[str]],
                     rooms: Iterable[str]) -> list[str]:
    """Every arrow that does not point down the stack (to a line above in the list), and every room
    the list leaves out."""
    level = {r: i for i, line in enumerate(layers) for r in line}
    bad = [f"{r} is in no layer of docs/architecture.md" for r in sorted(set(rooms) - set(level))]
    for (src, dst), files in sorted(edges.items()):
        if src in level and dst in level and level[dst] >= level[src]:
            how = "a room of its own layer" if level[dst] == level[src] else f"layer {level[dst] + 1}, above it"
            bad.append(f"{src} (layer {level[src] + 1}) imports {dst}, {how}: {', '.join(sorted(files)[:3])}")
    return bad


def room_cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one room (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return groups


def all_rooms(pkg: Path = PKG) -> set[str]:
    return {r for p in source_files(pkg) if (r := room_of(module_name(p, pkg), pkg))}


def test_the_stack_of_layers_holds():
    layers = documented_layers()
    assert len(layers) >= 10 and ["concepts"] == layers[0] and ["__init__.py"] == layers[-1]
    edges = {**room_edges()}
    for key, files in export_edges().items():
        edges.setdefault(key, set()).update(files)
    assert len(edges) > 50  # the scan sees the imports (not an empty graph by accident)
    bad = layer_violations(layers, edges, all_rooms())
    assert not bad, "imports against the stack of docs/architecture.md:\n" + "\n".join(bad)


def test_no_cycle_between_the_top_level_folders():
    cycles = room_cycles(room_edges())
    assert not cycles, f"rooms on an import cycle: {cycles}"


def _plant(root: Path, rel: str, text: str) -> None:
    path = root / "harness" / rel
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_the_layer_check_names_planted_upward_imports(tmp_path: Path):
    shutil.copytree(PKG, tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.jsonl"))
    copy = tmp_path / "harness"
    layers = documented_layers()
    assert layer_violations(layers, room_edges(copy), all_rooms(copy)) == []
    _plant(tmp_path, "concepts/query.py", "\n\ndef _planted():\n    from harness.llm.client import Client\n")
    _plant(tmp_path, "served/transport.py",
           "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from harness.llm.session import LLMSession\n")
    _plant(tmp_path, "formats/files.py", "\nfrom harness.components import kinds\n")  # a room of its own layer
    (copy / "newroom").mkdir()
    (copy / "newroom" / "__init__.py").write_text("", encoding="utf-8")
    bad = layer_violations(layers, room_edges(copy), all_rooms(copy))
    assert bad[0] == "newroom is in no layer of docs/architecture.md"
    assert any(b.startswith("concepts (layer 1) imports llm, layer") and "harness/concepts/query.py" in b for b in bad)
    assert any(b.startswith("served (layer") and "imports llm" in b and "harness/served/transport.py" in b for b in bad)
    assert any(b.startswith("formats (layer") and "imports components, a room of its own layer" in b for b in bad)
    assert len(bad) == 4, bad


def test_the_cycle_check_names_a_planted_cycle(tmp_path: Path):
    shutil.copytree(PKG, tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.jsonl"))
    assert room_cycles(room_edges(tmp_path / "harness")) == []
    _plant(tmp_path, "runtime/progress.py", "\n\ndef _planted():\n    import harness.evaluation.stages\n")
    [group] = room_cycles(room_edges(tmp_path / "harness"))
    assert {"runtime", "evaluation"} <= set(group)  # evaluation imports runtime, now runtime imports evaluation


def test_the_export_check_sees_a_facade_pointing_up(tmp_path: Path):
    shutil.copytree(PKG, tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.jsonl"))
    copy = tmp_path / "harness"
    assert layer_violations(documented_layers(), export_edges(copy), all_rooms(copy)) == []
    facade = copy / "formats" / "__init__.py"
    facade.write_text(facade.read_text(encoding="utf-8").replace(
        "_EXPORTS = MappingProxyType({", '_EXPORTS = MappingProxyType({\n    "evaluate": "harness.api",', 1),
        encoding="utf-8")
    [bad] = layer_violations(documented_layers(), export_edges(copy), all_rooms(copy))
    assert bad.startswith("formats (layer") and "imports api.py" in bad and "(evaluate)" in bad


def documented_folders(doc: Path = ARCH_DOC) -> list[str]:
    """The first column of the table under ``## The map`` in docs/architecture.md."""
    section = doc.read_text(encoding="utf-8").split("## The map", 1)[1].split("\n## ", 1)[0]
    return [m.group(1).rstrip("/") for line in section.splitlines() if (m := re.match(r"^\| `([\w/]+)` \|", line))]


def package_folders(pkg: Path = PKG) -> set[str]:
    skip = {"__pycache__", ".ruff_cache"}
    return {str(p.relative_to(pkg.parent)) for p in [pkg, *pkg.rglob("*")] if p.is_dir()
            and not skip & set(p.parts) and "templates" not in p.relative_to(pkg).parts[:-1]}


def test_the_map_names_every_folder_once():
    listed = documented_folders()
    assert len(listed) == len(set(listed)), "a folder listed twice"
    assert set(listed) == package_folders(), (sorted(package_folders() - set(listed)), sorted(set(listed) -
                                                                                          package_folders()))


# -- imports inside functions ------------------------------------------------------------------------------------
#: folders where importing inside a function is the rule, and why
LAZY_FOLDERS = {
    "cli": "each command imports what it runs when it runs, so `harness --help` and `harness list-plugins` import no "
           "engine (bench/bench_startup.py)",
}


def function_imports(pkg: Path = PKG) -> list[tuple[str, int, str]]:
    """``(file, line, source line)`` of every import of a harness module made inside a function."""
    out = []
    for path in source_files(pkg):
        lines = path.read_text(encoding="utf-8").splitlines()

        def walk(node: ast.AST, inside: bool, path: Path = path, lines: list[str] = lines) -> None:
            for child in ast.iter_child_nodes(node):
                if inside and isinstance(child, ast.Import | ast.ImportFrom):
                    names = [a.name for a in child.names] if isinstance(child, ast.Import) else [
                        "." if child.level else child.module or ""]
                    if any(n == pkg.name or n.startswith(f"{pkg.name}.") or n == "." for n in names):
                        out.append((str(path.relative_to(pkg.parent)), child.lineno, lines[child.lineno - 1].strip()))
                walk(child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

        walk(ast.parse("\n".join(lines)), False)
    return out


def unexplained_function_imports(pkg: Path = PKG) -> list[str]:
    """Imports inside functions outside :data:`LAZY_FOLDERS` without a ``# lazy: reason`` comment."""
    return [f"{f}:{n}: {text}" for f, n, text in function_imports(pkg)
            if Path(f).parts[1] not in LAZY_FOLDERS and "# lazy: " not in text]


def test_imports_inside_functions_are_the_exception_each_with_a_reason():
    found = function_imports()
    assert len(found) < 80 and all(Path(f).parts[1] in LAZY_FOLDERS or "# lazy: " in t for f, _, t in found)
    assert not unexplained_function_imports()


def test_the_import_check_names_a_planted_unexplained_import(tmp_path: Path):
    shutil.copytree(PKG, tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.jsonl"))
    assert unexplained_function_imports(tmp_path / "harness") == []
    _plant(tmp_path, "served/pool.py", "\n\ndef _planted():\n    from harness.served.retry import RetryPolicy\n"
           "    from harness.served.types import Reply  # lazy: a reason\n")
    assert unexplained_function_imports(tmp_path / "harness") == [
        f"harness/served/pool.py:{len((PKG / 'served/pool.py').read_text().splitlines()) + 4}: "
        "from harness.served.retry import RetryPolicy"]


# -- arrows that must never exist, whatever the layers -----------------------------------------------------------
def _files(*patterns: str) -> list[Path]:
    return sorted({p for pat in patterns for p in PKG.glob(pat)})


RULES = [
    ("harness/** never imports plugins", _files("**/*.py"), PLUGINS),
    ("nothing inside the package imports the top package (a facade for users)",
     [p for p in _files("**/*.py") if p != PKG / "__init__.py" and "templates" not in p.parts], ("harness",)),
    ("compare reads results only", _files("compare/*.py"),
     ("harness.evaluation", "harness.retrievers", "harness.rerankers", "harness.llm", "harness.served", "harness.api",
      "harness.datasets")),
    ("the CLI is a thin face over the API", _files("cli/*.py"),
     ("harness.evaluation", "harness.retrievers", "harness.rerankers", "harness.datasets")),
]


def top_package_imports(path: Path, pkg: Path = PKG) -> list[str]:
    """``import harness`` and ``from harness import NAME`` where NAME is no submodule: what the file takes
    from the top package's facade."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name == pkg.name]
        elif isinstance(node, ast.ImportFrom) and node.module == pkg.name and not node.level:
            out += [f"{pkg.name}.{a.name}" for a in node.names if room_of(f"{pkg.name}.{a.name}", pkg) is None]
    return out


def _forbidden(path: Path, forbidden: tuple[str, ...]) -> list[str]:
    if forbidden == ("harness",):
        return top_package_imports(path)
    return sorted(m for m in imports(path) if any(m == x or m.startswith(x + ".") for x in forbidden))


@pytest.mark.parametrize("rule,files,forbidden", RULES, ids=[r[0] for r in RULES])
def test_no_forbidden_imports(rule, files, forbidden):
    assert files, rule
    bad = [f"{f.relative_to(PKG.parent)} imports {m}" for f in files for m in _forbidden(f, forbidden)]
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
        for name in imports(path, pkg):
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


# -- short functions ---------------------------------------------------------------------------------------------
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
