"""On-disk embedding cache: one SQLite file per model identity, ``key -> float32 bytes``.

A key is the sha256 of (role, prompt template, sha256 of the text); the model identity (name,
revision or weight fingerprint, encoder settings) picks the file. Vectors are stored as raw
little-endian float32 bytes with their dimension and rebuilt with ``np.frombuffer``: never pickle.
Lookups and writes go in batches, so 100k texts cost a few hundred SQL statements. SQLite's WAL
mode and a busy timeout make concurrent processes safe; a corrupted row is treated as a miss and
overwritten, a corrupted file is moved aside and started afresh.

Location: ``cache_dir`` if given, else ``$HARNESS_CACHE_DIR/embeddings``, else
``$XDG_CACHE_HOME/harness/embeddings`` (``~/.cache/harness/embeddings``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.runtime.cachedir import default_cache_dir as root

log = logging.getLogger("harness.retrievers.dense.cache")

FORMAT_VERSION = "2"
_CHUNK = 900  # SQL variables per statement (below SQLite's historical limit of 999)
_DTYPE = np.dtype("<f4")


def default_cache_dir() -> Path:
    """``embeddings/`` under the default cache root (:func:`harness.runtime.cachedir.default_cache_dir`:
    ``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``)."""
    return root() / "embeddings"


def text_key(role: str, template: str, text: str) -> bytes:
    """32-byte key of one text as encoded in ``role`` with ``template``."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    h = hashlib.sha256()
    for part in (FORMAT_VERSION, role, template):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    h.update(digest)
    return h.digest()


def _rowid(key: bytes) -> int:
    return int.from_bytes(key[:8], "big", signed=True)


def identity_hash(identity: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


class EmbeddingCache:
    """Embeddings of one model identity. Counters: ``hits``, ``misses``, ``corrupt``, ``written``."""

    def __init__(self, identity: Mapping[str, Any], cache_dir: str | os.PathLike[str] | None = None):
        self.identity = dict(identity)
        self.directory = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        name = str(self.identity.get("model") or "model")
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name.rstrip("/\\").split("/")[-1])[:60] or "model"
        self.path = self.directory / f"{slug}-{identity_hash(self.identity)[:24]}.sqlite"
        self.hits = self.misses = self.corrupt = self.written = 0
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._lock = threading.Lock()
        self._disabled = False

    # -- connection --------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            conn = self._open()
        except sqlite3.OperationalError:  # locked, unreadable: not a reason to discard the file
            raise
        except sqlite3.DatabaseError as exc:  # not a database / malformed header
            self._move_aside(exc)
            conn = self._open()
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            try:
                conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError:  # e.g. a file system without shared memory
                pass
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            # rows append in rowid order (fast writes); ``h``, the key's first 8 bytes, is the indexed
            # lookup column and ``key`` (all 32 bytes) is checked on read
            conn.execute(
                "CREATE TABLE IF NOT EXISTS emb (h INTEGER NOT NULL, key BLOB NOT NULL, "
                "dim INTEGER NOT NULL, vec BLOB NOT NULL)"
            )
            conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS emb_h ON emb (h)")
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('identity', ?), ('format', ?)",
                (json.dumps(self.identity, sort_keys=True, default=str), FORMAT_VERSION),
            )
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _move_aside(self, exc: BaseException) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        bad = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}-{os.getpid()}")
        log.warning("embedding cache %s is unreadable (%s); moved to %s and starting afresh",
                    self.path, exc, bad)
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                try:
                    src.replace(Path(str(bad) + suffix))
                except OSError:
                    src.unlink(missing_ok=True)

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __bool__(self) -> bool:  # a cache object is truthy even when empty
        return True

    def __len__(self) -> int:
        with self._lock:
            return int(self._connect().execute("SELECT COUNT(*) FROM emb").fetchone()[0])

    # -- batch access ------------------------------------------------------------------------
    def _select(self, keys: Sequence[bytes]) -> dict[bytes, tuple[int, bytes]]:
        conn = self._connect()
        found: dict[bytes, tuple[int, bytes]] = {}
        ids = sorted(_rowid(k) for k in keys)  # index order: neighbouring pages
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            sql = f"SELECT key, dim, vec FROM emb WHERE h IN ({','.join('?' * len(chunk))})"
            for key, dim, vec in conn.execute(sql, chunk):
                found[key] = (dim, vec)  # an 8-byte collision leaves the wanted key absent
        return found

    def lookup(self, keys: Sequence[bytes], dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, found)``: a float32 ``[len(keys), dim]`` matrix (zero rows where missing) and a
        boolean mask. Rows of the wrong size or with non-finite values count as ``corrupt`` misses.
        ``dim`` is the expected dimension; when None, the most common stored one."""
        keys = list(keys)
        rows: dict[bytes, tuple[int, bytes]] = {}
        with self._lock:
            if not self._disabled:
                try:
                    rows = self._select(list(dict.fromkeys(keys)))
                except sqlite3.OperationalError as exc:  # locked too long, unreadable folder, ...
                    self._disable(exc)
                except sqlite3.DatabaseError as exc:  # corrupted file
                    self._move_aside(exc)
                except OSError as exc:
                    self._disable(exc)
        if dim is None and rows:
            dims = np.array([d for d, v in rows.values() if d > 0 and len(v) == 4 * d])
            dim = int(np.bincount(dims).argmax()) if len(dims) else None
        found = np.zeros(len(keys), dtype=bool)
        if not dim:
            self.misses += len(keys)
            self.corrupt += sum(1 for k in keys if k in rows)
            return np.zeros((len(keys), 0), dtype=np.float32), found
        out = np.zeros((len(keys), dim), dtype=_DTYPE)
        raw = out.view(np.uint8)  # rows of 4 * dim bytes, filled in place (no intermediate copies)
        for i, key in enumerate(keys):
            row = rows.get(key)
            if row is None:
                continue
            if row[0] != dim or len(row[1]) != 4 * dim:
                self.corrupt += 1
                continue
            raw[i] = np.frombuffer(row[1], dtype=np.uint8)
            found[i] = True
        bad = found & ~np.isfinite(out).all(axis=1)
        if bad.any():
            self.corrupt += int(bad.sum())
            out[bad] = 0
            found &= ~bad
        self.hits += int(found.sum())
        self.misses += int(len(keys) - found.sum())
        return out.astype(np.float32, copy=False), found

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store (or overwrite) one vector per key, in one transaction."""
        vectors = np.ascontiguousarray(vectors, dtype=_DTYPE)
        if vectors.ndim != 2 or len(vectors) != len(keys):
            raise ValueError(f"expected {len(keys)} vectors, got an array of shape {vectors.shape}")
        dim = int(vectors.shape[1])
        rows = [(_rowid(k), bytes(k), dim, v.tobytes()) for k, v in zip(keys, vectors, strict=True)]
        with self._lock:
            if self._disabled:
                return
            try:
                try:
                    self._write(rows)
                except sqlite3.OperationalError:
                    raise
                except sqlite3.DatabaseError as exc:  # corrupted file: start afresh, once
                    self._move_aside(exc)
                    self._write(rows)
            except (sqlite3.Error, OSError) as exc:
                self._disable(exc)
                return
        self.written += len(rows)

    def _write(self, rows: list[tuple[int, bytes, int, bytes]]) -> None:
        conn = self._connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO emb (h, key, dim, vec) VALUES (?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise

    def _disable(self, exc: BaseException) -> None:
        """An error the cache cannot recover from: warn once and go on without it."""
        log.warning("embedding cache %s disabled for this run: %s: %s", self.path, type(exc).__name__, exc)
        self._disabled = True

    def stats(self) -> dict[str, Any]:
        return {"path": str(self.path), "hits": self.hits, "misses": self.misses,
                "corrupt": self.corrupt, "written": self.written, "disabled": self._disabled}


__all__ = ["EmbeddingCache", "default_cache_dir", "identity_hash", "text_key"]
