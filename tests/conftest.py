"""Shared test fixtures (helpers in :mod:`harness.testing.venv`, which plugin test suites reuse).

- The session gets its own ``HARNESS_CACHE_DIR``; automatic download is off and no mirror is
  configured, so no test can reach the internet.
- ``HARNESS_DATA`` defaults to the shared benchmark folder ``../shared/data`` next to the repo;
  the ``data_dir`` fixture returns it and skips the test, saying why, when it is absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing import isolated_environment, require_data, shared_data_dir

REPO = Path(__file__).resolve().parents[1]


def shared_data_path() -> Path:
    return shared_data_dir(REPO)


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with isolated_environment(tmp_path_factory.mktemp("harness-cache"), repo=REPO):
        yield


@pytest.fixture
def data_dir() -> Path:
    """The benchmark data folder (read-only); skips the test when it is not available."""
    return require_data(shared_data_path())
