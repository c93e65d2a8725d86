"""The LLM reply cache: diskcache (SQLite, safe across threads and processes), JSON values only.

Every read goes through :mod:`harness.served.cache_rows`: a row the harness did not write (diskcache's
pickle mode, a pickled key, a file outside the folder, text that is not an entry) is refused as a
corrupt entry, treated as missing with one warning per cache, and never decoded by diskcache; a
database with foreign settings, views or triggers is one message (``docs/untrusted.md``, "The LLM cache").

Key: sha256 of the canonical JSON of the key payload: cache format version, provider, model, base URL,
every generation option (sample index included) and the messages. The API key is never part of it.
The payload is stored beside the reply, so a miss can be explained (:meth:`LLMCache.explain`).
Entries are tagged ``provider:model`` (``harness cache info`` counts by tag, ``clear --model`` evicts).
Nothing is ever evicted automatically.

Location: ``<cache_dir>/llm``, where ``cache_dir`` is the option, else ``HARNESS_CACHE_DIR``, else
``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from harness.runtime.cachedir import default_cache_dir
from harness.runtime.procs import process_gone
from harness.served.cache_rows import (  # noqa: F401 (canonical_json, key_of: public here)
    CacheEntryError,
    canonical_json,
    check_database,
    count_rows,
    iter_entries,
    key_of,
    read_entry,
    safe_disk,
)
from harness.served.types import Reply

CACHE_FORMAT = 1
SUBDIR = "llm"
#: seconds after which another sender's claim on a request counts as abandoned
DEFAULT_CLAIM_TTL = 180.0
T = TypeVar("T")
log = logging.getLogger("harness.llm")


def llm_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<cache_dir or the default root>/llm`` (:func:`harness.runtime.cachedir.default_cache_dir`)."""
    return (Path(cache_dir).expanduser() if cache_dir else default_cache_dir()) / SUBDIR


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


#: how often an operation meets a locked database before the error is raised (about 10 s in all)
LOCKED_TRIES = 20


def _locked(exc: BaseException) -> bool:
    """SQLite's "database is locked" / "busy": another connection holds the file, nothing is wrong with it."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class LLMCache:
    """A directory of cached replies. ``get``/``set`` are thread- and process-safe; each ``set``
    commits at once (a killed run loses no completed call).

    A corrupt database (truncated, garbage, a bad page) is moved aside to
    ``cache.db.corrupt-<time>`` with a one-line warning and a fresh one is started, whatever
    operation met it (``harness cache info`` and ``clear`` included). :meth:`claim` makes threads
    and processes sharing the folder send each request once."""

    def __init__(self, directory: str | os.PathLike[str], claim_ttl: float = DEFAULT_CLAIM_TTL) -> None:
        self.path = Path(directory)
        self.claim_ttl = float(claim_ttl)
        self._dc: Any = None
        self._lock = threading.RLock()
        self._inflight: dict[str, threading.Event] = {}
        self.recovered: list[Path] = []  # corrupt databases moved aside by this object
        self.refused = 0  # rows read and refused (not written by the harness) by this object

    def __repr__(self) -> str:
        return f"LLMCache({str(self.path)!r})"

    @property
    def dc(self) -> Any:
        if self._dc is None:
            with self._lock:
                if self._dc is None:
                    self._dc = self._guard(self._open, reopen=False)
        return self._dc

    def _open(self) -> Any:
        import diskcache
        from diskcache.core import DEFAULT_SETTINGS, EVICTION_POLICY, METADATA

        self.path.mkdir(parents=True, exist_ok=True)
        check_database(self.path, {**DEFAULT_SETTINGS, **METADATA}, EVICTION_POLICY)  # before diskcache applies them
        dc = diskcache.Cache(str(self.path), disk=safe_disk(), eviction_policy="none", tag_index=True, statistics=0,
                             timeout=60)
        dc._sql("SELECT COUNT(*) FROM Cache WHERE rowid = 1").fetchall()  # a truncated file fails here
        return dc

    def _guard(self, fn: Callable[[], T], reopen: bool = True) -> T:
        """Run ``fn``; on a corrupt database move it aside, start a fresh one and run ``fn`` again. A
        database another connection holds locked is not corrupt: ``fn`` is tried again a while (SQLite
        answers "locked" at once when two connections set up the file together), then the error is raised."""
        import sqlite3

        for attempt in range(LOCKED_TRIES):
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    corrupt: BaseException = exc
                    break
                if attempt == LOCKED_TRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
            except sqlite3.DatabaseError as exc:
                corrupt = exc
                break
        with self._lock:
            self._recover(corrupt)
            if reopen:
                self._dc = self._open()
        return fn()

    def _recover(self, exc: BaseException) -> None:
        if self._dc is not None:
            try:
                self._dc.close()
            except Exception:  # a corrupt database may not even close cleanly
                pass
            self._dc = None
        db = self.path / "cache.db"
        aside = db.with_name(f"cache.db.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            part = db.with_name(db.name + suffix)
            if part.exists():
                part.replace(aside.with_name(aside.name + suffix))
        self.recovered.append(aside)
        log.warning("harness: the LLM cache database %s was corrupt (%s); moved it to %s and started a fresh "
                    "cache (replies in the old one will be requested again)", db, exc, aside.name)

    def corrupt_copies(self) -> list[Path]:
        """Corrupt databases moved aside in this folder (by any process)."""
        return sorted(self.path.glob("cache.db.corrupt-*")) if self.path.exists() else []

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of one SQL statement on the cache's own connection (corrupt database: recovered)."""
        return self._guard(lambda: self.dc._sql(sql, args).fetchall())

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry ``{"key": payload, "reply": {...}, "created": t}`` or None (also for a row the
        harness did not write: :meth:`_refuse` warns once)."""
        try:
            return read_entry(self._query, self.path, key)
        except CacheEntryError as exc:
            self._refuse(exc)
            return None

    def _refuse(self, exc: CacheEntryError) -> None:
        """Count a refused row; the first one in this object is one warning line naming the cache."""
        with self._lock:
            self.refused += 1
            first = self.refused == 1
        if first:
            log.warning("harness: %s (a request for it is sent again and replaces it; `harness cache info "
                        "--cache-dir` counts such entries)", exc)
        else:
            log.debug("harness: %s", exc)

    def set(self, key: str, payload: Mapping[str, Any], reply: Reply) -> None:
        entry = {"key": payload, "reply": reply.to_dict(), "created": round(time.time(), 3)}
        tag = f"{payload.get('provider')}:{payload.get('model')}"
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        self._guard(lambda: self.dc.set(key, text, tag=tag))

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return count_rows(self._query, self.path)[0]

    def entries(self, limit: int | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(key, entry)`` for each row the harness wrote (``limit`` rows read at most); the others
        are counted in :attr:`refused`, never decoded."""
        for key, entry in iter_entries(self._query, self.path, limit):
            if isinstance(entry, CacheEntryError):
                self._refuse(entry)
            else:
                yield key, entry

    def counts_by_model(self) -> dict[str, int]:
        import sqlite3

        try:
            rows = self._guard(lambda: self.dc._sql("SELECT tag, COUNT(*) FROM Cache GROUP BY tag").fetchall())
            return {str(tag): int(n) for tag, n in rows}
        except (AttributeError, sqlite3.OperationalError):  # diskcache internals changed: count the slow way
            tags = (f"{e['key'].get('provider')}:{e['key'].get('model')}" for _, e in self.entries())
            return dict(Counter(tags))

    def info(self) -> dict[str, Any]:
        exists = self.path.exists()
        rows, refused = count_rows(self._query, self.path) if exists else (0, 0)
        return {
            "path": str(self.path),
            "entries": rows,
            "refused": refused,
            "size_bytes": int(self._guard(lambda: self.dc.volume())) if exists else 0,
            "by_model": self.counts_by_model() if exists else {},
            "corrupt_copies": [p.name for p in self.corrupt_copies()],
        }

    def clear(self, model: str | None = None) -> int:
        """Remove every entry (and corrupt copies moved aside), or those of one ``provider:model``;
        returns how many entries."""
        if not self.path.exists():
            return 0
        if model:
            return int(self._guard(lambda: self.dc.evict(model)))
        n = int(self._guard(lambda: self.dc.clear()))
        for copy in self.corrupt_copies():
            copy.unlink(missing_ok=True)
        return n

    def explain(self, payload: Mapping[str, Any], limit: int = 100_000) -> dict[str, Any]:
        """Is ``payload`` cached? If not, the nearest entry (fewest differing fields, same provider
        and model preferred) and what differs."""
        key = key_of(payload)
        if key in self:
            return {"key": key, "hit": True, "nearest": None, "differences": []}
        best: tuple[int, str, list[dict[str, Any]]] | None = None
        refused = self.refused
        for k, entry in self.entries(limit):
            diffs = diff_payloads(entry["key"], payload)
            score = len(diffs) + sum(10 for d in diffs if d["field"] in ("provider", "model"))
            if best is None or score < best[0]:
                best = (score, k, diffs)
        out: dict[str, Any] = {"key": key, "hit": False, "nearest": None, "differences": []}
        if best is None:
            out["note"] = "cache is empty"
        else:
            out["nearest"], out["differences"] = best[1], best[2]
        if self.refused > refused:
            out["refused"] = self.refused - refused  # rows the harness did not write, never compared
        return out

    # -- one sender per request ---------------------------------------------------------------
    @contextmanager
    def claim(self, key: str) -> Iterator[dict[str, Any] | None]:
        """Hold the right to send request ``key``. Yields the cached entry when another thread or
        process produced it while we waited (then send nothing), else None (send, ``set``, leave).

        In this process an event per key; across processes a claim file ``claims/<key>`` created
        exclusively, holding pid, host and time. A claim older than ``claim_ttl`` seconds, or one
        whose process is gone (same host), is stale and taken over, so a crashed holder blocks
        nobody for long. A holder whose call fails leaves without an entry: a waiter then sends."""
        while True:
            with self._lock:
                event = self._inflight.get(key)
                mine = event is None
                if mine:
                    event = self._inflight[key] = threading.Event()
            if not mine:
                event.wait(self.claim_ttl)
                entry = self.get(key)
                if entry is not None:
                    yield entry
                    return
                continue
            try:
                entry = self.get(key)
                if entry is not None:  # finished while we looked
                    yield entry
                    return
                if self._claim_file(key):
                    try:
                        yield self.get(key)  # a process may have finished between our get and the claim
                    finally:
                        self._release_file(key)
                    return
                entry = self._wait_for_process(key)
                if entry is not None:
                    yield entry
                    return
            finally:
                with self._lock:
                    self._inflight.pop(key, None)
                event.set()

    def _claim_path(self, key: str) -> Path:
        return self.path / "claims" / key

    def _claim_file(self, key: str) -> bool:
        """Create ``claims/<key>`` atomically with its content (written aside, then hard-linked, which
        fails when the name exists), so no reader ever sees a half-written claim."""
        path = self._claim_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{key}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(f"{os.getpid()} {socket.gethostname()} {time.time():.3f}\n")
        try:
            for _ in range(2):
                try:
                    os.link(tmp, path)
                    return True
                except FileExistsError:
                    if not self._stale(path):
                        return False
                    path.unlink(missing_ok=True)
            return False
        finally:
            tmp.unlink(missing_ok=True)

    def _release_file(self, key: str) -> None:
        self._claim_path(key).unlink(missing_ok=True)

    def _stale(self, path: Path) -> bool:
        try:
            age = time.time() - path.stat().st_mtime
            fields = path.read_text().split()
        except OSError:
            return True  # released meanwhile
        if age > self.claim_ttl:
            return True
        return len(fields) == 3 and fields[0].isdigit() and process_gone(int(fields[0]), fields[1])

    def _wait_for_process(self, key: str) -> dict[str, Any] | None:
        """Another process holds ``key``: wait until its reply is cached (returned) or its claim is
        gone or stale (None: the caller tries to claim it)."""
        path, pause = self._claim_path(key), 0.02
        while True:
            time.sleep(pause)
            pause = min(pause * 1.5, 0.5)
            entry = self.get(key)
            if entry is not None:
                return entry
            if not path.exists() or self._stale(path):
                return None

    def close(self) -> None:
        with self._lock:
            if self._dc is not None:
                self._dc.close()
                self._dc = None
