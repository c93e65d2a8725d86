"""Shared test fixtures.

- Every test session gets its own ``HARNESS_CACHE_DIR`` (a temporary folder), so tests never write
  to ``~/.cache``; automatic data download is off (``HARNESS_AUTO_DOWNLOAD=0``) and no mirror is
  configured, so no test can reach the internet.
- ``HARNESS_DATA`` defaults to the shared benchmark folder ``../shared/data`` (next to the repo)
  when that exists; the ``data_dir`` fixture returns it and skips the test when it is absent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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
            "shared data (see docs/data.md), or fetch it with `harness data download TASK`"
        )
    return path
