"""A test session of its own: private cache folder, no downloads, no LLM keys from the shell;
``HARNESS_DATA`` defaults to the shared benchmark folder next to the harness checkout."""

from pathlib import Path

import pytest
from harness.testing import isolated_environment

REPO = Path(__file__).resolve().parents[3]  # plugins/harness-qlm/tests -> the harness checkout


@pytest.fixture(scope="session", autouse=True)
def _isolated(tmp_path_factory):
    with isolated_environment(tmp_path_factory.mktemp("harness-cache"), repo=REPO, clear_llm=True):
        yield
