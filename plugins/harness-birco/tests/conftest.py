"""Fixtures for harness-birco's tests (the core's pattern, tests/conftest.py).

- The session gets its own ``HARNESS_CACHE_DIR`` (LLM replies never go to ``~/.cache``); automatic
  download is off and no mirror is configured, so no test reaches the internet.
- ``HARNESS_DATA`` defaults to the shared benchmark folder ``../shared/data`` next to the repository;
  ``data_dir`` returns it and ``birco_dir`` its ``birco/`` folder, skipping the test when absent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.testing import skip_without_plugin

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
REPO = PLUGIN_ROOT.parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data_path() -> Path:
    """``$HARNESS_DATA`` if set, else ``<repo>/../shared/data``."""
    return Path(os.environ.get("HARNESS_DATA") or SHARED_DATA)


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    mp = pytest.MonkeyPatch()
    mp.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("harness-cache")))
    mp.setenv("HARNESS_AUTO_DOWNLOAD", "0")
    mp.delenv("HARNESS_DATA_URL", raising=False)
    if not os.environ.get("HARNESS_DATA") and SHARED_DATA.is_dir():
        mp.setenv("HARNESS_DATA", str(SHARED_DATA))
    yield
    mp.undo()


@pytest.fixture
def data_dir() -> Path:
    """The benchmark data folder (read-only); skips the test when it is not available."""
    path = shared_data_path()
    if not path.is_dir():
        pytest.skip(
            f"benchmark data not found at {path}: set HARNESS_DATA to a folder holding the "
            "shared data (see docs/data.md), or fetch it with `harness data download birco`"
        )
    return path


@pytest.fixture
def birco_dir(data_dir: Path) -> Path:
    """The BIRCO pickles; skips the test when they are not in the data folder."""
    path = data_dir / "birco"
    if not (path / "arguana" / "test_set.pickle").is_file():
        pytest.skip(f"BIRCO data not found at {path}: `harness data download birco` fetches it")
    return path


def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport | None:
    """Each test file here is reported as skipped, saying what to install, where the plugin is missing."""
    return skip_without_plugin(collector, "harness-birco", "harness-rankgpt")
