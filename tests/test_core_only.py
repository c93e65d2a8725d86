"""Every test module collects with the core alone (issue 23): in a venv that sees only the core's own
requirements, pytest's and the checkout's editable core and plugins (the optional extras, torch and
every other distribution of this environment hidden), ``pytest --collect-only`` over ``tests/`` and
``plugins/`` reports no collection error: a module that needs an extra skips, saying which.

The whole suite in such a venv (it passes with skips; a test that fails only for a missing extra is
reported as skipped by the root ``conftest.py``, except under ``CI=true``) is the command in
docs/architecture.md, "Tests that hold anywhere"; it takes as long as the suite, so it is not run here."""

from __future__ import annotations

import os
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness.runtime.extras import EXTRAS
from harness.testing.venv import fresh_venv

from .test_packaging import _closure, base_requirements

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _checkout_distributions() -> set[str]:
    """The core and the plugins of this checkout (their editable or regular installations)."""
    names = {canonicalize_name(tomllib.loads((p / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"])
             for p in [REPO, *sorted(p.parent for p in (REPO / "plugins").glob("*/pyproject.toml"))]}
    return {n for n in names if _installed(n)}


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture(scope="module")
def core_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    keep = _closure(base_requirements([Requirement(r) for r in project["dependencies"]]))
    keep |= _closure([Requirement("pytest")]) | _checkout_distributions()
    everything = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions()}
    return fresh_venv(tmp_path_factory.mktemp("core-only") / "venv", hide=tuple(sorted(everything - keep)))


def _run(python: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONPATH")}
    return subprocess.run([str(python), *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=900)


def test_the_extras_are_hidden(core_only: Path) -> None:
    modules = sorted({m for parts in EXTRAS.values() for m, _ in parts} | {"torch", "transformers", "playwright"})
    probe = _run(core_only, "-c", f"import importlib.util as u; print([m for m in {modules!r} if u.find_spec(m)])")
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "[]"


def test_every_test_module_collects_without_the_extras(core_only: Path) -> None:
    done = _run(core_only, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests", "plugins")
    tail = done.stdout[-3000:]
    assert done.returncode == 0, tail + done.stderr[-2000:]
    assert "error" not in done.stdout.splitlines()[-1], tail
    assert "SKIPPED" in done.stdout  # modules that need an extra say so
