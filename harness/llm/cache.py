"""The LLM reply cache: diskcache (SQLite, safe across threads and processes), JSON values only.

Key: sha256 of the canonical JSON of the key payload: cache format version, provider, model, base URL,
every generation option (sample index included) and the messages. The API key is never part of it.
The payload is stored beside the reply, so a miss can be explained (:meth:`LLMCache.explain`).
Entries are tagged ``provider:model`` (``harness cache info`` counts by tag, ``clear --model`` evicts).
Nothing is ever evicted automatically.

Location: ``<cache_dir>/llm``, where ``cache_dir`` is the option, else ``HARNESS_CACHE_DIR``, else
``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .types import Reply

CACHE_FORMAT = 1
SUBDIR = "llm"


def default_cache_root() -> Path:
    env = os.environ.get("HARNESS_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "harness"


def llm_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<cache_dir or the default root>/llm``."""
    return (Path(cache_dir).expanduser() if cache_dir else default_cache_root()) / SUBDIR


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def key_of(payload: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def diff_payloads(cached: Mapping[str, Any], requested: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Field-level differences between two key payloads (``options.*`` and ``messages[i]`` split out)."""
    out: list[dict[str, Any]] = []
    for field in sorted(set(cached) | set(requested)):
        a, b = cached.get(field), requested.get(field)
        if field == "options" and isinstance(a, dict) and isinstance(b, dict):
            for opt in sorted(set(a) | set(b)):
                if a.get(opt) != b.get(opt):
                    out.append({"field": f"options.{opt}", "cached": a.get(opt), "requested": b.get(opt)})
        elif field == "messages" and isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                out.append({"field": "messages.length", "cached": len(a), "requested": len(b)})
            for i, (ma, mb) in enumerate(zip(a, b, strict=False)):
                if ma != mb:
                    out.append({"field": f"messages[{i}]", "cached": _clip(ma), "requested": _clip(mb)})
        elif a != b:
            out.append({"field": field, "cached": a, "requested": b})
    return out


def _clip(m: Any, n: int = 120) -> Any:
    if isinstance(m, dict) and isinstance(m.get("content"), str) and len(m["content"]) > n:
        return {**m, "content": m["content"][:n] + "..."}
    return m


class LLMCache:
    """A directory of cached replies. ``get``/``set`` are thread- and process-safe; each ``set``
    commits at once (a killed run loses no completed call)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory)
        self._dc: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LLMCache({str(self.path)!r})"

    @property
    def dc(self) -> Any:
        if self._dc is None:
            with self._lock:
                if self._dc is None:
                    import diskcache

                    self.path.mkdir(parents=True, exist_ok=True)
                    self._dc = diskcache.Cache(
                        str(self.path), eviction_policy="none", tag_index=True, timeout=60
                    )
        return self._dc

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry ``{"key": payload, "reply": {...}, "created": t}`` or None."""
        raw = self.dc.get(key)
        return None if raw is None else json.loads(raw)

    def set(self, key: str, payload: Mapping[str, Any], reply: Reply) -> None:
        entry = {"key": payload, "reply": reply.to_dict(), "created": round(time.time(), 3)}
        tag = f"{payload.get('provider')}:{payload.get('model')}"
        self.dc.set(key, json.dumps(entry, ensure_ascii=False, separators=(",", ":")), tag=tag)

    def __contains__(self, key: str) -> bool:
        return key in self.dc

    def __len__(self) -> int:
        return len(self.dc)

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for key in self.dc.iterkeys():
            raw = self.dc.get(key)
            if raw is not None:
                yield key, json.loads(raw)

    def counts_by_model(self) -> dict[str, int]:
        try:
            rows = self.dc._sql("SELECT tag, COUNT(*) FROM Cache GROUP BY tag").fetchall()
            return {str(tag): int(n) for tag, n in rows}
        except Exception:  # diskcache internals changed: count the slow way
            tags = (f"{e['key'].get('provider')}:{e['key'].get('model')}" for _, e in self.entries())
            return dict(Counter(tags))

    def info(self) -> dict[str, Any]:
        exists = self.path.exists()
        return {
            "path": str(self.path),
            "entries": len(self) if exists else 0,
            "size_bytes": int(self.dc.volume()) if exists else 0,
            "by_model": self.counts_by_model() if exists else {},
        }

    def clear(self, model: str | None = None) -> int:
        """Remove every entry, or those of one ``provider:model``; returns how many."""
        if not self.path.exists():
            return 0
        return int(self.dc.evict(model) if model else self.dc.clear())

    def explain(self, payload: Mapping[str, Any], limit: int = 100_000) -> dict[str, Any]:
        """Is ``payload`` cached? If not, the nearest entry (fewest differing fields, same provider
        and model preferred) and what differs."""
        key = key_of(payload)
        if key in self.dc:
            return {"key": key, "hit": True, "nearest": None, "differences": []}
        best: tuple[int, str, list[dict[str, Any]]] | None = None
        for i, (k, entry) in enumerate(self.entries()):
            if i >= limit:
                break
            diffs = diff_payloads(entry["key"], payload)
            score = len(diffs) + sum(10 for d in diffs if d["field"] in ("provider", "model"))
            if best is None or score < best[0]:
                best = (score, k, diffs)
        if best is None:
            return {"key": key, "hit": False, "nearest": None, "differences": [], "note": "cache is empty"}
        return {"key": key, "hit": False, "nearest": best[1], "differences": best[2]}

    def close(self) -> None:
        if self._dc is not None:
            self._dc.close()
            self._dc = None


_OPEN: dict[Path, LLMCache] = {}
_OPEN_LOCK = threading.Lock()


def open_cache(directory: str | os.PathLike[str]) -> LLMCache:
    """One :class:`LLMCache` per directory per process (clients share the connection)."""
    path = Path(directory).expanduser().resolve()
    with _OPEN_LOCK:
        if path not in _OPEN:
            _OPEN[path] = LLMCache(path)
        return _OPEN[path]
