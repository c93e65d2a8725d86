"""The distribution as users get it: the built wheel, installed into a fresh virtual environment next
to harness, shows in ``harness list-plugins``; uninstalling removes it. Also: the entry point of the
editable installation is discovered."""

from __future__ import annotations

import json
import subprocess
import tomllib
import zipfile
from importlib import metadata

import pytest
from harness.testing import build_wheel, fresh_venv, pip

from .conftest import PLUGIN_ROOT


def test_wheel_installs_into_a_fresh_venv_and_uninstalls(tmp_path):
    pytest.importorskip("hatchling")
    wheel = build_wheel(PLUGIN_ROOT, tmp_path / "dist")
    project = tomllib.loads((PLUGIN_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert wheel.name == f"harness_rankgpt-{project['version']}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        eps = next(n for n in names if n.endswith("entry_points.txt"))
        assert zf.read(eps).decode() == "[harness]\nrankgpt = harness_rankgpt\n"
        meta = zf.read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Requires-Dist: harness" in meta
    assert not any(n.startswith("tests/") for n in names)

    python = fresh_venv(tmp_path / "venv", hide=("harness-rankgpt",))

    def listed() -> dict[str, dict]:
        out = subprocess.run([str(python), "-m", "harness.cli", "list-plugins", "--json"], capture_output=True,
                             text=True, check=True)
        return {p["distribution"]: p for p in json.loads(out.stdout)}

    assert "harness-rankgpt" not in listed()
    done = pip(python, "install", "--no-deps", "--no-index", str(wheel))
    assert done.returncode == 0, done.stderr
    plugin = listed()["harness-rankgpt"]
    assert plugin["version"] == project["version"] and plugin["error"] is None
    assert plugin["components"] == {"reranker": ["rankgpt", "relevance-generation"]}
    done = pip(python, "uninstall", "-y", "harness-rankgpt")
    assert done.returncode == 0, done.stderr
    assert "harness-rankgpt" not in listed()


def test_editable_install_is_discovered(monkeypatch):
    try:
        metadata.distribution("harness-rankgpt")
    except metadata.PackageNotFoundError:
        pytest.skip("pip install -e plugins/harness-rankgpt --no-deps")
    for var in ("HARNESS_PLUGINS", "HARNESS_BLOCK_PLUGINS", "HARNESS_DISABLE_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(var, raising=False)
    from harness import PluginHost

    host = PluginHost()
    report = {p["distribution"]: p for p in host.report()}
    assert report["harness-rankgpt"]["error"] is None
    assert report["harness-rankgpt"]["components"]["reranker"] == ["rankgpt", "relevance-generation"]
    comp = host.registry.lookup("reranker", "rankgpt", "plugin")
    assert "sliding window" in comp.description
