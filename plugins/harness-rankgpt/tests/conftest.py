"""Fixtures for the harness-rankgpt tests (the pattern of the core's tests/conftest.py).

- Every test session gets its own ``HARNESS_CACHE_DIR``; automatic downloads are off and no data
  mirror is configured, so no test can reach the internet (LLM calls go to the loopback server).
- ``HARNESS_DATA`` defaults to the shared benchmark folder ``../shared/data`` next to the repository;
  ``data_dir`` returns it and skips the test when it is absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.testing import isolated_environment, require_data, shared_data_dir, skip_without_plugin

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
REPO = PLUGIN_ROOT.parents[1]


def shared_data_path() -> Path:
    return shared_data_dir(REPO)


@pytest.fixture(scope="session", autouse=True)
def _rankgpt_isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with isolated_environment(tmp_path_factory.mktemp("rankgpt-cache"), repo=REPO, clear_llm=True):
        yield


@pytest.fixture
def data_dir() -> Path:
    """The benchmark data folder (read-only); skips the test when it is not available."""
    return require_data(shared_data_path(), "trec-dl/bm25_top100.dl19.json", fetch="trec-dl19")


@pytest.fixture
def registry():
    """Built-ins plus this plugin, registered in-process (no entry-point scan)."""
    from harness import PluginHost

    import harness_rankgpt

    host = PluginHost(load_entry_points=False)
    host.register_plugin(harness_rankgpt, "rankgpt", distribution="harness-rankgpt")
    return host.registry


def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport | None:
    """Each test file here is reported as skipped, saying what to install, where the plugin is missing."""
    return skip_without_plugin(collector, "harness-rankgpt")
