"""Shared test fixtures (helpers in :mod:`harness.testing.venv`, which plugin test suites reuse).

- The session gets its own ``HARNESS_CACHE_DIR``; automatic download is off and no mirror is
  configured, so no test can reach the internet.
- ``HARNESS_DATA`` defaults to the shared benchmark folder ``../shared/data`` next to the repo;
  the ``data_dir`` fixture returns it and skips the test, saying why, when it is absent.
- ``llm_double``: the test double of an LLM reranker (tests/llm_double.py), installed for the test
  through its entry point, for core tests that need some LLM reranker without a plugin's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing import isolated_environment, require_data, shared_data_dir

from .plugin_fixtures import install_llm_double, use_distributions

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


@pytest.fixture(scope="session")
def llm_double_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the test double ``harness-llm-double`` (tests/llm_double.py) as a distribution."""
    return install_llm_double(tmp_path_factory.mktemp("llm-double"))


@pytest.fixture
def llm_double(llm_double_root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The reranker ``llm-double``, installed for this test (this process and the ``harness`` commands
    it starts find it through its entry point, as a plugin): its name, for ``--reranker``."""
    use_distributions(monkeypatch, llm_double_root)
    return "llm-double"
