"""Every test module collects with the core alone (issue 23): in a venv that sees only the core's own
requirements, pytest's and the checkout's editable core and plugins (the optional extras, torch and
every other distribution of this environment hidden), ``pytest --collect-only`` over ``tests/`` and
``plugins/`` reports no collection error: a module that needs an extra skips, saying which.

Without the plugins too (issue 31: ``pip install .`` plus pytest), a test that needs a plugin skips,
saying which (``harness.testing.requires_plugin``; a plugin's test folder, ``skip_without_plugin``):
the plugins' tests and the core tests that name a plugin's component run there with no failure.

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


def _venv(tmp_path_factory: pytest.TempPathFactory, name: str, checkout: set[str]) -> Path:
    """A venv seeing the core's requirements, pytest's and the ``checkout`` distributions, nothing else."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    keep = _closure(base_requirements([Requirement(r) for r in project["dependencies"]]))
    keep |= _closure([Requirement("pytest")]) | checkout
    everything = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions()}
    return fresh_venv(tmp_path_factory.mktemp(name) / "venv", hide=tuple(sorted(everything - keep)))


@pytest.fixture(scope="module")
def core_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory, "core-only", _checkout_distributions())


@pytest.fixture(scope="module")
def core_alone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install .`` plus pytest: the core without its extras and without any plugin."""
    return _venv(tmp_path_factory, "core-alone", {"harness-ir"})


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


#: core test modules that name a plugin's component (they failed here before issue 31)
NAMING_PLUGINS = ("tests/test_data_pins.py", "tests/test_data_verify.py", "tests/test_mteb_export.py",
                  "tests/test_results_untrusted.py", "tests/test_view.py")


def test_tests_that_need_a_plugin_skip_saying_which_without_it(core_alone: Path) -> None:
    plugins = sorted(p.parent.name for p in (REPO / "plugins").glob("*/pyproject.toml"))
    probe = _run(core_alone, "-c", f"import importlib.metadata as m; print([d.metadata['Name'] for d in "
                                   f"m.distributions() if d.metadata['Name'] in {plugins!r}])")
    assert probe.returncode == 0 and probe.stdout.strip() == "[]", probe.stdout + probe.stderr
    done = _run(core_alone, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "plugins", *NAMING_PLUGINS)
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    last = done.stdout.strip().splitlines()[-1]
    assert "failed" not in last and "error" not in last and "passed" in last, tail
    skips = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    for where, why in [("plugins/harness-rankgpt/tests/test_parsing.py", "needs the plugin harness-rankgpt: "
                        "pip install -e ./plugins/harness-rankgpt"),
                       ("plugins/harness-birco/tests/test_data.py", "needs the plugins harness-birco, harness-rankgpt"),
                       ("plugins/harness-pir/tests/test_metric.py", "needs the plugin harness-pir"),
                       ("tests/test_data_verify.py", "needs the plugins harness-birco, harness-pir"),
                       ("tests/test_mteb_export.py", "needs the plugin harness-birco"),
                       ("tests/test_view.py", "needs the plugin harness-rankgpt")]:
        assert any(where in line and why in line for line in skips), (where, why, tail)
