"""Helpers for testing harness and its plugins: an isolated environment for a test session, the
shared benchmark folder (or a clear skip), and installing a plugin the way users do.

:func:`fresh_venv` makes a virtual environment that sees this interpreter's installed packages
(so harness, torch and the rest need no reinstall) *except* the distributions named in ``hide``,
so a test can install a plugin's built wheel into it, see it in ``harness list-plugins``,
uninstall it and see it gone, even while the same plugin is installed in the outer environment.

:func:`requires_plugin` (a mark) and :func:`skip_without_plugin` (a plugin test folder's collection
hook) skip, saying which plugin to install, a test that needs a plugin distribution that is not
installed; :func:`plugin_missing` is the reason, or None. Never under ``CI=true``, where every plugin
is installed: there a missing one fails the test instead of hiding it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import venv
from importlib import metadata
from pathlib import Path
from typing import Any


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def fresh_venv(root: str | Path, hide: tuple[str, ...] = ()) -> Path:
    """Create a venv under ``root`` and return its python. The outer site-packages is linked in
    entry by entry, leaving out the ``hide`` distributions (their dist-info, modules and editable
    ``.pth`` files)."""
    root = Path(root)
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    python = root / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    outer = Path(sysconfig.get_paths()["purelib"])
    hidden = {_canon(h) for h in hide}
    hidden_modules = set()
    for info in outer.glob("*.dist-info"):
        dist = _canon(info.name.split("-")[0])
        if dist in hidden:
            top = info / "top_level.txt"
            hidden_modules |= set(top.read_text().split()) if top.exists() else set()
            record = info / "RECORD"
            if record.exists():
                hidden_modules |= {line.split(",")[0].split("/")[0].removesuffix(".py")
                                   for line in record.read_text().splitlines() if line}
    view = root / "outer-site"
    view.mkdir()
    for entry in outer.iterdir():
        stem = _canon(entry.name.split("-")[0].removesuffix(".pth").removesuffix(".py"))
        stem = stem.removeprefix("_editable_impl_").removeprefix("__editable___")
        if stem in hidden or entry.name in hidden_modules or entry.name.removesuffix(".py") in hidden_modules:
            continue
        if entry.suffix == ".pth":  # .pth files must sit in a site dir to run: copy them
            (purelib / f"outer_{entry.name}").write_text(entry.read_text())
            continue
        (view / entry.name).symlink_to(entry)
    (purelib / "00-outer-site.pth").write_text(str(view) + "\n")
    return python


def pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the outer pip against the venv's interpreter (the venv has no pip of its own), e.g.
    ``pip(py, "install", "--no-deps", "--no-index", wheel)`` or ``pip(py, "uninstall", "-y", name)``."""
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args], capture_output=True,
                          text=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})


def build_wheel(project: str | Path, dest: str | Path) -> Path:
    """Build ``project``'s wheel into ``dest`` without network access (needs hatchling installed)."""
    dest = Path(dest)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dest),
                    str(project)], check=True, capture_output=True, text=True)
    return next(dest.glob("*.whl"))


def plugin_missing(*distributions: str) -> str | None:
    """Why a test needing the plugin ``distributions`` cannot run here, ``"needs the plugin
    harness-rankgpt: pip install -e ./plugins/harness-rankgpt"`` (a distribution this checkout does not
    hold: ``pip install NAME``), or None when each is installed, and always None under ``CI=true``."""
    if os.environ.get("CI", "").lower() == "true":
        return None
    missing = [d for d in distributions if not _installed(d)]
    if not missing:
        return None
    plugins = Path(__file__).resolve().parents[2] / "plugins"
    lines = [f"-e ./plugins/{d}" if (plugins / d / "pyproject.toml").is_file() else d for d in missing]
    return f"needs the plugin{'s' if len(missing) > 1 else ''} {', '.join(missing)}: pip install {' '.join(lines)}"


def requires_plugin(*distributions: str) -> Any:
    """A pytest mark that skips the test (or, as ``pytestmark``, the module; in ``pytest.param(...,
    marks=)`` one case) with :func:`plugin_missing`'s reason where a plugin it needs is not installed."""
    import pytest

    reason = plugin_missing(*distributions)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def skip_without_plugin(collector: Any, *distributions: str) -> Any:
    """For a plugin's ``tests/conftest.py``: every test file of the folder is reported as skipped,
    before it is imported (its imports of the plugin would fail), where the plugin is not installed::

        def pytest_make_collect_report(collector):
            return skip_without_plugin(collector, "harness-rankgpt")

    Returns a skipped ``pytest.CollectReport`` for such a file, else None (collected as usual)."""
    import pytest

    reason = plugin_missing(*distributions) if isinstance(collector, pytest.File) else None
    if reason is None:
        return None
    return pytest.CollectReport(collector.nodeid, "skipped", (str(collector.path), None, f"Skipped: {reason}"), [])


def _installed(distribution: str) -> bool:
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True
