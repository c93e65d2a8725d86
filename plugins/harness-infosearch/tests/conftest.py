"""harness-infosearch's tests: each test file here is reported as skipped, saying what to install,
where the plugin is not installed (docs/architecture.md, "Tests that hold anywhere")."""

from __future__ import annotations

import pytest
from harness.testing import skip_without_plugin


def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport | None:
    """Each test file here is reported as skipped, saying what to install, where the plugin is missing."""
    return skip_without_plugin(collector, "harness-infosearch")
