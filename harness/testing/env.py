"""Test-session helpers: an isolated environment (own cache folder, no downloads, no LLM keys) and
the shared benchmark folder, or a clear skip when it is absent."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.context import Context
from harness.plugins.host import PluginHost
from harness.runtime.progress import ProgressSettings
from harness.served.retry import RetryPolicy
from harness.served.settings import LLMSettings

LLM_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HARNESS_LLM")


def shared_data_dir(repo: str | Path) -> Path:
    """``$HARNESS_DATA`` if set, else the shared benchmark folder ``<repo>/../shared/data``."""
    return Path(os.environ.get("HARNESS_DATA") or Path(repo).resolve().parent / "shared" / "data")


@contextmanager
def isolated_environment(cache_dir: str | Path, repo: str | Path | None = None,
                         clear_llm: bool = False) -> Iterator[None]:
    """For a test session: a private ``HARNESS_CACHE_DIR``, automatic downloads off, no mirror (so
    nothing reaches the internet), ``HARNESS_DATA`` defaulting to the shared folder next to ``repo``,
    and with ``clear_llm`` no provider key or base URL from the caller's shell."""
    saved = dict(os.environ)
    os.environ["HARNESS_CACHE_DIR"] = str(cache_dir)
    os.environ["HARNESS_AUTO_DOWNLOAD"] = "0"
    os.environ.pop("HARNESS_DATA_URL", None)
    for var in LLM_VARS if clear_llm else ():
        os.environ.pop(var, None)
    if repo is not None and not os.environ.get("HARNESS_DATA"):
        shared = shared_data_dir(repo)
        if shared.is_dir():
            os.environ["HARNESS_DATA"] = str(shared)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def require_data(root: str | Path, *files: str, fetch: str = "TASK") -> Path:
    """``root`` when it holds ``files`` (paths relative to it); otherwise skip the calling test,
    saying where it looked and how to point at the data."""
    import pytest

    root = Path(root)
    missing = [f for f in files if not (root / f).is_file()] if root.is_dir() else [str(root)]
    if missing:
        pytest.skip(f"benchmark data not found under {root} (missing {', '.join(missing)}): set HARNESS_DATA "
                    f"to a folder holding the shared data (docs/data.md) or run `harness data download {fetch}`")
    return root


def plugin_registry(*plugins: object, entry_points: bool = False) -> Any:
    """A registry of the built-in components plus ``plugins`` (modules or objects with hook
    implementations), registered in-process as a plugin test wants (no entry-point scan unless
    ``entry_points``)."""
    host = PluginHost(load_entry_points=entry_points)
    for plugin in plugins:
        name = getattr(plugin, "__name__", type(plugin).__name__)
        dist = name.split(".")[0].replace("_", "-")
        host.register_plugin(plugin, name, distribution=dist)
    return host.registry


def isolated_context(cache_dir: str | Path, *, registry: Any = None, data_dir: str | Path | None = None,
                     **llm_settings: Any) -> Any:
    """A :class:`harness.Context` for a test: its own cache folder, fast LLM retries (millisecond
    waits), no progress output, and the LLM settings given (``llm=``, ``dry_run=``, ``timeout=``...).
    ``registry``: the components to use (default: the installed plugins)."""
    settings = LLMSettings(retry=RetryPolicy.fast()).merged(**llm_settings)
    return Context.create(registry=registry, cache_dir=cache_dir, data_dir=data_dir, llm=settings,
                          progress=ProgressSettings("off"))
