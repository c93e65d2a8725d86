"""Where the harness caches (LLM replies, embeddings) live by default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV_CACHE = "HARNESS_CACHE_DIR"


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CACHE):
        return Path(env[ENV_CACHE]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "harness"
