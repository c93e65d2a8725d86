"""`harness new-plugin NAME --kind KIND` writes a distribution whose own tests pass: for every kind,
from the source folder; and, built into wheels and installed next to the core's wheel in a fresh
venv, each shows in `harness list-plugins` and passes its tests through its entry point."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.components.kinds import KIND_TABLE, kind_named
from harness.concepts.errors import HarnessError
from harness.plugins.template import KINDS, plugin_files
from harness.testing.venv import build_wheel, fresh_venv, pip

REPO = Path(__file__).resolve().parents[1]
IN_REPO_PLUGINS = tuple(p.parent.name for p in (REPO / "plugins").glob("*/pyproject.toml"))
PUBLIC_MODULES = {"harness", "harness.llm", "harness.testing"}
TEMPLATES = REPO / "harness" / "plugins" / "templates"
SCAFFOLD_KINDS = [k.cli_name for k in KIND_TABLE if k.scaffold]  # the kinds, from kinds.py
NAMES = {kind: f"tiny-{kind}" for kind in SCAFFOLD_KINDS}  # tiny-retriever, ..., tiny-llm-provider
TOKENS = ("plugin-name", "plugin_name", "PLUGIN_NAME", "_helpers")  # what rendering replaces


def _new(tmp_path: Path, kind: str) -> Path:
    res = CliRunner().invoke(cli, ["new-plugin", NAMES[kind], "--kind", kind, "--dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    return tmp_path / f"harness-{NAMES[kind]}"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, **extra}


@pytest.mark.parametrize("kind", SCAFFOLD_KINDS)
def test_each_kind_passes_its_own_tests(tmp_path: Path, kind: str) -> None:
    root = _new(tmp_path, kind)
    name, module = NAMES[kind], "harness_" + NAMES[kind].replace("-", "_")
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert project["project"]["name"] == f"harness-{name}"
    assert project["project"]["dependencies"] == ["harness-ir"]
    assert project["project"]["entry-points"]["harness"] == {name: module}
    readme = (root / "README.md").read_text()
    assert "](" not in readme and "example.com" not in readme and "TODO" not in readme  # no placeholder links
    if kind == "dataset":
        assert (root / module / "data" / f"{name}.json").is_file()  # the data ships inside the package
    # only the public surface: harness, harness.llm, harness.testing
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "harness":
                assert node.module in PUBLIC_MODULES, f"{path.relative_to(root)} imports {node.module}"
            if isinstance(node, ast.Import):
                assert all(a.name in PUBLIC_MODULES or a.name.split(".")[0] != "harness" for a in node.names)
    assert not any(token in text for text in map(Path.read_text, root.rglob("*.*")) for token in TOKENS)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                         capture_output=True, text=True, env=_env(PYTHONPATH=str(root)), timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " passed" in out.stdout and "failed" not in out.stdout
    assert "1 skipped" in out.stdout  # the entry-point test waits for an install


@pytest.mark.parametrize("kind", SCAFFOLD_KINDS)
def test_each_kind_is_ruff_clean_with_its_own_settings(tmp_path: Path, kind: str) -> None:
    """`python -m ruff` (the test extra's), not a ruff on PATH (another environment's)."""
    pytest.importorskip("ruff", reason="linting the scaffold needs ruff (pip install 'harness-ir[test]')")
    root = _new(tmp_path, kind)
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(root)], cwd=root,
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_wheels_install_next_to_the_core_wheel(tmp_path: Path) -> None:
    """Every kind, built into a wheel and installed with the core's wheel in a fresh venv that hides
    the checkout's editable core and plugins: listed by `harness list-plugins`, all its tests pass
    (the entry-point ones included), and gone again after `pip uninstall`."""
    pytest.importorskip("hatchling", reason="building a wheel needs hatchling (pip install 'harness-ir[test]')")
    roots = {kind: _new(tmp_path / "src", kind) for kind in SCAFFOLD_KINDS}
    core = build_wheel(REPO, tmp_path / "dist" / "core")
    wheels = [build_wheel(root, tmp_path / "dist" / root.name) for root in roots.values()]
    python = fresh_venv(tmp_path / "venv", hide=("harness-ir", *IN_REPO_PLUGINS))
    res = pip(python, "install", "--no-deps", "--no-index", str(core), *map(str, wheels))
    assert res.returncode == 0, res.stderr

    def listed() -> dict[str, dict]:
        out = subprocess.run([str(python), "-m", "harness.cli", "list-plugins", "--json"], capture_output=True,
                             text=True, cwd=tmp_path, env=_env(), timeout=300)
        assert out.returncode == 0, out.stderr
        return {p["distribution"]: p for p in json.loads(out.stdout)}

    report = listed()
    assert set(report) == {"harness-ir", *(f"harness-{n}" for n in NAMES.values())}
    for kind, name in NAMES.items():
        entry = report[f"harness-{name}"]
        assert entry["error"] is None and entry["version"] == "0.1.0"
        expected = {"dataset": [name], "task": [name]} if kind == "dataset" else {kind_named(kind).name: [name]}
        assert entry["components"] == expected
    tests = [str(root / "tests") for root in roots.values()]
    out = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib",
                          *tests], capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "skipped" not in out.stdout  # the entry-point tests ran too
    assert pip(python, "uninstall", "-y", f"harness-{NAMES['retriever']}").returncode == 0
    assert f"harness-{NAMES['retriever']}" not in listed()
    # the templates ship in the core's wheel (byte-compiled there by pip): it writes what the checkout writes
    script = ("import json, harness; from harness.plugins.template import KINDS, plugin_files; "
              "print(json.dumps([harness.__file__, {k: plugin_files('wheel-probe', k) for k in KINDS}]))")
    out = subprocess.run([str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                         timeout=300)
    assert out.returncode == 0, out.stderr
    where, written = json.loads(out.stdout)
    assert not Path(where).is_relative_to(REPO)
    assert written == {kind: plugin_files("wheel-probe", kind) for kind in SCAFFOLD_KINDS}


def test_template_files_per_kind() -> None:
    for kind in KINDS:
        files = plugin_files("probe", kind)
        assert {"pyproject.toml", "README.md", "harness_probe/__init__.py", "tests/conftest.py",
                "tests/test_harness_probe.py"} <= set(files)
        assert not any("@" + key + "@" in text for text in files.values() for key in ("NAME", "MODULE", "CLASS"))
        assert not any(token in rel or token in text for rel, text in files.items() for token in TOKENS)
        assert not any(re.search(r"@[A-Z]+@", text) for text in files.values())
        assert len(files) == 6 + (kind == "dataset")
    assert "harness_probe/data/probe.json" in plugin_files("probe", "dataset")
    assert plugin_files("harness-probe", "metric") == plugin_files("probe", "metric")  # the prefix is dropped
    assert plugin_files("probe", "llm_provider") == plugin_files("probe", "llm-provider")  # either spelling


def test_the_kinds_come_from_kinds_py() -> None:
    """`--kind` offers the scaffold kinds of kinds.py, each has its template folder, and no other kind has one."""
    (option,) = [p for p in cli.commands["new-plugin"].params if p.name == "kind"]
    assert list(option.type.choices) == SCAFFOLD_KINDS == list(KINDS)
    folders = {p.name for p in TEMPLATES.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert folders == {kind_named(kind).name for kind in SCAFFOLD_KINDS}
    for kind in (k for k in KIND_TABLE if not k.scaffold):
        with pytest.raises(HarnessError, match="llm-provider"):
            plugin_files("probe", kind.name)


def _template_files(folder: Path) -> set[str]:
    """The files under ``folder`` (relative), less byte-code and hidden ones (a ruff cache)."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and not any(
        part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)}


def test_the_rendering_replaces_names_helpers_and_fields() -> None:
    """Checked against the template files themselves: every file is written (pyproject's kind and the
    README's words filled in), the helpers of `_helpers.py` stand where the test module imported them,
    and the name's three forms replace the tokens."""
    files = plugin_files("my-ranker2", "llm-provider")
    shared, own = _template_files(TEMPLATES / "_shared"), _template_files(TEMPLATES / "llm_provider") - {"_readme.toml"}
    assert set(files) == {rel.replace("plugin_name", "my_ranker2") for rel in shared | own}
    helpers = (TEMPLATES / "_helpers.py").read_text().split("# -- rendered from here --\n")[1]
    test = files["tests/test_harness_my_ranker2.py"]
    assert helpers in test and "from _helpers" not in test
    template = (TEMPLATES / "llm_provider" / "tests" / "test_harness_plugin_name.py").read_text()
    before, _, after = template.partition("from _helpers import needs_install, registered")
    assert test.startswith(before.replace("harness_plugin_name", "harness_my_ranker2").replace(
        "harness-plugin-name", "harness-my-ranker2"))
    assert test.endswith(after.split("\n", 1)[1])
    init = files["harness_my_ranker2/__init__.py"]
    assert 'NAME = "my-ranker2"' in init and 'KEY_ENV = "MY_RANKER2_API_KEY"' in init
    assert "MY_RANKER2_BASE_URL" in init
    project = tomllib.loads(files["pyproject.toml"])["project"]
    assert project["description"] == "my-ranker2: a harness plugin (llm-provider)"
    readme = files["README.md"]
    assert "export MY_RANKER2_API_KEY=..." in readme and "`my-ranker2` (an OpenAI-shaped" in readme
    assert 'harness.lazy(f"{__name__}.provider:HttpChatProvider")' in readme


def test_the_templates_are_linted_and_not_collected() -> None:
    """`ruff check .` of the checkout lints every template file (no exclude hides them) and they pass;
    pytest does not collect them as tests of the core."""
    pytest.importorskip("ruff", reason="linting the templates needs ruff (pip install 'harness-ir[test]')")
    files = subprocess.run([sys.executable, "-m", "ruff", "check", "--show-files", "."], cwd=REPO,
                           capture_output=True, text=True)
    assert files.returncode == 0, files.stderr
    shown = {Path(line.strip()) for line in files.stdout.splitlines() if line.strip()}
    templates = {TEMPLATES / rel for rel in _template_files(TEMPLATES) if rel.endswith(".py")}
    assert len(templates) >= 2 + 3 * len(SCAFFOLD_KINDS) and templates <= shown
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(TEMPLATES)], cwd=REPO,
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                str(TEMPLATES.parent)], cwd=REPO, capture_output=True, text=True, env=_env())
    assert collected.returncode == 5, collected.stdout + collected.stderr  # 5: no tests collected
    assert "templates" not in collected.stdout


def test_new_plugin_rejects_bad_names_and_kinds(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["new-plugin", "Bad Name", "--dir", str(tmp_path)])
    assert res.exit_code == 2 and "lowercase" in res.output
    res = CliRunner().invoke(cli, ["new-plugin", "ok", "--kind", "tokenizer", "--dir", str(tmp_path)])
    assert res.exit_code == 2 and "llm-provider" in res.output
    assert CliRunner().invoke(cli, ["new-plugin", "ok", "--dir", str(tmp_path)]).exit_code == 0
    res = CliRunner().invoke(cli, ["new-plugin", "ok", "--dir", str(tmp_path)])
    assert res.exit_code == 2 and "already exists" in res.output
