"""A test session of its own: private cache folder, no downloads, no LLM keys from the shell;
``HARNESS_DATA`` defaults to the shared benchmark folder next to the harness checkout."""

import sys
from pathlib import Path

import pytest
from harness.testing import isolated_environment

REPO = Path(__file__).resolve().parents[3]  # plugins/harness-qlm/tests -> the harness checkout
PLUGIN_ROOT = Path(__file__).resolve().parents[1]

if str(PLUGIN_ROOT) not in sys.path:  # the tests also run without the distribution installed (as
    sys.path.insert(0, str(PLUGIN_ROOT))  # pyproject.toml's pythonpath does when run from this folder)


@pytest.fixture(scope="session", autouse=True)
def _isolated(tmp_path_factory):
    with isolated_environment(tmp_path_factory.mktemp("harness-cache"), repo=REPO, clear_llm=True):
        yield
