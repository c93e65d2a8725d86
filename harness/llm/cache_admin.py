"""Managing the LLM reply cache outside an evaluation (``harness cache``; public through
:mod:`harness.llm`): where it is, what it holds, clearing it, and why a request misses it.

Every function takes the cache root (``--cache-dir``; None: ``$HARNESS_CACHE_DIR`` or
``~/.cache/harness``); the replies live in its ``llm/`` subfolder."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.components.registry import Registry
from harness.llm.session import LLMSession
from harness.runtime.cachedir import default_cache_dir
from harness.served.batch.journal import FILENAME, LIVE, BatchJournal
from harness.served.reply_cache import LLMCache, llm_cache_dir

Root = str | os.PathLike[str] | None


@dataclass(frozen=True)
class CacheInfo:
    """What the cache folder holds: entries, bytes, entries per ``provider:model``, corrupt databases
    moved aside, and the batches of ``--llm-batch`` runs still pending in the journal beside it."""

    path: Path
    entries: int
    size_bytes: int
    by_model: Mapping[str, int]
    corrupt_copies: tuple[str, ...]
    pending_batches: int
    #: rows the harness did not write (another diskcache mode such as pickle, a file outside the folder):
    #: refused on every read, never decoded
    refused: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The JSON of ``harness cache info --json``."""
        return {"path": str(self.path), "entries": self.entries, "size_bytes": self.size_bytes,
                "by_model": dict(self.by_model), "corrupt_copies": list(self.corrupt_copies),
                "pending_batches": self.pending_batches, "refused": self.refused}


@dataclass(frozen=True)
class ClearedCache:
    """What :func:`clear_cache` removed: ``entries``, and ``corrupt_copies`` (databases moved aside earlier)."""

    path: Path
    entries: int
    corrupt_copies: int


def _open(cache_dir: Root) -> Any:
    return LLMCache(llm_cache_dir(cache_dir))


def cache_path(cache_dir: Root = None) -> Path:
    """The LLM cache folder under the cache root ``cache_dir`` (``<root>/llm``)."""
    return llm_cache_dir(cache_dir)


def _pending_batches(folder: Path) -> int:
    """Batches of ``--llm-batch`` runs still live in the journal of the cache folder ``folder`` (0 without one)."""
    if not (folder / FILENAME).is_file():
        return 0
    journal = BatchJournal(folder / FILENAME)
    try:
        return len(journal.batches(LIVE))
    finally:
        journal.close()


def cache_info(cache_dir: Root = None) -> CacheInfo:
    """Entries, size and folder of the LLM cache under ``cache_dir``, with counts per model."""
    cache = _open(cache_dir)
    try:
        info = cache.info()
    finally:
        cache.close()
    return CacheInfo(path=cache.path, entries=info["entries"], size_bytes=info["size_bytes"],
                     by_model=info["by_model"], corrupt_copies=tuple(info["corrupt_copies"]),
                     pending_batches=_pending_batches(cache.path), refused=info["refused"])


def clear_cache(cache_dir: Root = None, model: str | None = None) -> ClearedCache:
    """Delete every cached reply (and the corrupt databases moved aside), or only ``model``'s
    (``provider:model``) entries."""
    cache = _open(cache_dir)
    try:
        copies = [] if model else cache.corrupt_copies()
        n = cache.clear(model)
    finally:
        cache.close()
    return ClearedCache(path=cache.path, entries=n, corrupt_copies=len(copies))


def explain_cache_miss(spec: str, messages: Any, options: Mapping[str, Any] | None = None,
                       cache_dir: Root = None, registry: Registry | None = None) -> dict[str, Any]:
    """Why the request ``messages`` with chat ``options``, sent to ``spec``, misses the cache: the
    fields that differ from the nearest cached entry (nothing is sent). ``registry``: where the spec's
    provider is found (a command's context's; None: the built-in providers)."""
    root = cache_dir if cache_dir is not None else default_cache_dir()
    client = LLMSession(registry=registry).client(spec, cache_dir=root, dry_run=True)
    return client.explain_miss(messages, **dict(options or {}))
