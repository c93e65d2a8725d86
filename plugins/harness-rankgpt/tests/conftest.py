"""Fixtures for the harness-rankgpt tests (the pattern of the core's tests/conftest.py).

- Every test session gets its own ``HARNESS_CACHE_DIR``; automatic downloads are off and no data
  mirror is configured, so no test can reach the internet (LLM calls go to the loopback server).
- ``HARNESS_DATA`` defaults to the shared benchmark folder ``../shared/data`` next to the repository;
  ``data_dir`` returns it and skips the test when it is absent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
REPO = PLUGIN_ROOT.parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data_path() -> Path:
    """``$HARNESS_DATA`` if set, else ``<repo>/../shared/data``."""
    return Path(os.environ.get("HARNESS_DATA") or SHARED_DATA)


@pytest.fixture(scope="session", autouse=True)
def _rankgpt_isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    mp = pytest.MonkeyPatch()
    mp.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("rankgpt-cache")))
    mp.setenv("HARNESS_AUTO_DOWNLOAD", "0")
    mp.delenv("HARNESS_DATA_URL", raising=False)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HARNESS_LLM"):
        mp.delenv(var, raising=False)
    if not os.environ.get("HARNESS_DATA") and SHARED_DATA.is_dir():
        mp.setenv("HARNESS_DATA", str(SHARED_DATA))
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def _fresh_llm_layer() -> Iterator[None]:
    """Each test starts and ends with no LLM clients or settings left over."""
    import harness.llm

    harness.llm.reset()
    yield
    harness.llm.reset()


@pytest.fixture
def data_dir() -> Path:
    """The benchmark data folder (read-only); skips the test when it is not available."""
    path = shared_data_path()
    if not (path / "trec-dl" / "bm25_top100.dl19.json").is_file():
        pytest.skip(f"TREC DL19 data not found under {path}: set HARNESS_DATA (see docs/data.md) "
                    "or run `harness data download trec-dl19`")
    return path


@pytest.fixture
def registry():
    """Built-ins plus this plugin, registered in-process (no entry-point scan)."""
    from harness.plugins import PluginHost

    import harness_rankgpt

    host = PluginHost(load_entry_points=False)
    host.register_plugin(harness_rankgpt, "rankgpt", distribution="harness-rankgpt")
    return host.registry
