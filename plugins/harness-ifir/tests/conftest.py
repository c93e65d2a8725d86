"""Fixtures for the harness-ifir tests.

- Each test gets its own ``HARNESS_CACHE_DIR`` (so LLM reply counts start from zero), automatic
  downloads are off, and ``HARNESS_DATA`` points at the hand-made fixture in the release layout
  (``tests/fixture/ifir/<subset>/``); LLM calls go to the loopback server only.
- ``registry``: the plugin registry with harness-ifir registered (installed entry point, or the
  module registered in-process when the distribution is not installed).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixture"

if str(PLUGIN_ROOT) not in sys.path:  # the tests also run without the distribution installed
    sys.path.insert(0, str(PLUGIN_ROOT))


@pytest.fixture(autouse=True)
def _ifir_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_AUTO_DOWNLOAD", "0")
    monkeypatch.delenv("HARNESS_DATA_URL", raising=False)
    monkeypatch.setenv("HARNESS_DATA", str(FIXTURE))
    for var in ("HARNESS_PLUGINS", "HARNESS_BLOCK_PLUGINS", "HARNESS_DISABLE_PLUGIN_AUTOLOAD", "HARNESS_LLM"):
        monkeypatch.delenv(var, raising=False)
    yield  # (the environment is read when a context is made: nothing else to reset)


@pytest.fixture
def registry():
    from harness import PluginHost

    import harness_ifir

    host = PluginHost()
    if "ifir:fiqa" not in host.registry.components["task"]:
        host.register_plugin(harness_ifir, "harness-ifir")
    yield host.registry
