"""harness.testing.venv: a plugin wheel installed into a fresh venv appears, and disappears on uninstall."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.testing.venv import build_wheel, fresh_venv, pip

from .plugin_fixtures import GOOD_PLUGIN


def test_wheel_install_and_uninstall_in_fresh_venv(tmp_path):
    pytest.importorskip("hatchling", reason="building a wheel needs hatchling (pip install 'harness-ir[test]')")
    project = tmp_path / "harness-echo"
    (project / "harness_echo_plugin").mkdir(parents=True)
    (project / "harness_echo_plugin" / "__init__.py").write_text(GOOD_PLUGIN.replace('"bm25"', '"echo2"'))
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "harness-echo"\nversion = "0.3.0"\ndependencies = ["harness-ir"]\n'
        '[project.entry-points.harness]\necho = "harness_echo_plugin"\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["harness_echo_plugin"]\n')
    wheel = build_wheel(project, tmp_path / "dist")
    python = fresh_venv(tmp_path / "venv")

    def listed() -> dict[str, dict]:
        out = subprocess.run([str(python), "-m", "harness.cli", "list-plugins", "--json"], capture_output=True,
                             text=True, check=True)
        return {p["distribution"]: p for p in json.loads(out.stdout)}

    assert "harness-echo" not in listed()
    assert pip(python, "install", "--no-deps", "--no-index", str(wheel)).returncode == 0
    plugins = listed()
    assert plugins["harness-echo"]["version"] == "0.3.0"
    assert plugins["harness-echo"]["components"] == {"retriever": ["echo", "echo2"]}
    assert pip(python, "uninstall", "-y", "harness-echo").returncode == 0
    assert "harness-echo" not in listed()
    assert Path(python).parent.parent.joinpath("outer-site").is_dir()
