"""`harness new-plugin NAME --kind KIND` writes a distribution whose own tests pass: for every kind,
from the source folder; and, built into wheels and installed next to the core's wheel in a fresh
venv, each shows in `harness list-plugins` and passes its tests through its entry point."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.plugins.template import KINDS, plugin_files
from harness.testing.venv import build_wheel, fresh_venv, pip

REPO = Path(__file__).resolve().parents[1]
IN_REPO_PLUGINS = tuple(p.parent.name for p in (REPO / "plugins").glob("*/pyproject.toml"))
PUBLIC_MODULES = {"harness", "harness.llm", "harness.testing"}
NAMES = {kind: f"tiny-{kind}" for kind in KINDS}  # tiny-retriever, ..., tiny-llm-provider
KIND_OF = {"retriever": "retriever", "reranker": "reranker", "judge": "judge", "metric": "metric",
           "llm-provider": "llm_provider"}


def _new(tmp_path: Path, kind: str) -> Path:
    res = CliRunner().invoke(cli, ["new-plugin", NAMES[kind], "--kind", kind, "--dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    return tmp_path / f"harness-{NAMES[kind]}"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, **extra}


@pytest.mark.parametrize("kind", KINDS)
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
    if _has_module("ruff"):  # run as `python -m ruff` below (a ruff on PATH alone is another environment's)
        lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=root,
                              capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                         capture_output=True, text=True, env=_env(PYTHONPATH=str(root)), timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " passed" in out.stdout and "failed" not in out.stdout
    assert "1 skipped" in out.stdout  # the entry-point test waits for an install


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def test_wheels_install_next_to_the_core_wheel(tmp_path: Path) -> None:
    """Every kind, built into a wheel and installed with the core's wheel in a fresh venv that hides
    the checkout's editable core and plugins: listed by `harness list-plugins`, all its tests pass
    (the entry-point ones included), and gone again after `pip uninstall`."""
    pytest.importorskip("hatchling", reason="building a wheel needs hatchling (pip install 'harness-ir[test]')")
    roots = {kind: _new(tmp_path / "src", kind) for kind in KINDS}
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
        expected = {"dataset": [name], "task": [name]} if kind == "dataset" else {KIND_OF[kind]: [name]}
        assert entry["components"] == expected
    tests = [str(root / "tests") for root in roots.values()]
    out = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib",
                          *tests], capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "skipped" not in out.stdout  # the entry-point tests ran too
    assert pip(python, "uninstall", "-y", f"harness-{NAMES['retriever']}").returncode == 0
    assert f"harness-{NAMES['retriever']}" not in listed()


def test_template_files_per_kind() -> None:
    for kind in KINDS:
        files = plugin_files("probe", kind)
        assert {"pyproject.toml", "README.md", "harness_probe/__init__.py", "tests/conftest.py",
                "tests/test_harness_probe.py"} <= set(files)
        assert not any("@" + key + "@" in text for text in files.values() for key in ("NAME", "MODULE", "CLASS"))
    assert "harness_probe/data/probe.json" in plugin_files("probe", "dataset")
    assert plugin_files("harness-probe", "metric") == plugin_files("probe", "metric")  # the prefix is dropped


def test_new_plugin_rejects_bad_names_and_kinds(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["new-plugin", "Bad Name", "--dir", str(tmp_path)])
    assert res.exit_code == 2 and "lowercase" in res.output
    res = CliRunner().invoke(cli, ["new-plugin", "ok", "--kind", "tokenizer", "--dir", str(tmp_path)])
    assert res.exit_code == 2 and "llm-provider" in res.output
    assert CliRunner().invoke(cli, ["new-plugin", "ok", "--dir", str(tmp_path)]).exit_code == 0
    res = CliRunner().invoke(cli, ["new-plugin", "ok", "--dir", str(tmp_path)])
    assert res.exit_code == 2 and "already exists" in res.output
