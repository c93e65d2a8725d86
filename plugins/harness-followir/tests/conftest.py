"""Fixtures for harness-followir's tests: a private cache, automatic download off, no mirror (the core's
pattern, tests/conftest.py); the Hub is the loopback imitation ``harness.testing.HubServer``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.testing import isolated_environment, skip_without_plugin

sys.path.insert(0, str(Path(__file__).resolve().parent))  # followir_fixture


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with isolated_environment(tmp_path_factory.mktemp("harness-cache")):
        yield


def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport | None:
    """Each test file here is reported as skipped, saying what to install, where the plugin is missing."""
    return skip_without_plugin(collector, "harness-followir")
