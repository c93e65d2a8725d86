"""The durable journal of batches: what was (about to be) submitted, where, and what became of it.

One SQLite file beside the reply cache (``<cache>/llm/batches.db``), safe across threads and
processes. The order of writes is what makes a crash harmless:

1. ``reserve``: the request keys and a fresh tag are written (state ``intent``) *before* anything is
   sent, in one transaction that skips keys another live batch already holds;
2. the batch is submitted with the tag attached where the provider keeps metadata;
3. ``mark_submitted`` records the provider's batch id;
4. results go into the reply cache, then ``mark_collected``;
5. (``harness batch clean``) the provider's copies are deleted, then ``mark_removed``.

An intent belongs to its process, named by host, pid and start time, for as long as its lease runs
(``HARNESS_BATCH_LEASE`` seconds, :data:`DEFAULT_LEASE`; the owner renews it while it submits). An
intent whose owner is gone (its lease ran out, or on this host its process no longer runs) is
looked up at the provider by its tag (or its requests) by the next run, and adopted, or abandoned
when no batch was created. A request key is never in two live batches, so nothing is paid twice.

The file is untrusted: at open every batch row is checked (types, states, ids without gaps) with
the request rows of live batches (counts, JSON payloads); a file SQLite cannot read (truncated,
garbage, a folder, unreadable) or an inconsistent one is moved aside to
``batches.db.corrupt-<time>-<pid>`` with one warning line and a fresh journal starts (:attr:`fresh`:
the runner then also looks for its batches at the provider by their requests). Damage met later,
while a run uses the journal, moves it aside the same way and stops the run with
:class:`JournalLost` (one message, exit status 2: the same command run again recovers).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from harness.concepts.errors import HarnessError
from harness.runtime.procs import process_running, process_start, this_process

log = logging.getLogger("harness.llm")
F = TypeVar("F", bound=Callable[..., Any])

FILENAME = "batches.db"
#: states in which a batch holds its requests (no other batch may take them)
LIVE = ("intent", "submitted")
STATES = ("intent", "submitted", "collected", "abandoned", "cancelled")
#: seconds an intent stays its owner's without renewal (``HARNESS_BATCH_LEASE``); the owner renews it
#: every quarter of it while it submits, so only a stopped or frozen owner lets it run out
DEFAULT_LEASE = 1800.0
MAX_LEASE = 7 * 24 * 3600.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tag TEXT UNIQUE NOT NULL,
    endpoint TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    base_url TEXT,
    state TEXT NOT NULL,
    remote_id TEXT,
    created REAL NOT NULL,
    submitted REAL,
    finished REAL,
    n INTEGER NOT NULL,
    nbytes INTEGER,
    attempt INTEGER NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_host TEXT NOT NULL,
    note TEXT,
    removed REAL,
    owner_start TEXT,
    lease_until REAL
);
CREATE TABLE IF NOT EXISTS requests (
    batch INTEGER NOT NULL REFERENCES batches(id),
    key TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (batch, key)
);
CREATE INDEX IF NOT EXISTS requests_by_key ON requests(key);
CREATE INDEX IF NOT EXISTS batches_by_state ON batches(state, endpoint);
"""
#: columns added after the first release, with their types: older journals gain them at open
_ADDED = MappingProxyType({"removed": "REAL", "owner_start": "TEXT", "lease_until": "REAL"})
_COLUMNS = ("id", "tag", "endpoint", "provider", "model", "base_url", "state", "remote_id", "created", "submitted",
            "finished", "n", "nbytes", "attempt", "owner_pid", "owner_host", "note", "removed", "owner_start",
            "lease_until")
#: each column's Python types (None allowed where the column may be NULL)
_TYPES: Mapping[str, tuple[tuple[type, ...], bool]] = MappingProxyType({
    "id": ((int,), False), "tag": ((str,), False), "endpoint": ((str,), False), "provider": ((str,), False),
    "model": ((str,), False), "base_url": ((str,), True), "state": ((str,), False), "remote_id": ((str,), True),
    "created": ((int, float), False), "submitted": ((int, float), True), "finished": ((int, float), True),
    "n": ((int,), False), "nbytes": ((int,), True), "attempt": ((int,), False), "owner_pid": ((int,), False),
    "owner_host": ((str,), False), "note": ((str,), True), "removed": ((int, float), True),
    "owner_start": ((str,), True), "lease_until": ((int, float), True)})


class JournalDamaged(Exception):
    """A row or table of the journal is not what the harness writes (caught inside this module)."""


class JournalLost(HarnessError):
    """The journal was found damaged while a run used it; it was moved aside and the run stops (one
    message, exit status 2): the same command run again starts a fresh journal and finds its batches
    at the provider."""


def lease_from_env(environ: Mapping[str, str] | None = None) -> float:
    """``HARNESS_BATCH_LEASE`` in seconds (:data:`DEFAULT_LEASE` when unset); a bad value is a
    :class:`HarnessError` naming the variable."""
    raw = (os.environ if environ is None else environ).get("HARNESS_BATCH_LEASE", "").strip()
    if not raw:
        return DEFAULT_LEASE
    try:
        return check_lease(float(raw))
    except ValueError as exc:
        raise HarnessError(f"$HARNESS_BATCH_LEASE: {exc} (got {raw!r})") from None


def check_lease(seconds: float) -> float:
    if not (isinstance(seconds, int | float) and math.isfinite(seconds) and 0 < seconds <= MAX_LEASE):
        raise ValueError(f"the batch lease must be seconds in (0, {MAX_LEASE:.0f}]")
    return float(seconds)


@dataclass(frozen=True)
class BatchRecord:
    """One row of the journal (see the module docstring for the states)."""

    id: int
    tag: str
    endpoint: str
    provider: str
    model: str
    base_url: str | None
    state: str
    remote_id: str | None
    created: float
    submitted: float | None
    finished: float | None
    n: int
    nbytes: int | None
    attempt: int
    owner_pid: int
    owner_host: str
    note: str | None
    #: when the provider's copies (input, results) were deleted; None while they are kept
    removed: float | None = None
    #: the owner's start time (:func:`harness.runtime.procs.process_start`), None where unknown
    owner_start: str | None = None
    #: until when (epoch seconds) the intent stays its owner's; None in journals from before leases
    lease_until: float | None = None

    @property
    def lease_expiry(self) -> float:
        return self.lease_until if self.lease_until is not None else self.created + DEFAULT_LEASE

    @property
    def owner_gone(self) -> bool:
        """The process that reserved this batch can no longer be submitting it: its lease ran out, or
        (on this host) its pid no longer runs or now belongs to a later process."""
        if time.time() >= self.lease_expiry:
            return True
        return process_running(self.owner_pid, self.owner_host, self.owner_start) is False

    def as_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in _COLUMNS}


def _record(row: tuple[Any, ...]) -> BatchRecord:
    """A row as a record, after checking each column's type and the state."""
    for name, value in zip(_COLUMNS, row, strict=True):
        types, nullable = _TYPES[name]
        if value is None and nullable:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            raise JournalDamaged(f"batch row {row[0]!r}: column {name} holds {type(value).__name__} {value!r:.40}")
        if isinstance(value, float) and not math.isfinite(value):
            raise JournalDamaged(f"batch row {row[0]!r}: column {name} is {value}")
    state = row[_COLUMNS.index("state")]
    if state not in STATES:
        raise JournalDamaged(f"batch row {row[0]!r}: unknown state {state!r:.40}")
    if state == "submitted" and row[_COLUMNS.index("remote_id")] is None:
        raise JournalDamaged(f"batch row {row[0]!r}: submitted without a batch id")
    return BatchRecord(*row)


def _payload(key: Any, text: Any) -> dict[str, Any]:
    if not isinstance(key, str) or not isinstance(text, str):
        raise JournalDamaged(f"request row {key!r:.70}: key and payload must be text")
    try:
        payload = json.loads(text)
    except ValueError:
        raise JournalDamaged(f"request {key:.70}: its payload is not JSON") from None
    if not isinstance(payload, dict):
        raise JournalDamaged(f"request {key:.70}: its payload is not a JSON object")
    return payload


def _damage(exc: BaseException) -> bool:
    """Whether an error reading the journal means the file is damaged (not merely locked or full)."""
    if isinstance(exc, JournalDamaged):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    if not isinstance(exc, sqlite3.OperationalError):
        return True  # malformed, not a database, corrupt
    text = str(exc).lower()
    return any(s in text for s in ("no such table", "no such column", "unable to open", "malformed", "not a database"))


def _guarded(fn: F) -> F:
    """A public method whose damage (met after the journal was opened) moves the file aside and
    stops the run with :class:`JournalLost`; other SQLite errors (locked, full) are one message."""

    @functools.wraps(fn)
    def wrapper(self: BatchJournal, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except JournalLost:
            raise
        except (sqlite3.DatabaseError, JournalDamaged) as exc:
            if not _damage(exc):
                raise HarnessError(f"the batch journal {self.path} cannot be used: {exc}") from exc
            raise self._lost(exc) from exc

    return wrapper  # type: ignore[return-value]


#: seconds a connection waits for another's lock (SQLite's busy timeout), and for the switch to WAL
CONNECT_TIMEOUT = 60.0


def write_ahead_log(db: sqlite3.Connection, wait: float = CONNECT_TIMEOUT,
                    sleep: Callable[[float], None] = time.sleep) -> None:
    """Put the journal in WAL mode (kept in the file: set once, by its first connection). Switching needs the
    database to itself, and SQLite answers a switch that meets another connection's switch or lock with
    "database is locked" at once (its busy handler does not wait there, to avoid a deadlock), which happened
    when a suite's members opened the journal together; so the switch is tried again, every 50 ms, for up to
    ``wait`` seconds, then the error is raised."""
    deadline = time.monotonic() + wait
    while db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            sleep(0.05)


class BatchJournal:
    """See the module docstring. ``path``: the SQLite file (created with its folder); ``lease``:
    seconds an intent stays its owner's (None: ``HARNESS_BATCH_LEASE`` or :data:`DEFAULT_LEASE`)."""

    def __init__(self, path: str | Path, lease: float | None = None) -> None:
        self.path = Path(path)
        self.lease = lease_from_env() if lease is None else check_lease(lease)
        self._local = threading.local()
        self._lock = threading.RLock()
        self._generation = 0  # raised when the file is moved aside: every thread reconnects
        self._ready = False
        self._dead = ""  # why, once damage was met mid-run: this object then refuses all work
        #: damaged journals this object moved aside
        self.recovered: list[Path] = []
        #: the journal held no batch when opened (new, emptied, or moved aside as damaged): what the
        #: provider holds may be this cache's batches although no row says so
        self.fresh = False

    def __repr__(self) -> str:
        return f"BatchJournal({str(self.path)!r})"

    # -- opening -------------------------------------------------------------------------------
    @property
    def _db(self) -> sqlite3.Connection:
        if self._dead:
            raise JournalLost(self._dead)
        db = getattr(self._local, "db", None)
        if db is not None and self._local.generation == self._generation:
            return db
        if db is not None:
            db.close()
        with self._lock:
            if not self._ready:
                self._open()
            db = self._connect()
            self._local.db, self._local.generation = db, self._generation
        return db

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=CONNECT_TIMEOUT, isolation_level=None)
        try:
            write_ahead_log(db)
            db.execute("PRAGMA synchronous=FULL")  # a committed row survives a power cut
        except BaseException:
            db.close()
            raise
        return db

    def _open(self) -> None:
        """First use: create or migrate the schema and check every row that matters; a damaged file
        is moved aside and a fresh journal started (one warning line)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"cannot create the folder of the batch journal {self.path}: {exc}") from exc
        self._discard_leftovers()
        try:
            self.fresh = self._prepare()
        except (sqlite3.DatabaseError, JournalDamaged) as exc:
            if not _damage(exc):
                raise HarnessError(f"the batch journal {self.path} cannot be used: {exc}") from exc
            self._move_aside(exc, "started a fresh journal")
            try:
                self.fresh = self._prepare() or True
            except sqlite3.DatabaseError as again:
                raise HarnessError(f"cannot start a fresh batch journal at {self.path}: {again}") from again
        self._ready = True

    def _prepare(self) -> bool:
        """Schema, migration and checks on one connection; returns whether the journal is empty."""
        db = self._connect()
        try:
            db.executescript(_SCHEMA)
            _add_columns(db)
            return _check(db)
        finally:
            db.close()

    def _discard_leftovers(self) -> None:
        """A WAL or shared-memory file without its database belongs to a journal that was deleted:
        SQLite must not replay it into a new one."""
        wal = self.path.with_name(self.path.name + "-wal")
        # SQLite creates the database before its log: a log seen first, then no database, is a leftover
        # (an empty one replays nothing and is left alone)
        if wal.is_file() and wal.stat().st_size > 0 and not (self.path.exists() or self.path.is_symlink()):
            self._move_aside(JournalDamaged("the database file is missing but its write-ahead log is left"),
                             "started a fresh journal")

    def _move_aside(self, exc: BaseException, then: str) -> Path:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        with self._lock:
            self._generation += 1
            for suffix in ("", "-wal", "-shm"):
                part = self.path.with_name(self.path.name + suffix)
                if part.exists() or part.is_symlink():
                    try:
                        part.replace(aside.with_name(aside.name + suffix))
                    except OSError as err:
                        raise HarnessError(f"the batch journal {self.path} is damaged ({exc}) and cannot be moved "
                                           f"aside: {err}") from err
            self.recovered.append(aside)
        log.warning("harness: the batch journal %s was damaged (%s); moved it to %s and %s (batches it recorded "
                    "are looked up at the provider before anything is submitted again)", self.path,
                    str(exc)[:200], aside.name, then)
        return aside

    def _lost(self, exc: BaseException) -> JournalLost:
        db = getattr(self._local, "db", None)
        if db is not None:
            try:
                db.close()
            except sqlite3.Error:
                pass
            self._local.db = None
        with self._lock:
            if not self._dead:
                aside = self._move_aside(exc, "stopped this run")
                self._dead = (f"the batch journal {self.path} was damaged while this run used it "
                              f"({str(exc)[:200]}); moved it to {aside.name}. Run the same command again: it finds "
                              f"its batches at the provider, so nothing is submitted twice")
            return JournalLost(self._dead)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``) so check-then-insert is atomic
        across processes."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # -- writing -------------------------------------------------------------------------------
    @_guarded
    def reserve(self, endpoint: Mapping[str, Any], items: Iterable[tuple[str, Mapping[str, Any]]],
                attempt: int = 1) -> tuple[BatchRecord | None, dict[str, int]]:
        """Record the intent to submit ``items`` (``(key, payload)`` pairs) to ``endpoint``
        (``endpoint``, ``provider``, ``model``, ``base_url``). Keys another live batch holds are left
        out and returned as ``{key: batch id}``; the record is None when no key was left."""
        items = dict(items)
        pid, host = this_process()
        start = process_start(pid)
        with self._tx() as db:
            held = self._holders(db, list(items))
            free = [k for k in items if k not in held]
            if not free:
                return None, held
            now = time.time()
            cur = db.execute(
                "INSERT INTO batches (tag, endpoint, provider, model, base_url, state, created, n, attempt, owner_pid, "
                "owner_host, owner_start, lease_until) VALUES (?, ?, ?, ?, ?, 'intent', ?, ?, ?, ?, ?, ?, ?)",
                (uuid.uuid4().hex, endpoint["endpoint"], endpoint["provider"], endpoint["model"],
                 endpoint.get("base_url"), now, len(free), attempt, pid, host, start, now + self.lease))
            bid = int(cur.lastrowid)
            db.executemany("INSERT INTO requests (batch, key, payload) VALUES (?, ?, ?)",
                           ((bid, k, json.dumps(items[k], sort_keys=True, ensure_ascii=False)) for k in free))
        return self.get(bid), held

    @_guarded
    def renew(self, batch: int) -> None:
        """Extend an intent's lease by :attr:`lease` seconds from now (its owner, while submitting)."""
        with self._tx() as db:
            db.execute("UPDATE batches SET lease_until = ? WHERE id = ? AND state = 'intent'",
                       (time.time() + self.lease, batch))

    def mark_submitted(self, batch: int, remote_id: str, nbytes: int | None = None, note: str | None = None) -> None:
        self._set(batch, state="submitted", remote_id=remote_id, submitted=time.time(), nbytes=nbytes, note=note)

    def mark_collected(self, batch: int, note: str) -> None:
        self._set(batch, state="collected", finished=time.time(), note=note)

    def mark_abandoned(self, batch: int, note: str) -> None:
        """The batch was never created at the provider (or cannot be collected): its keys are free."""
        self._set(batch, state="abandoned", finished=time.time(), note=note)

    def mark_removed(self, batch: int, note: str) -> None:
        """The provider's copies of a collected batch were deleted (its replies stay in the cache)."""
        self._set(batch, removed=time.time(), note=note)

    def mark_cancelled(self, batch: int, note: str = "cancelled") -> None:
        self._set(batch, state="cancelled", finished=time.time(), note=note)

    def note(self, batch: int, note: str) -> None:
        self._set(batch, note=note)

    @_guarded
    def _set(self, batch: int, **fields: Any) -> None:
        fields = {k: v for k, v in fields.items() if v is not None}
        with self._tx() as db:
            cur = db.execute(f"UPDATE batches SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?",
                             (*fields.values(), batch))
            if cur.rowcount != 1:
                raise JournalDamaged(f"batch row {batch} is gone")

    # -- reading -------------------------------------------------------------------------------
    @staticmethod
    def _holders(db: sqlite3.Connection, keys: list[str]) -> dict[str, int]:
        held: dict[str, int] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = db.execute(
                f"SELECT r.key, b.id FROM requests r JOIN batches b ON b.id = r.batch WHERE r.key IN "
                f"({', '.join('?' * len(chunk))}) AND b.state IN ({', '.join('?' * len(LIVE))})", (*chunk, *LIVE))
            for k, b in rows:
                if not isinstance(b, int) or isinstance(b, bool):
                    raise JournalDamaged(f"request {k!r:.70}: batch {b!r:.40} is not an id")
                held[k] = b
        return held

    @_guarded
    def holders(self, keys: Iterable[str]) -> dict[str, int]:
        """``{key: batch id}`` for the keys a live batch holds."""
        return self._holders(self._db, list(keys))

    @_guarded
    def get(self, batch: int) -> BatchRecord:
        row = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM batches WHERE id = ?", (batch,)).fetchone()
        if row is None:
            raise JournalDamaged(f"batch row {batch} is gone")
        return _record(row)

    @_guarded
    def batches(self, states: Iterable[str] | None = None, endpoint: str | None = None,
                limit: int | None = None) -> list[BatchRecord]:
        """Batches, newest first, in ``states`` (None: all) and of ``endpoint`` (None: any)."""
        where, args = [], []
        if states is not None:
            states = list(states)
            where.append(f"state IN ({', '.join('?' * len(states))})")
            args += states
        if endpoint is not None:
            where.append("endpoint = ?")
            args.append(endpoint)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM batches"
        sql += f" WHERE {' AND '.join(where)}" if where else ""
        sql += " ORDER BY id DESC" + (f" LIMIT {int(limit)}" if limit else "")
        return [_record(row) for row in self._db.execute(sql, args)]

    @_guarded
    def requests(self, batch: int) -> dict[str, dict[str, Any]]:
        """``{key: payload}`` of one batch."""
        rows = self._db.execute("SELECT key, payload FROM requests WHERE batch = ?", (batch,))
        return {k: _payload(k, p) for k, p in rows}

    @_guarded
    def remote_ids(self, endpoint: str | None = None) -> set[str]:
        """The provider batch ids the journal knows (of ``endpoint``; None: of any endpoint)."""
        sql = "SELECT remote_id FROM batches WHERE remote_id IS NOT NULL"
        rows = self._db.execute(sql + " AND endpoint = ?", (endpoint,)) if endpoint else self._db.execute(sql)
        return {str(r) for (r,) in rows}

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


def _add_columns(db: sqlite3.Connection) -> None:
    """Journals written before a column existed gain it (another process may add it first)."""
    have = {row[1] for row in db.execute("PRAGMA table_info(batches)")}
    for name, kind in _ADDED.items():
        if name in have:
            continue
        try:
            db.execute(f"ALTER TABLE batches ADD COLUMN {name} {kind}")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc):
                raise


def _check(db: sqlite3.Connection) -> bool:
    """Raise :class:`JournalDamaged` unless the journal is as the harness writes it: every column in
    place, every batch row well typed with a known state, ids without gaps (rows are never
    deleted), no request without its batch, none with more than its ``n`` request rows, and each
    live one with exactly its ``n``, their payloads JSON objects. Returns whether the journal holds
    no batch."""
    _check_columns(db)
    sizes: dict[int, int] = {}
    live: list[int] = []
    for row in db.execute(f"SELECT {', '.join(_COLUMNS)} FROM batches"):
        rec = _record(row)
        sizes[rec.id] = rec.n
        if rec.state in LIVE:
            live.append(rec.id)
    count, top = len(sizes), max(sizes, default=0)
    seq = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'batches'").fetchone()
    if count != top or (seq[0] if seq else 0) != top:
        raise JournalDamaged(f"batch rows are missing ({count} rows, ids up to {top}, "
                             f"{seq[0] if seq else 0} ever written)")
    _check_requests(db, sizes, live)
    return count == 0


def _check_columns(db: sqlite3.Connection) -> None:
    """Raise :class:`JournalDamaged` unless both tables have every column."""
    for table, columns in (("batches", _COLUMNS), ("requests", ("batch", "key", "payload"))):
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if missing := [c for c in columns if c not in have]:
            raise JournalDamaged(f"table {table} lacks column(s) {', '.join(missing)}")


def _check_requests(db: sqlite3.Connection, sizes: dict[int, int], live: list[int]) -> None:
    """Raise :class:`JournalDamaged` unless every request row has its batch, no batch holds more than its
    ``n`` rows, and each live batch holds exactly its ``n``, their payloads JSON objects."""
    held = dict(db.execute("SELECT batch, count(*) FROM requests GROUP BY batch"))
    for bid, rows in held.items():
        if bid not in sizes:
            raise JournalDamaged(f"request rows of batch {bid!r:.40}, which has no row")
        if rows > sizes[bid]:
            raise JournalDamaged(f"batch {bid} holds {rows} request rows, more than its {sizes[bid]}")
    for bid in live:  # an ended batch's rows are a record only; a live one's hold its requests
        if held.get(bid, 0) != sizes[bid]:
            raise JournalDamaged(f"live batch {bid} holds {held.get(bid, 0)} request rows, not {sizes[bid]}")
    for bid in live:
        for key, text in db.execute("SELECT key, payload FROM requests WHERE batch = ?", (bid,)):
            _payload(key, text)
