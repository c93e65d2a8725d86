"""`harness new-plugin` writes a skeleton whose own tests pass."""

from __future__ import annotations

import os
import subprocess
import sys

from click.testing import CliRunner

from harness.cli import cli


def test_new_plugin_skeleton_passes_its_tests(tmp_path):
    res = CliRunner().invoke(cli, ["new-plugin", "word-overlap", "--dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    root = tmp_path / "harness-word-overlap"
    assert (root / "pyproject.toml").read_text().count('word-overlap = "harness_word_overlap"') == 1
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
                         capture_output=True, text=True, env=env, cwd=root)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout


def test_new_plugin_rejects_bad_names(tmp_path):
    res = CliRunner().invoke(cli, ["new-plugin", "Bad Name", "--dir", str(tmp_path)])
    assert res.exit_code == 2 and "lowercase" in res.output
