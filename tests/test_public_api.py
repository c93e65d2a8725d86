"""The public surface (docs/api.md) is what the public modules export, every name resolves, the
in-repo plugins import nothing else, and the page's examples run."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
API_DOC = REPO / "docs" / "api.md"
PUBLIC = ("harness", "harness.llm", "harness.formats", "harness.metrics", "harness.retrievers.dense",
          "harness.testing", "harness.pyterrier", "harness.cli")


def documented() -> dict[str, set[str]]:
    """Module -> the names in the first column of its table on docs/api.md (``a`` / ``b`` rows hold several)."""
    out: dict[str, set[str]] = {}
    module = None
    for line in API_DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^## `([\w.]+)`$", line)
        if heading:
            module = heading.group(1)
            out[module] = set()
        elif module and line.startswith("| `"):
            first = line.split("|")[1]
            out[module] |= set(re.findall(r"`(\w+)`", first))
    return out


def test_the_page_lists_exactly_each_public_modules_exports():
    doc = documented()
    assert set(doc) == set(PUBLIC)
    for name in PUBLIC:
        mod = importlib.import_module(name)
        exported = set(mod.__all__)
        assert doc[name] == exported, (name, "documented, not exported:", doc[name] - exported,
                                       "exported, not documented:", exported - doc[name])


@pytest.mark.parametrize("module", PUBLIC)
def test_every_exported_name_resolves(module):
    mod = importlib.import_module(module)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, (module, name)


def _plugin_files() -> list[Path]:
    return sorted(p for p in (REPO / "plugins").rglob("*.py") if "build" not in p.parts)


def _violations(path: Path) -> list[str]:
    """Imports of ``harness`` internals in one plugin file (package or tests)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.name == "harness" or alias.name.startswith("harness.")) and alias.name not in PUBLIC:
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mod = node.module
            if not (mod == "harness" or mod.startswith("harness.")):
                continue
            if mod not in PUBLIC:
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: from {mod} import ...")
                continue
            exported = set(importlib.import_module(mod).__all__)
            for alias in node.names:
                if alias.name not in exported:
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}: from {mod} import {alias.name}")
    return bad


def test_in_repo_plugins_import_only_the_public_surface():
    files = _plugin_files()
    assert len(files) > 40  # every plugin's package and tests
    bad = [v for f in files for v in _violations(f)]
    assert not bad, "\n".join(bad)


def test_the_import_check_catches_an_internal_import(tmp_path):
    f = tmp_path / "plugin.py"
    f.write_text("from harness.llm.client import Client\nfrom harness import Run, evaluate_internal\n"
                 "import harness.data.folder\n")
    import tests.test_public_api as me

    old = me.REPO
    me.REPO = tmp_path
    try:
        assert len(_violations(f)) == 3
    finally:
        me.REPO = old


#: what harness/cli may import beyond the public names: each command's own engine, internal modules
#: no public module exports a name of (a name a public module exports comes from its defining module)
CLI_BACKENDS = frozenset({
    "harness.compare", "harness.compare.format", "harness.compare.report",  # compare, report
    "harness.view.catalog", "harness.view.bundle", "harness.view.server",  # view
    "harness.data.download", "harness.data.verify",  # data download, data verify
    "harness.results.table", "harness.mteb.result_files",  # the eval and score tables, export mteb
    "harness.plugins.template", "harness.components.kinds",  # new-plugin
    "harness.runtime.extras", "harness.runtime.numbers",  # option checks
    "harness.assessment", "harness.compare.rescore",  # judge agreement/fill/rankcorr; compare/report --qrels
})


def _public_homes() -> dict[str, dict[str, str]]:
    """Defining module -> {name: the public name it is exported as} for every public module's exports
    (the top package's ``harness.evaluate`` is defined in ``harness.api``)."""
    homes: dict[str, dict[str, str]] = {}
    for facade in PUBLIC:
        for public, home in getattr(importlib.import_module(facade), "_EXPORTS", {}).items():
            homes.setdefault(home, {})[public] = f"{facade}.{public}"
    return homes


def _cli_import(where: str, mod: str, names: list[str]) -> list[str]:
    """What is wrong with ``from mod import names`` in a CLI module (nothing: []). The CLI lives inside the
    package, so like every module there it never imports the top package ``harness`` (a facade for users):
    a public name comes from the module that defines it."""
    if any(n.startswith("_") for n in names):
        return [f"{where}: from {mod} import {', '.join(n for n in names if n.startswith('_'))} (private)"]
    if mod == "harness.cli" or mod.startswith("harness.cli."):
        return []
    homes = _public_homes()
    if mod == "harness":
        return [f"{where}: from harness import {n} (the top package; import it from "
                f"{next((h for h, ns in homes.items() if n in ns), '?')})" for n in names]
    if mod in PUBLIC:
        exported = set(importlib.import_module(mod).__all__)
        return [f"{where}: from {mod} import {n} (not public)" for n in names if n not in exported]
    if mod in CLI_BACKENDS:
        return []
    if mod in homes:
        return [f"{where}: from {mod} import {n} (not a public name)" for n in names if n not in homes[mod]]
    return [f"{where}: from {mod} import ... (neither public nor a command's back-end)"]


def cli_violations(folder: Path) -> list[str]:
    """The imports of the CLI modules in ``folder`` outside the public modules, the CLI's own package
    and :data:`CLI_BACKENDS`, and every private (``_``) name imported from another module."""
    bad = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                bad += [f"{where}: import {a.name}" for a in node.names if a.name.split(".")[0] == "harness"
                        and not (a.name in PUBLIC[1:] or a.name in CLI_BACKENDS or a.name.startswith("harness.cli."))]
            elif isinstance(node, ast.ImportFrom) and node.level:
                bad.append(f"{where}: a relative import")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "harness":
                bad += _cli_import(where, node.module, [a.name for a in node.names])
    return bad


def test_the_cli_imports_only_public_modules_and_its_back_ends():
    folder = REPO / "harness" / "cli"
    assert len(list(folder.glob("*.py"))) >= 10
    bad = cli_violations(folder)
    assert not bad, "\n".join(bad)


def test_the_cli_import_check_catches_a_planted_violation(tmp_path):
    import shutil

    copy = tmp_path / "cli"
    shutil.copytree(REPO / "harness" / "cli", copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert cli_violations(copy) == []
    batch = copy / "batch.py"
    batch.write_text(batch.read_text(encoding="utf-8") + "\nfrom harness.formats.bounded import loads\n"
                     "from harness.cli.options import _with_origins\nfrom harness.api import _some\n"
                     "from harness.llm import NotAName\nimport harness.api\nfrom harness.compare import load_systems\n"
                     "from harness import evaluate\nfrom harness.context import ensure_context\n",
                     encoding="utf-8")
    bad = cli_violations(copy)
    assert [b.split(": ", 1)[1] for b in bad] == [
        "from harness.formats.bounded import ... (neither public nor a command's back-end)",
        "from harness.cli.options import _with_origins (private)",
        "from harness.api import _some (private)",
        "from harness.llm import NotAName (not public)",
        "import harness.api",
        "from harness import evaluate (the top package; import it from harness.api)",
        "from harness.context import ensure_context (not a public name)",
    ], bad  # a back-end's own name (load_systems) is allowed


def _examples(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


EXAMPLES = [(page, i) for page in (API_DOC, REPO / "README.md") for i in range(len(_examples(page)))]


@pytest.mark.parametrize("page,index", EXAMPLES, ids=[f"{p.name}-{i + 1}" for p, i in EXAMPLES])
def test_the_pages_examples_run(page, index, tmp_path, monkeypatch):
    """Every Python example of docs/api.md and the README runs as written (in an empty folder)."""
    monkeypatch.chdir(tmp_path)
    code = compile(_examples(page)[index], f"{page.name} example {index + 1}", "exec")
    exec(code, {"__name__": "docs_example"})
