"""Fixtures for harness-pir's tests (the core's pattern, tests/conftest.py).

- The session gets its own ``HARNESS_CACHE_DIR`` (embeddings never go to ``~/.cache``); automatic
  download is off and no mirror is configured, so no test reaches the internet.
- ``HARNESS_DATA`` defaults to the shared benchmark folder ``../shared/data`` next to the repository;
  ``data_dir`` returns it and ``demo_file`` the PIR demo JSON, skipping the test when absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.testing import isolated_environment, require_data, shared_data_dir, skip_without_plugin

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
REPO = PLUGIN_ROOT.parents[1]
DEMO_RELPATH = "pir/demo_pir_dataset.json"


def shared_data_path() -> Path:
    return shared_data_dir(REPO)


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with isolated_environment(tmp_path_factory.mktemp("harness-cache"), repo=REPO):
        yield


@pytest.fixture
def data_dir() -> Path:
    """The benchmark data folder (read-only); skips the test when it is not available."""
    return require_data(shared_data_path(), fetch="pir")


@pytest.fixture
def demo_file(data_dir: Path) -> Path:
    """The PIR demo release; skips the test when it is not in the data folder."""
    path = data_dir / DEMO_RELPATH
    if not path.is_file():
        pytest.skip(f"PIR demo data not found at {path}: `harness data download pir:perspectrum` fetches it")
    return path


def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport | None:
    """Each test file here is reported as skipped, saying what to install, where the plugin is missing."""
    return skip_without_plugin(collector, "harness-pir")
