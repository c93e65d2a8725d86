"""Reading the LLM cache as untrusted data: every read of a cached reply goes through :func:`read_entry`.

A cache folder reaches a researcher from colleagues (to reproduce figures without paying again), so
its ``cache.db`` is a claim to check. The harness writes each entry as the JSON text of
``{"key": payload, "reply": {...}, "created": t}`` under a text key (the sha256 of the payload), which
diskcache stores in one of two modes: in the row (``MODE_RAW``, text under 32 KB) or in a file of the
cache folder the row names (``MODE_TEXT``, ``xx/yy/<28 hex>.val``). Any other row is refused as a
corrupt entry and never handed to diskcache, whose pickle mode runs code when read:

- a pickled key (``raw`` 0), another mode (binary, pickle), a value of another type;
- a file name other than diskcache's own pattern, one that resolves (symlinks followed) outside the
  cache folder, or a file that is not regular or holds more than :data:`MAX_ENTRY` bytes;
- text that is not the JSON of an entry (bounded as in :mod:`harness.formats.bounded`), or whose
  stored request does not hash to the row's key.

The database: no view, only diskcache's own triggers, ``Cache`` and ``Settings`` tables, and (where
diskcache opens it: it applies each setting as an attribute or a ``PRAGMA``) only diskcache's own
settings, each of its type (:func:`check_database`). :class:`CacheReader` opens a cache for reading
only: nothing in its folder is created or changed."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from harness.concepts.errors import HarnessError
from harness.formats import bounded as files

DBNAME = "cache.db"
#: diskcache's value modes: the two the harness writes, and the one that unpickles
MODE_RAW, MODE_TEXT, MODE_PICKLE = 1, 3, 4
#: the largest entry read (bytes of JSON text)
MAX_ENTRY = 64 * 2**20
#: the file names diskcache gives large values (``Disk.filename``)
_FILE_NAME = re.compile(r"[0-9a-f]{2}[/\\][0-9a-f]{2}[/\\][0-9a-f]{28}\.val")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_COLUMNS = "raw, mode, typeof(value), filename, value"
_SELECT = f"SELECT {_COLUMNS} FROM Cache WHERE key = ? AND (expire_time IS NULL OR expire_time > ?) LIMIT 2"
#: diskcache's triggers (unchanged since 2016): no other trigger may run SQL when a row is written
_TRIGGERS = MappingProxyType({
    "Settings_count_insert": 'CREATE TRIGGER Settings_count_insert AFTER INSERT ON Cache FOR EACH ROW BEGIN'
                             ' UPDATE Settings SET value = value + 1 WHERE key = "count"; END',
    "Settings_count_delete": 'CREATE TRIGGER Settings_count_delete AFTER DELETE ON Cache FOR EACH ROW BEGIN'
                             ' UPDATE Settings SET value = value - 1 WHERE key = "count"; END',
    "Settings_size_insert": 'CREATE TRIGGER Settings_size_insert AFTER INSERT ON Cache FOR EACH ROW BEGIN'
                            ' UPDATE Settings SET value = value + NEW.size WHERE key = "size"; END',
    "Settings_size_update": 'CREATE TRIGGER Settings_size_update AFTER UPDATE ON Cache FOR EACH ROW BEGIN'
                            ' UPDATE Settings SET value = value + NEW.size - OLD.size WHERE key = "size"; END',
    "Settings_size_delete": 'CREATE TRIGGER Settings_size_delete AFTER DELETE ON Cache FOR EACH ROW BEGIN'
                            ' UPDATE Settings SET value = value - OLD.size WHERE key = "size"; END',
})
_JOURNAL_MODES = frozenset({"wal", "delete", "truncate", "persist", "memory", "off"})
log = logging.getLogger("harness.llm")


def canonical_json(obj: Any) -> str:
    """The one JSON text of a key payload (sorted keys, no spaces, UTF-8 kept)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def key_of(payload: Mapping[str, Any]) -> str:
    """A cache key: the sha256 of the payload's canonical JSON."""
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
#: runs one SQL statement with its arguments and returns all its rows
Query = Callable[..., list[Any]]


def query_of(con: sqlite3.Connection) -> Query:
    """:data:`Query` over an SQLite connection."""
    return lambda sql, args=(): con.execute(sql, args).fetchall()


class CacheEntryError(HarnessError):
    """A row of the cache the harness did not write; ``reason`` says how it differs."""

    def __init__(self, folder: object, key: object, reason: str) -> None:
        self.folder, self.key, self.reason = folder, key, reason
        super().__init__(f"the LLM cache {folder}: the entry {_label(key)} is not one the harness writes ({reason}); "
                         "it is treated as missing and never decoded")


class ForeignCacheError(HarnessError):
    """A ``cache.db`` that is not a cache the harness wrote (a view, another trigger, foreign settings)."""

    def __init__(self, folder: object, reason: str) -> None:
        super().__init__(f"the LLM cache {folder} is not a cache the harness wrote ({reason}); nothing was read from "
                         "it. Use another --cache-dir, or delete the folder if it is yours")


def _label(key: object, n: int = 16) -> str:
    text = key if isinstance(key, str) else repr(key)
    return repr(text[:n] + "…") if len(text) > n else repr(text)


def row_problem(raw: Any, mode: Any, value_type: str, filename: Any) -> str | None:
    """Why a row's shape (``raw``, ``mode``, SQLite's ``typeof(value)``, ``filename``) is not one the
    harness writes; None when it is."""
    if raw != 1:
        return "its key is pickled"
    if mode == MODE_PICKLE:
        return "stored in diskcache's pickle mode, which would run code when read"
    if mode == MODE_RAW:
        if value_type != "text":
            return f"a {value_type} value where JSON text belongs"
        return None if filename is None else "a value in the row that also names a file"
    if mode != MODE_TEXT:
        return f"stored in diskcache's mode {mode!r}, not as JSON text"
    if value_type != "null" or not isinstance(filename, str) or not _FILE_NAME.fullmatch(filename):
        return f"its file name {_label(filename)} is not one diskcache gives"
    return None


def value_path(folder: str | os.PathLike[str], filename: str) -> str | None:
    """The real path of the value file ``filename`` (diskcache's pattern) inside ``folder``; None when it
    resolves outside (a symlinked sub-folder)."""
    if not _FILE_NAME.fullmatch(filename):
        return None
    root = os.path.realpath(folder)
    real = os.path.realpath(os.path.join(root, *re.split(r"[/\\]", filename)))
    return real if os.path.commonpath([root, real]) == root else None


def _read_file(folder: Path, key: str, filename: str) -> bytes | None:
    """A ``MODE_TEXT`` value, read inside ``folder``: a regular file of at most :data:`MAX_ENTRY` bytes,
    opened without following a link (None when missing: a writer replaced it meanwhile)."""
    real = value_path(folder, filename)
    if real is None:
        raise CacheEntryError(folder, key, "its file lies outside the cache folder")
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheEntryError(folder, key, f"its file cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY:
            raise CacheEntryError(folder, key, f"its file is not a regular file of at most {MAX_ENTRY:,} bytes")
        os.set_blocking(fd, True)
        data = fh.read(MAX_ENTRY + 1)
    if len(data) > MAX_ENTRY:
        raise CacheEntryError(folder, key, f"its file holds more than {MAX_ENTRY:,} bytes")
    return data


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _logprobs_problem(lps: Any) -> str | None:
    if lps is None:
        return None
    if not isinstance(lps, list):
        return "reply.logprobs is not a list"
    for t in lps:
        if not (isinstance(t, dict) and _str(t.get("token")) and _number(t.get("logprob"))
                and isinstance(t.get("top", []), list)):
            return "reply.logprobs holds a malformed token"
        if not all(isinstance(p, list) and len(p) == 2 and _str(p[0]) and _number(p[1]) for p in t.get("top", [])):
            return "reply.logprobs holds a malformed alternative"
    return None


def entry_problem(entry: Any) -> str | None:
    """Why a decoded entry is not ``{"key": {...}, "reply": {...}, "created": t}`` as
    :meth:`harness.served.types.Reply.to_dict` writes it; None when it is."""
    if not (isinstance(entry, dict) and isinstance(entry.get("key"), dict) and isinstance(entry.get("reply"), dict)):
        return "not an object with a 'key' and a 'reply' object"
    if "created" in entry and not _number(entry["created"]):
        return "'created' is not a number"
    reply = entry["reply"]
    usage = reply.get("usage", {})
    checks = (("text", _str(reply.get("text"))), ("finish_reason", _opt_str(reply.get("finish_reason"))),
              ("model", _str(reply.get("model", ""))), ("provider", _str(reply.get("provider", ""))),
              ("fallback", _opt_str(reply.get("fallback"))), ("reasoning", _opt_str(reply.get("reasoning"))),
              ("latency_s", reply.get("latency_s") is None or _number(reply.get("latency_s"))),
              ("usage", isinstance(usage, dict) and all(_count(usage.get(k, 0)) for k in (
                  "input_tokens", "output_tokens", "reasoning_tokens"))))
    bad = next((name for name, ok in checks if not ok), None)
    return f"reply.{bad} is not of its type" if bad else _logprobs_problem(reply.get("logprobs"))


def decode_entry(folder: object, key: str, data: str | bytes) -> dict[str, Any]:
    """The entry stored as ``data`` under ``key``: bounded JSON of the entry's shape whose request
    hashes to ``key``, else :class:`CacheEntryError`."""
    try:
        entry = files.loads(data, "the entry")
    except HarnessError as exc:
        raise CacheEntryError(folder, key, str(exc)) from None
    problem = entry_problem(entry)
    if problem is None and key_of(entry["key"]) != key:
        problem = "its stored request does not hash to its key"
    if problem:
        raise CacheEntryError(folder, key, problem)
    return entry


def decode_row(folder: Path, key: Any, row: tuple[Any, ...]) -> dict[str, Any] | None:
    """The entry of one row ``(raw, mode, typeof(value), filename, value)`` stored under ``key``;
    None when its value file is gone (replaced meanwhile)."""
    raw, mode, value_type, filename, value = row
    problem = "its key is not text" if not isinstance(key, str) else row_problem(raw, mode, value_type, filename)
    if problem:
        raise CacheEntryError(folder, key, problem)
    data = _read_file(folder, key, filename) if mode == MODE_TEXT else value
    return None if data is None else decode_entry(folder, key, data)


def read_entry(query: Query, folder: Path, key: str) -> dict[str, Any] | None:
    """The entry stored under ``key`` (None: not cached), read with ``query`` from the cache in
    ``folder``; a row the harness did not write is :class:`CacheEntryError`."""
    rows = query(_SELECT, (key, time.time()))
    if not rows:
        return None
    if len(rows) > 1:
        raise CacheEntryError(folder, key, "the key is stored on more than one row")
    return decode_row(folder, key, tuple(rows[0]))


def iter_entries(query: Query, folder: Path, limit: int | None = None,
                 ) -> Iterator[tuple[Any, dict[str, Any] | CacheEntryError]]:
    """``(key, entry)`` for each row in storage order (``limit`` rows at most), or ``(key, the
    CacheEntryError)`` for a row the harness did not write; read 100 rows at a time, none decoded by diskcache."""
    last, seen = -1, 0
    while limit is None or seen < limit:
        page = query(f"SELECT rowid, key, {_COLUMNS} FROM Cache WHERE rowid > ? ORDER BY rowid LIMIT 100", (last,))
        if not page:
            return
        for rowid, key, *row in page:
            if limit is not None and seen >= limit:
                return
            last, seen = rowid, seen + 1
            try:
                entry = decode_row(folder, key, tuple(row))
            except CacheEntryError as exc:
                yield key, exc
                continue
            if entry is not None:
                yield key, entry


def count_rows(query: Query, folder: Path) -> tuple[int, int]:
    """(rows, rows whose shape the harness refuses: another mode, a pickled key, a file name out of
    pattern or resolving outside ``folder``), without reading any value."""
    total = refused = 0
    grouped = query("SELECT raw, mode, typeof(value), typeof(key), COUNT(*) FROM Cache WHERE filename IS NULL "
                    "GROUP BY 1, 2, 3, 4")
    for raw, mode, value_type, key_type, n in grouped:
        total += n
        refused += n if key_type != "text" or row_problem(raw, mode, value_type, None) else 0
    for raw, mode, value_type, key_type, filename in query(
            "SELECT raw, mode, typeof(value), typeof(key), filename FROM Cache WHERE filename IS NOT NULL"):
        total += 1
        bad = key_type != "text" or row_problem(raw, mode, value_type, filename)
        refused += 1 if bad or value_path(folder, filename) is None else 0
    return total, refused


def check_schema(query: Query, folder: object) -> None:
    """No view, no trigger but diskcache's own, ``Cache`` and ``Settings`` tables (when present)."""
    for kind, name, sql in query("SELECT type, name, sql FROM sqlite_master WHERE type IN ('view', 'trigger') "
                                 "OR name IN ('Cache', 'Settings')"):
        if kind == "view":
            raise ForeignCacheError(folder, f"it defines a view, {name!r}")
        if kind == "trigger" and _TRIGGERS.get(name) != sql:
            raise ForeignCacheError(folder, f"it defines a trigger diskcache does not, {name!r}")
        if name in ("Cache", "Settings") and kind != "table":
            raise ForeignCacheError(folder, f"{name} is a {kind}, not a table")


def check_settings(query: Query, folder: object, defaults: Mapping[str, Any], policies: Mapping[str, Any]) -> None:
    """Every row of ``Settings`` is one of diskcache's settings or counters (``defaults``) with a value
    of its type: diskcache sets each as an attribute of the cache or its Disk, or runs it as a PRAGMA."""
    if not query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'Settings'"):
        return
    for name, value in query("SELECT key, value FROM Settings LIMIT 1000"):
        if name not in defaults:
            raise ForeignCacheError(folder, f"its Settings hold an unknown setting {_label(name)}")
        if name == "eviction_policy":
            ok = value in policies
        elif name == "sqlite_journal_mode":
            ok = isinstance(value, str) and value.lower() in _JOURNAL_MODES
        else:
            ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            raise ForeignCacheError(folder, f"its setting {name} holds {_label(value)}")


def check_database(folder: Path, defaults: Mapping[str, Any], policies: Mapping[str, Any]) -> None:
    """Before diskcache opens ``folder/cache.db`` (which applies its settings): the schema and settings
    checked on a plain connection that changes nothing. A missing file is fine (a new cache); SQLite's
    own errors (a corrupt file) are raised as they are, for the caller's recovery."""
    db = folder / DBNAME
    try:
        st = os.lstat(db)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ForeignCacheError(folder, f"{DBNAME} is not a regular file")
    con = sqlite3.connect(f"file:{quote(str(db.absolute()))}?mode=ro", uri=True, timeout=60)
    try:
        con.execute("PRAGMA trusted_schema = OFF")
        check_schema(query_of(con), folder)
        check_settings(query_of(con), folder, defaults, policies)
    finally:
        con.close()


def _plain_file(path: str) -> bool:
    """A regular file, not a link."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class CacheReader:
    """A cache folder opened for reading only (``harness view``): ``cache.db`` must be a regular file
    inside ``folder``. SQLite opens it read-only and creates nothing: immutable (no lock, no ``-wal`` or
    ``-shm`` file) unless both already exist as plain files (a process is writing the cache: its
    write-ahead log is read too). Thread-safe."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder)
        db = self.path / DBNAME
        real, root = os.path.realpath(db), os.path.realpath(self.path)
        if os.path.commonpath([root, real]) != root:
            raise ForeignCacheError(self.path, f"{DBNAME} resolves outside the folder")
        try:
            st = os.stat(real)
        except OSError as exc:
            raise ForeignCacheError(self.path, f"no readable {DBNAME}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(st.st_mode):
            raise ForeignCacheError(self.path, f"{DBNAME} is not a regular file")
        self._lock = threading.Lock()
        live = _plain_file(real + "-wal") and _plain_file(real + "-shm")
        uri = f"file:{quote(real)}?mode=ro" + ("" if live else "&immutable=1")
        self._con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        try:
            self._con.execute("PRAGMA trusted_schema = OFF")
            self._con.execute("PRAGMA query_only = ON")
            check_schema(query_of(self._con), self.path)
        except (sqlite3.DatabaseError, HarnessError) as exc:
            self._con.close()
            if isinstance(exc, HarnessError):
                raise
            raise ForeignCacheError(self.path, f"SQLite cannot read it: {exc}") from None

    def __repr__(self) -> str:
        return f"CacheReader({str(self.path)!r})"

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry under ``key`` or None; :class:`CacheEntryError` for a row the harness did not write
        or a database SQLite cannot read."""
        with self._lock:
            try:
                return read_entry(query_of(self._con), self.path, key)
            except sqlite3.DatabaseError as exc:
                raise CacheEntryError(self.path, key, f"SQLite cannot read it: {exc}") from None

    def close(self) -> None:
        with self._lock:
            self._con.close()


@functools.cache
def safe_disk() -> type:
    """diskcache's ``Disk`` for the harness's cache: values in and out as text only (``get``/``fetch``
    never unpickle a key or a value), value files read and removed only inside the cache folder."""
    import diskcache

    class SafeDisk(diskcache.Disk):  # type: ignore[misc]
        def __init__(self, directory: str, min_file_size: int = 2**15, pickle_protocol: int = 0, **_: Any) -> None:
            super().__init__(directory, min_file_size=min_file_size, pickle_protocol=pickle_protocol)
            self._root = Path(directory)

        def get(self, key: Any, raw: bool) -> Any:
            if not raw:
                raise CacheEntryError(self._root, key, "its key is pickled")
            return super().get(key, raw)

        def store(self, value: Any, read: bool, key: Any = diskcache.core.UNKNOWN) -> Any:
            if not isinstance(value, str) or read:
                raise TypeError("the LLM cache stores JSON text only")
            return super().store(value, read, key=key)

        def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
            return _fetch(self._root, mode, filename, value, read)

        def remove(self, file_path: Any) -> None:
            _remove(self._root, file_path)

    return SafeDisk


def _fetch(root: Path, mode: int, filename: Any, value: Any, read: bool) -> str:
    """``Disk.fetch`` for text only: a row in another mode is :class:`CacheEntryError`, never unpickled."""
    value_type = "text" if isinstance(value, str) else "null" if value is None else "blob"
    problem = row_problem(1, mode, value_type, filename) or ("read as a file" if read else None)
    if problem:
        raise CacheEntryError(root, "?", problem)
    if mode == MODE_RAW:
        return value
    data = _read_file(root, "?", filename)
    if data is None:
        raise FileNotFoundError(filename)  # diskcache's "deleted meanwhile": a miss
    return data.decode("utf-8")


def _remove(root: Path, file_path: Any) -> None:
    """``Disk.remove`` of a value file inside ``root`` only (a name a row gives may point anywhere),
    then of the two sub-folders diskcache made for it, when empty."""
    real = value_path(root, file_path) if isinstance(file_path, str) else None
    if real is None:
        log.debug("harness: not removing %r: not a value file inside %s", file_path, root)
        return
    try:
        if stat.S_ISREG(os.lstat(real).st_mode):
            os.remove(real)
        for parent in (Path(real).parent, Path(real).parent.parent):
            parent.rmdir()
    except OSError:
        pass
