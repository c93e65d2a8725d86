"""A test session of its own: private cache folder, no downloads, no LLM keys from the shell."""

import pytest
from harness.testing import isolated_environment


@pytest.fixture(scope="session", autouse=True)
def _isolated(tmp_path_factory):
    with isolated_environment(tmp_path_factory.mktemp("harness-cache"), clear_llm=True):
        yield
